"""GPU kernels from Python on a real device, against torch's
scaled_dot_product_attention: through the compiler (flashc.attention on
CUDA tensors) and through a bundle with the runtime alone
(FLASHC_GPU_BUNDLE names one, as scripts/gpu-check.sh does). Skipped
without torch and a CUDA device, except the bundle's simulator check,
which runs wherever the bundle is."""

import os
import time

import numpy as np
import pytest

import flashc

from conftest import check

BUNDLE = os.environ.get("FLASHC_GPU_BUNDLE")

try:
    import torch
except ImportError:
    torch = None


def _has_cuda():
    if torch is None or not torch.cuda.is_available():
        return False
    return not flashc._runtime.cuda_status()  # pylint: disable=protected-access


def _has_compiler():
    try:
        flashc.cache_size()
    except flashc.FlashcError:
        return False
    return True


needs_cuda = pytest.mark.skipif(not _has_cuda(), reason="no CUDA device")
needs_bundle = pytest.mark.skipif(not BUNDLE, reason="FLASHC_GPU_BUNDLE unset")


def synchronize():
    """torch.cuda.synchronize, bounded as the runtime's waits are by
    FLASHC_CUDA_SYNC_TIMEOUT_S (unset or 0: no bound). Work not finished
    by then is a kernel that hangs: every later wait would hang too, so
    the session ends (exit 3) with a line naming the cause."""
    text = os.environ.get("FLASHC_CUDA_SYNC_TIMEOUT_S") or "0"
    try:
        limit = float(text)
    except ValueError:
        pytest.exit(f"FLASHC_CUDA_SYNC_TIMEOUT_S is '{text}': give seconds",
                    returncode=2)
    if limit > 0:
        stream = torch.cuda.current_stream()
        start = time.monotonic()
        while not stream.query():
            waited = time.monotonic() - start
            if waited > limit:
                pytest.exit(f"the GPU's work did not finish within {limit:g} "
                            "s (FLASHC_CUDA_SYNC_TIMEOUT_S): a kernel that "
                            "hangs", returncode=3)
            time.sleep(0 if waited < 1e-3 else 1e-3)
    torch.cuda.synchronize()


def sdpa(q, k, v, causal, scale=None):
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    nq, nk = q.shape[2], k.shape[2]
    mask = None
    if causal:
        # flashc aligns causal masks at the bottom right.
        mask = torch.ones(nq, nk, dtype=torch.bool, device=q.device).tril(
            nk - nq)
    return torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=mask, scale=scale)


def variant_shape(variant):
    """A small call that the bundle variant serves: (B, Hq, Hkv, Nq, Nk)."""
    group = variant["group"]
    nq = 1 if variant["decode"] else 77
    return 2, 2 * group, 2, nq, 300


@needs_bundle
def test_bundle_in_the_simulator(seed):
    bundle = flashc.load_bundle(BUNDLE)
    variants = [x for x in bundle.variants if x["dtype"] == "f16"][:2]
    assert variants, "the bundle has no f16 kernel"
    rng = np.random.default_rng(seed)
    for variant in variants:
        b, hq, hkv, nq, nk = variant_shape(variant)
        d, dv = variant["head_dim"], variant["head_dim_v"]
        q = rng.standard_normal((1, hq, min(nq, 20), d)).astype(np.float16)
        k = rng.standard_normal((1, hkv, 40, d)).astype(np.float16)
        v = rng.standard_normal((1, hkv, 40, dv)).astype(np.float16)
        # Not the default scale: the kernels take it as an argument.
        scale = 0.6 / np.sqrt(d)
        out = bundle.attention(q, k, v, causal=variant["causal"],
                               scale=scale, simulate=True,
                               chip=variant["target"],
                               return_lse=variant["with_lse"])
        if variant["with_lse"]:
            out = out[0]
        check(out, None, q, k, v, variant["causal"], seed, scale=scale)


@needs_bundle
@needs_cuda
def test_bundle_on_the_gpu():
    bundle = flashc.load_bundle(BUNDLE)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    for variant in bundle.variants:
        b, hq, hkv, nq, nk = variant_shape(variant)
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[variant["dtype"]]
        d, dv = variant["head_dim"], variant["head_dim_v"]
        q = torch.randn(b, hq, nq, d, device="cuda", dtype=dt, generator=gen)
        k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dt, generator=gen)
        v = torch.randn(b, hkv, nk, dv, device="cuda", dtype=dt, generator=gen)
        scale = 0.6 / d ** 0.5
        out = bundle.attention(q, k, v, causal=variant["causal"],
                               scale=scale, return_lse=variant["with_lse"])
        if variant["with_lse"]:
            out = out[0]
        synchronize()
        ref = sdpa(q, k, v, variant["causal"], scale)
        tol = 4e-3 if variant["dtype"] == "f16" else 3e-2
        err = (out.float() - ref).abs().max().item()
        assert err <= tol, f"{variant['id']}: max |error| {err}"


@needs_cuda
@pytest.mark.skipif(not _has_compiler(), reason="no compiler module")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 8, 2, 1024, 1024, 128),
                                   (1, 8, 2, 1, 8192, 128),
                                   (1, 4, 4, 333, 517, 64)])
def test_compiled_kernels_match_sdpa(shape, causal, dtype):
    b, hq, hkv, nq, nk, d = shape
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dt, generator=gen)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dt, generator=gen)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dt, generator=gen)
    out = flashc.attention(q, k, v, causal=causal)
    synchronize()
    ref = sdpa(q, k, v, causal)
    tol = 4e-3 if dtype == "float16" else 3e-2
    assert (out.float() - ref).abs().max().item() <= tol
