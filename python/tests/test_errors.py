"""Bad input raises flashc.FlashcError (a ValueError) with a message that
names the problem; nothing crashes."""

import numpy as np
import pytest

import flashc

from conftest import make_inputs


def test_error_is_a_value_error():
    assert issubclass(flashc.FlashcError, ValueError)


@pytest.fixture
def qkv(rng):
    return make_inputs(rng, 1, 4, 2, 8, 16, 32)


def test_wrong_rank(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match=r"q has rank 3"):
        flashc.attention(q[0], k, v)


def test_head_dim_mismatch(rng):
    q, _, _ = make_inputs(rng, 1, 4, 2, 8, 16, 32)
    _, k, v = make_inputs(rng, 1, 4, 2, 8, 16, 64)
    with pytest.raises(flashc.FlashcError, match="head dims differ"):
        flashc.attention(q, k, v)


def test_heads_not_a_multiple(rng):
    q, k, v = make_inputs(rng, 1, 5, 2, 8, 16, 32)
    with pytest.raises(flashc.FlashcError, match="not a multiple"):
        flashc.attention(q, k, v)


def test_key_value_length_mismatch(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="k has 16 keys but v has 15"):
        flashc.attention(q, k, v[:, :, :15])


def test_batch_mismatch(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="batch sizes differ"):
        flashc.attention(np.concatenate([q, q]), k, v)


def test_non_contiguous_head_dim(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="not contiguous in its last"):
        flashc.attention(q[..., ::2], k[..., ::2], v)


def test_mixed_dtypes(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="different dtypes"):
        flashc.attention(q.astype(np.float16), k, v)


def test_unsupported_dtype(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="unsupported dtype float64"):
        flashc.attention(*(x.astype(np.float64) for x in (q, k, v)))


def test_not_an_array(qkv):
    _, k, v = qkv
    with pytest.raises(flashc.FlashcTypeError,
                       match="q must be a numpy array.*, got list"):
        flashc.attention([[1.0]], k, v)


def test_mixed_devices(qkv):
    q, k, v = qkv

    class FakeCuda:  # CUDA array interface: device memory
        __cuda_array_interface__ = {"shape": k.shape, "typestr": "<f4",
                                    "data": (4096, False), "version": 3}

    with pytest.raises(flashc.FlashcError, match="different devices"):
        flashc.attention(q, FakeCuda(), v)


def test_cuda_tensors_without_a_device(qkv):
    def fake(a):
        class FakeCuda:
            __cuda_array_interface__ = {"shape": a.shape, "typestr": "<f4",
                                        "data": (4096, False), "version": 3}
        return FakeCuda()

    if flashc._runtime.cuda_status() == "":  # pylint: disable=protected-access
        pytest.skip("a CUDA device is present")
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="no CUDA driver"):
        flashc.attention(fake(q), fake(k), fake(v))


def test_bad_targets(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="needs CUDA tensors"):
        flashc.attention(q, k, v, target="sm_80")
    with pytest.raises(flashc.FlashcError, match="unknown target 'tpu'"):
        flashc.attention(q, k, v, target="tpu")


def test_lse_from_a_kernel_without_it(rng):
    spec = flashc.AttentionSpec(heads=2, seq_q=8, seq_kv=8, head_dim=32)
    kernel = flashc.compile(spec, "cpu")
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 32)
    with pytest.raises(flashc.FlashcError, match="compiled without the log-sum-exp"):
        kernel(q, k, v, return_lse=True)


def test_bad_compile_options():
    spec = flashc.AttentionSpec(heads=2, seq_q=16, seq_kv=16, head_dim=32)
    with pytest.raises(flashc.FlashcError, match="unknown compile option"):
        flashc.compile(spec, "cpu", tile=3)
    with pytest.raises(flashc.FlashcError, match="vector-lanes must be"):
        flashc.compile(spec, "cpu", vector_lanes=4)
    with pytest.raises(flashc.FlashcError, match="spec must be a flashc.AttentionSpec"):
        flashc.compile({"heads": 2}, "cpu")


def test_invalid_spec():
    spec = flashc.AttentionSpec(heads=3, kv_heads=2, head_dim=32)
    with pytest.raises(flashc.FlashcError, match="multiple"):
        flashc.compile(spec, "cpu")


