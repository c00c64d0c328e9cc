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
    with pytest.raises(flashc.FlashcError, match="is a list"):
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
    with pytest.raises(flashc.FlashcError):
        flashc.attention(fake(q), fake(k), fake(v))


def test_bad_targets(qkv):
    q, k, v = qkv
    with pytest.raises(flashc.FlashcError, match="needs CUDA tensors"):
        flashc.attention(q, k, v, target="sm_80")
    with pytest.raises(flashc.FlashcError, match="unknown target 'tpu'"):
        flashc.attention(q, k, v, target="tpu")


def test_bad_compile_options():
    spec = flashc.AttentionSpec(heads=2, seq_q=16, seq_kv=16, head_dim=32)
    with pytest.raises(flashc.FlashcError, match="unknown compile option"):
        flashc.compile(spec, "cpu", tile=3)
    with pytest.raises(flashc.FlashcError, match="vector-lanes must be"):
        flashc.compile(spec, "cpu", vector_lanes=4)
    with pytest.raises(flashc.FlashcError, match="expected a flashc.AttentionSpec"):
        flashc.compile({"heads": 2}, "cpu")


def test_invalid_spec():
    spec = flashc.AttentionSpec(heads=3, kv_heads=2, head_dim=32)
    with pytest.raises(flashc.FlashcError, match="multiple"):
        flashc.compile(spec, "cpu")


def test_wrong_output_shape(qkv):
    q, k, v = qkv
    out = np.empty((1, 4, 8, 16), dtype=np.float32)
    with pytest.raises(flashc.FlashcError, match="out"):
        flashc.attention(q, k, v, out=out)


def test_missing_bundle(tmp_path):
    with pytest.raises(flashc.FlashcError):
        flashc.load_bundle(tmp_path / "nothing")
