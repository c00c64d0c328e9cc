"""The softmax scale is a kernel argument: one compiled kernel serves every
scale, on the CPU and in the simulator, and each scale matches the float64
reference (conftest's check: 2e-4 absolute for f32, 4e-3 for f16)."""

import numpy as np
import pytest

import flashc

from conftest import check, make_inputs


@pytest.mark.parametrize("target,dtype", [("cpu", np.float32),
                                          ("sm_80-sim", np.float16)])
def test_one_kernel_serves_every_scale(rng, seed, target, dtype):
    q, k, v = make_inputs(rng, 1, 4, 2, 24, 80, 64, dtype=dtype)
    flashc.attention(q, k, v, causal=True, return_lse=True, target=target)
    compiled = flashc.cache_size()
    for scale in (0.02, 0.3, 1.0, 2.5):
        out, lse = flashc.attention(q, k, v, causal=True, scale=scale,
                                    return_lse=True, target=target)
        check(out, lse, q, k, v, True, seed, scale=scale)
    assert flashc.cache_size() == compiled, "a scale compiled a new kernel"


def test_kernels_of_two_scales_keep_their_own(rng, seed):
    # Two AttentionSpecs that differ only in their scale share the code but
    # each kernel runs with its own spec's scale.
    a = flashc.compile(flashc.AttentionSpec(heads=2, head_dim=32, scale=0.1))
    b = flashc.compile(flashc.AttentionSpec(heads=2, head_dim=32, scale=0.7))
    q, k, v = make_inputs(rng, 1, 2, 2, 9, 30, 32)
    check(a(q, k, v), None, q, k, v, False, seed, scale=0.1)
    check(b(q, k, v), None, q, k, v, False, seed, scale=0.7)
    check(a(q, k, v), None, q, k, v, False, seed, scale=0.1)