def test_wrong_output_shape(qkv):
    q, k, v = qkv
    out = np.empty((1, 4, 8, 16), dtype=np.float32)
    with pytest.raises(flashc.FlashcError,
                       match=r"output has shape \[1, 4, 8, 16\], expected "
                             r"\[1, 4, 8, 32\]"):
        flashc.attention(q, k, v, out=out)
    with pytest.raises(flashc.FlashcError,
                       match=r"lse has shape \[1, 4, 7\], expected"):
        flashc.attention(q, k, v, lse=np.empty((1, 4, 7), np.float32))


def test_read_only_outputs(qkv):
    q, k, v = qkv
    out = np.zeros((1, 4, 8, 32), np.float32)
    out.flags.writeable = False
    with pytest.raises(flashc.FlashcError, match="out is read-only"):
        flashc.attention(q, k, v, out=out)
    frozen = np.frombuffer(bytes(4 * 8 * 4), np.float32).reshape(1, 4, 8)
    with pytest.raises(flashc.FlashcError, match="lse is read-only"):
        flashc.attention(q, k, v, lse=frozen)
    assert not out.any()


def test_overlapping_outputs(qkv):
    q, k, v = qkv
    row = np.zeros((1, 1, 1, 32), np.float32)
    # A writable view whose 32 rows are one row.
    out = np.lib.stride_tricks.as_strided(row, (1, 4, 8, 32), (0, 0, 0, 4))
    with pytest.raises(flashc.FlashcError, match="out has stride 0"):
        flashc.attention(q, k, v, out=out)


def test_empty_tensors(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match=r"q is empty \(shape "
                                                 r"\(1, 4, 0, 32\)\)"):
        flashc.attention(q[:, :, :0], k, v)


class HostDLPack:
    """A host array behind DLPack, claiming device ``device``."""

    def __init__(self, array, device):
        self._array, self._device = array, device

    def __dlpack__(self, stream=None):  # pylint: disable=unused-argument
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._device


def test_other_dlpack_devices(qkv):
    q, k, v = qkv
    rocm = [HostDLPack(x, (10, 0)) for x in (q, k, v)]
    with pytest.raises(flashc.FlashcError, match="DLPack device type 10"):
        flashc.attention(*rocm)
    second = [HostDLPack(x, (2, 1)) for x in (q, k, v)]
    with pytest.raises(flashc.FlashcError, match="CUDA device 1"):
        flashc.attention(*second)


def test_broken_tensor_protocols(qkv):
    q, k, v = qkv

    class NoTypestr:
        __cuda_array_interface__ = {"shape": q.shape, "data": (4096, False)}

    with pytest.raises(flashc.FlashcError, match="q: cannot read the tensor"):
        flashc.attention(NoTypestr(), NoTypestr(), NoTypestr())

    class Raising:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            raise BufferError("not exportable")

    with pytest.raises(flashc.FlashcError, match="not exportable"):
        flashc.attention(Raising(), k, v)


def test_bad_argument_types():
    spec = flashc.AttentionSpec(heads=2, seq_q=16, seq_kv=16, head_dim=32)
    with pytest.raises(flashc.FlashcError, match="target must be a string"):
        flashc.compile(spec, None)
    with pytest.raises(flashc.FlashcError, match="block_kv must be an integer"):
        flashc.compile(spec, "cpu", block_kv="64")
    with pytest.raises(flashc.FlashcError, match="heads must be an integer"):
        flashc.AttentionSpec(heads=2.5)
    with pytest.raises(flashc.FlashcError, match="does not fit 64 bits"):
        flashc.AttentionSpec(batch=2**64)
    with pytest.raises(flashc.FlashcError, match="spec must be a flashc.AttentionSpec"):
        flashc.cost({"heads": 2})
    with pytest.raises(flashc.FlashcError, match="scale"):
        flashc.AttentionSpec(scale="big")


def test_missing_bundle(tmp_path):
    with pytest.raises(flashc.FlashcError):
        flashc.load_bundle(tmp_path / "nothing")


def test_version():
    # The version CMake writes into the package (the project's).
    parts = flashc.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts), (
        flashc.__version__)
