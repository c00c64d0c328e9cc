"""flashc.attention and flashc.compile on the CPU, against the float64
reference on fresh random inputs."""

import threading

import numpy as np
import pytest

import flashc

from conftest import check, make_inputs

# (B, Hq, Hkv, Nq, Nk, D, Dv): GQA, MQA, MHA, odd lengths, Nq = 1, Nk > Nq
# and Nk < Nq (under a causal mask the first rows then see no key), Dv != D.
SHAPES = [
    (2, 8, 2, 37, 53, 64, None),
    (1, 4, 1, 1, 300, 64, None),
    (1, 2, 2, 50, 20, 32, None),
    (3, 3, 3, 17, 17, 59, None),
    (1, 4, 2, 1, 1, 64, None),
    (1, 2, 1, 9, 130, 64, 32),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(rng, seed, shape, causal, dtype):
    b, hq, hkv, nq, nk, d, dv = shape
    q, k, v = make_inputs(rng, b, hq, hkv, nq, nk, d, dv, dtype)
    out, lse = flashc.attention(q, k, v, causal=causal, return_lse=True)
    assert out.shape == (b, hq, nq, dv or d) and out.dtype == q.dtype
    assert lse.shape == (b, hq, nq) and lse.dtype == np.float32
    check(out, lse, q, k, v, causal, seed)


def test_scale_and_strided_inputs(rng, seed):
    q, k, v = make_inputs(rng, 2, 4, 2, 40, 64, 64)
    # Every other query row and key: strided views, no copies.
    qs, ks, vs = q[:, :, ::2], k[:, :, ::2], v[:, :, ::2]
    out = flashc.attention(qs, ks, vs, scale=0.3)
    check(out, None, qs, ks, vs, False, seed, scale=0.3)


def test_other_lengths_and_head_counts_compile_nothing(rng, seed):
    q, k, v = make_inputs(rng, 1, 4, 2, 1, 100, 64)
    flashc.attention(q, k, v)
    before = flashc.cache_size()
    for nk in (101, 102, 250, 1000):
        q, k, v = make_inputs(rng, 2, 4, 2, 1, nk, 64)
        out = flashc.attention(q, k, v)
        check(out, None, q, k, v, False, seed)
    q, k, v = make_inputs(rng, 1, 4, 2, 70, 90, 64)
    flashc.attention(q, k, v)
    # Other head counts of the same group size (2 query heads per KV head).
    for hkv in (1, 3, 8):
        q, k, v = make_inputs(rng, 2, 2 * hkv, hkv, 5, 80, 64)
        out = flashc.attention(q, k, v)
        check(out, None, q, k, v, False, seed)
    assert flashc.cache_size() == before


def test_concurrent_calls_from_threads(seed):
    shapes = [(1, 4, 2, 33, 65), (2, 4, 2, 1, 200), (1, 4, 2, 64, 64),
              (1, 4, 2, 5, 7)]
    # Head dims no other test uses: the first calls compile concurrently.
    dims = [24, 40, 24, 40, 72, 72]
    failures = []

    def work(index):
        local = np.random.default_rng(seed + index)
        for _ in range(3):
            b, hq, hkv, nq, nk = shapes[index % len(shapes)]
            q, k, v = make_inputs(local, b, hq, hkv, nq, nk, dims[index])
            try:
                out = flashc.attention(q, k, v, causal=True)
                check(out, None, q, k, v, True, seed + index)
            except Exception as e:  # pylint: disable=broad-except
                failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_explicit_compile_and_introspection(rng, seed):
    spec = flashc.AttentionSpec(heads=4, kv_heads=2, seq_q=64, seq_kv=64,
                                head_dim=64, causal=True)
    kernel = flashc.compile(spec, "cpu", block_kv=64)
    assert kernel.ptx is None
    meta = kernel.metadata
    assert meta["target"] == "cpu" and meta["block_kv"] == 64
    assert "tiled" in meta["stages"]
    assert "flash.attention_step" in kernel.ir("tiled")
    assert "llvm.func" in kernel.ir(meta["stages"][-1])
    with pytest.raises(flashc.FlashcError, match="no IR for stage 'nope'"):
        kernel.ir("nope")
    q, k, v = make_inputs(rng, 2, 4, 2, 31, 77, 64)
    out = kernel(q, k, v)
    check(out, None, q, k, v, True, seed)


def test_cost_report():
    spec = flashc.AttentionSpec(heads=8, seq_q=4096, seq_kv=4096,
                                head_dim=64, dtype="f16")
    report = flashc.cost(spec, target="sm_80")
    assert report["target"] == "sm_80"
    hbm = report["hbmElements"]
    assert hbm["fa2"]["total"] < hbm["standard"]["total"]
    small = flashc.cost(spec, target="sm_80", sram_bytes=32768)
    assert small["sramBytes"] == 32768
    assert small["hbmElements"]["model"] > hbm["model"]
    with pytest.raises(flashc.FlashcError, match="unknown target"):
        flashc.cost(spec, target="sm_99")


class DLPackOnly:
    """A host tensor seen only through the DLPack protocol."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):  # pylint: disable=unused-argument
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class CopyingProducer:
    """Exports a fresh copy through DLPack: the data lives only as long as
    the capsule."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):  # pylint: disable=unused-argument
        return self._array.copy().__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_capsules_outlive_the_call(rng, seed):
    q, k, v = make_inputs(rng, 1, 8, 2, 200, 256, 64)
    out = flashc.attention(CopyingProducer(q), CopyingProducer(k),
                           CopyingProducer(v))
    check(out, None, q, k, v, False, seed)


def test_lse_buffer_implies_return_lse(rng, seed):
    q, k, v = make_inputs(rng, 1, 4, 2, 9, 30, 64)
    lse = np.empty((1, 4, 9), np.float32)
    out, got = flashc.attention(q, k, v, causal=True, lse=lse)
    assert got is lse
    check(out, lse, q, k, v, True, seed)


def test_fixed_split_counts(rng, seed):
    spec = flashc.AttentionSpec(heads=4, kv_heads=1, seq_q=1, seq_kv=4096,
                                head_dim=64, with_lse=True)
    kernel = flashc.compile(spec, "cpu")
    q, k, v = make_inputs(rng, 1, 4, 1, 1, 3000, 64)
    for splits in (1, 2, 7):
        out, lse = kernel(q, k, v, splits=splits, return_lse=True)
        check(out, lse, q, k, v, False, seed)


def test_dlpack_host_tensors(rng, seed):
    q, k, v = make_inputs(rng, 1, 4, 2, 30, 50, 64)
    # A strided view goes through DLPack's strides.
    q = q[:, :, ::2]
    out = flashc.attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v),
                           causal=True)
    assert isinstance(out, np.ndarray)
    check(out, None, q, k, v, True, seed)


