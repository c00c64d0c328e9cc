"""The GPU kernels (sm_80 and sm_90a PTX) run in flashc's PTX simulator on
numpy arrays, against the float64 reference; and bf16 through ml_dtypes on
the CPU when that package is present."""

import os

import numpy as np
import pytest

import flashc

from conftest import check, make_inputs, offset_copy

# Small sizes: the simulator runs every thread of every warp.
SHAPES = [
    (1, 2, 2, 20, 40, 64),   # prefill, Nk > Nq
    (1, 4, 2, 33, 17, 64),   # GQA, Nk < Nq: causal rows with no key
    (2, 4, 1, 1, 70, 64),    # decode (split-KV kernel and combine), MQA
    (1, 2, 2, 5, 130, 128),  # decode, D = 128
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_simulated_gpu_kernel(rng, seed, shape, causal):
    b, hq, hkv, nq, nk, d = shape
    q, k, v = make_inputs(rng, b, hq, hkv, nq, nk, d, dtype=np.float16)
    out, lse = flashc.attention(q, k, v, causal=causal, return_lse=True,
                                target="sm_80-sim")
    check(out, lse, q, k, v, causal, seed)


def test_sm90a_kernel_and_its_ptx(rng, seed):
    spec = flashc.AttentionSpec(heads=2, seq_q=32, seq_kv=32, head_dim=64,
                                dtype="f16")
    kernel = flashc.compile(spec, "sm_90a-sim")
    assert ".target sm_90a" in kernel.ptx
    # sm_90a multiplies by warpgroups from shared memory, and copies the
    # blocks by TMA from tensor maps the runtime builds at launch.
    assert "wgmma.mma_async.sync.aligned.m64n" in kernel.ptx
    assert "mma.sync.aligned" not in kernel.ptx
    assert "cp.async.bulk.tensor.4d" in kernel.ptx
    assert "cp.async.cg" not in kernel.ptx
    # A producer warp copies for two consumer warpgroups.
    assert "setmaxnreg.inc.sync.aligned.u32" in kernel.ptx
    assert kernel.metadata["threads_per_block"] == 384
    meta = kernel.metadata
    assert meta["shared_bytes"] > 0 and meta["threads_per_block"] > 0
    assert "B" in meta["grid"]
    assert meta["registers"] == -1  # not assembled
    q, k, v = make_inputs(rng, 1, 2, 2, 24, 40, 64, dtype=np.float16)
    check(kernel(q, k, v), None, q, k, v, False, seed)


def test_sm90a_options_switch_tma_wgmma_specialisation_and_turns_off(rng, seed):
    spec = flashc.AttentionSpec(heads=2, seq_q=32, seq_kv=32, head_dim=64,
                                dtype="f16")
    q, k, v = make_inputs(rng, 1, 2, 2, 24, 40, 64, dtype=np.float16)
    cp_async = flashc.compile(spec, "sm_90a-sim", tma=False)
    assert "cp.async.bulk.tensor" not in cp_async.ptx
    assert "cp.async.cg" in cp_async.ptx
    assert "wgmma.mma_async" in cp_async.ptx
    check(cp_async(q, k, v), None, q, k, v, False, seed)
    warp_mma = flashc.compile(spec, "sm_90a-sim", warpgroup_mma=False)
    assert "wgmma.mma_async" not in warp_mma.ptx
    assert "mma.sync.aligned" in warp_mma.ptx
    check(warp_mma(q, k, v), None, q, k, v, False, seed)
    unspecialised = flashc.compile(spec, "sm_90a-sim", warp_specialize=False)
    assert "cp.async.bulk.tensor" in unspecialised.ptx
    assert "setmaxnreg" not in unspecialised.ptx
    assert unspecialised.metadata["threads_per_block"] == 256
    check(unspecialised(q, k, v), None, q, k, v, False, seed)
    # The consumer warpgroups take turns at the tensor cores unless told
    # not to.
    specialised = flashc.compile(spec, "sm_90a-sim")
    assert "bar.arrive" in specialised.ptx
    no_turns = flashc.compile(spec, "sm_90a-sim", pingpong=False)
    assert "bar.arrive" not in no_turns.ptx
    assert "setmaxnreg" in no_turns.ptx
    check(no_turns(q, k, v), None, q, k, v, False, seed)


def test_bf16_numpy_arrays(rng, seed):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    q, k, v = make_inputs(rng, 1, 4, 2, 9, 33, 64, dtype=ml_dtypes.bfloat16)
    for target in ("cpu", "sm_80-sim"):
        out = flashc.attention(q, k, v, causal=True, target=target)
        check(out, None, q, k, v, True, seed)


def test_assembled_metadata():
    # FLASHC_PTXAS (set by ctest): the ptxas of the build's default toolkit,
    # empty when the toolkit is missing or hidden.
    ptxas = os.environ.get("FLASHC_PTXAS", "/usr/local/cuda/bin/ptxas")
    if not ptxas or not os.path.exists(ptxas):
        pytest.skip("no ptxas")
    spec = flashc.AttentionSpec(heads=8, kv_heads=2, seq_q=1, seq_kv=4096,
                                head_dim=128, dtype="bf16")
    meta = flashc.compile(spec, "sm_80", assemble=True).metadata
    # The decode kernel and its combine, within sm_80's limits, no spills.
    assert 0 < meta["registers"] <= 255 and meta["spill_bytes"] == 0
    assert 0 < meta["combine_registers"] <= 255
    assert meta["combine_entry"] is not None and meta["cubin_bytes"] > 0
    with pytest.raises(flashc.FlashcError, match="for GPU targets"):
        flashc.compile(spec, "cpu", assemble=True)


def test_cache_directory_is_a_bundle(rng, seed, tmp_path):
    cache = tmp_path / "kernels"
    # A configuration no other test compiles (the compiler's cache is the
    # process's).
    spec = flashc.AttentionSpec(heads=6, kv_heads=3, seq_q=24, seq_kv=40,
                                head_dim=80, dtype="f16", causal=True)
    flashc.set_cache_directory(cache)
    try:
        flashc.compile(spec, "sm_80-sim")
    finally:
        flashc.set_cache_directory(None)
    assert (cache / "manifest.json").is_file()
    bundle = flashc.load_bundle(cache)
    assert len(bundle.variants) == 1
    # The runtime runs the cached kernel without the compiler.
    q, k, v = make_inputs(rng, 1, 6, 3, 24, 40, 80, dtype=np.float16)
    check(bundle.attention(q, k, v, causal=True, simulate=True), None, q, k,
          v, True, seed)
    with pytest.raises(flashc.FlashcTypeError, match="path must be a string"):
        flashc.set_cache_directory(42)


@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_tma_kernel_on_strided_views(rng, seed, causal):
    # [B, N, H, D] views of a fused [B, N, 3, H, D] projection (rows 3 H D
    # apart, heads D apart, no batch folding): the TMA kernel's tensor maps
    # take the call's strides. GQA 2, ragged lengths.
    b, n, h, d = 2, 70, 4, 64
    qkv = rng.standard_normal((b, n, 3, h, d)).astype(np.float16)
    q = qkv[:, :, 0]
    k = qkv[:, :, 1, :2]
    v = qkv[:, :, 2, :2]
    out, lse = flashc.attention(q, k, v, causal=causal, return_lse=True,
                                layout="bnhd", target="sm_90a-sim")
    to_bhnd = lambda x: np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    check(to_bhnd(out), lse, to_bhnd(q), to_bhnd(k), to_bhnd(v), causal, seed)


@pytest.mark.parametrize("offset", [1, 2])
def test_unaligned_views_run_on_a_fallback_kernel(rng, seed, offset):
    # Tensors starting 1 or 2 elements into their buffers (2- and 4-byte
    # aligned): TMA's tensor maps and 16-byte copies cannot read them, so
    # the kernel runs its variant built for that alignment, and says so in
    # its metadata.
    b, h, n, d = 1, 2, 40, 64
    spec = flashc.AttentionSpec(heads=h, seq_q=n, seq_kv=n, head_dim=d,
                                dtype="f16")
    kernel = flashc.compile(spec, "sm_90a-sim")
    assert kernel.metadata["alignment"] == 16
    # Aligned tensors run the kernel's own variant: no fallback.
    before = kernel.metadata["fallbacks"]
    q, k, v = make_inputs(rng, b, h, h, n, n, d, dtype=np.float16)
    check(kernel(q, k, v), None, q, k, v, False, seed)
    assert kernel.metadata["fallbacks"] == before

    q, k, v = (offset_copy(x, offset) for x in make_inputs(
        rng, b, h, h, n, n, d, dtype=np.float16))
    out = offset_copy(np.zeros((b, h, n, d), dtype=np.float16), offset)
    kernel(q, k, v, out=out)
    check(out, None, np.ascontiguousarray(q), np.ascontiguousarray(k),
          np.ascontiguousarray(v), False, seed)
    fallbacks = {f["alignment"]: f for f in kernel.metadata["fallbacks"]}
    assert 2 * offset in fallbacks, fallbacks
    fallback = fallbacks[2 * offset]
    assert fallback["variant"] == kernel.metadata["variant"] + f"-a{2 * offset}"
    assert f"{2 * offset}-byte aligned" in fallback["reason"]