def test_compile_options_come_from_the_pipeline_table(rng, seed):
    # The compiler's one table of pipeline options: the names, kinds and
    # values Python takes are the ones flashc-opt and the driver take.
    options = {o["name"]: o for o in flashc.compile_options()}
    assert {"loop_order", "block_q", "block_kv", "sram_bytes", "splits",
            "num_threads", "vector_lanes", "bf16_dot", "scalef",
            "kt_reuse"} <= set(options)
    assert "target" not in options and "toolkit" not in options
    assert options["loop_order"]["values"] == ["fa2", "algorithm1"]
    assert options["kt_reuse"]["kind"] == "bool"
    assert options["block_kv"]["kind"] == "int"
    # Options beyond the schedule's sizes reach the kernel, which still
    # matches the reference.
    spec = flashc.AttentionSpec(heads=2, seq_q=40, seq_kv=70, head_dim=32)
    kernel = flashc.compile(spec, "cpu", scalef="off", kt_reuse=False,
                            num_threads=1, block_kv=32)
    config = kernel.metadata["config"]
    assert "scalef=off" in config and "kt-reuse=0" in config
    assert "num-threads=1" in config and "block-kv=32" in config
    q, k, v = make_inputs(rng, 1, 2, 2, 40, 70, 32)
    out = kernel(q, k, v)
    check(out, None, q, k, v, False, seed)


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_mask_by_name(rng, seed, mask):
    """The mask by name: the spec is flashc's problem description, whose
    mask is "none" or "causal"; causal=True is mask="causal"."""
    assert flashc._runtime.mask_kinds() == ["none", "causal"]  # pylint: disable=protected-access
    spec = flashc.AttentionSpec(heads=4, kv_heads=2, mask=mask)
    assert spec.mask == mask and spec.causal == (mask == "causal")
    assert isinstance(spec, flashc._runtime.AttentionProblem)  # pylint: disable=protected-access
    assert f"mask={mask!r}" in repr(spec)
    spec.causal = mask != "causal"
    assert spec.mask == ("none" if mask == "causal" else "causal")
    q, k, v = make_inputs(rng, 1, 4, 2, 23, 41, 64)
    out, lse = flashc.attention(q, k, v, mask=mask, return_lse=True)
    check(out, lse, q, k, v, mask == "causal", seed)
    # The same kernel as causal=True / False: nothing new is compiled.
    before = flashc.cache_size()
    flashc.attention(q, k, v, causal=mask == "causal")
    assert flashc.cache_size() == before


def test_mask_errors():
    with pytest.raises(flashc.FlashcError,
                       match="unknown mask 'sliding'; expected one of "
                       "'none', 'causal'"):
        flashc.AttentionSpec(mask="sliding")
    with pytest.raises(flashc.FlashcError,
                       match="causal=True contradicts mask='none'"):
        flashc.AttentionSpec(causal=True, mask="none")
    with pytest.raises(flashc.FlashcTypeError,
                       match="mask must be a string, got bool"):
        flashc.AttentionSpec(mask=True)
    q = np.zeros((1, 1, 4, 64), np.float32)
    with pytest.raises(flashc.FlashcError, match="unknown mask 'window'"):
        flashc.attention(q, q, q, mask="window")
