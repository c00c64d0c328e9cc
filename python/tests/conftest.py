"""Shared fixtures of the flashc Python tests: fresh random inputs (the seed
is part of every failure message; FLASHC_TEST_SEED reruns one) and the
float64 reference."""

import importlib
import os
import random
import subprocess

import numpy as np
import pytest


@pytest.fixture
def seed():
    value = os.environ.get("FLASHC_TEST_SEED")
    return int(value) if value else random.SystemRandom().randrange(2**32)


@pytest.fixture
def rng(seed):
    return np.random.default_rng(seed)


def make_inputs(rng, b, hq, hkv, nq, nk, d, dv=None, dtype=np.float32):
    """q, k, v ~ N(0, 1) of the given shapes, in ``dtype``."""
    dv = dv or d
    q = rng.standard_normal((b, hq, nq, d)).astype(dtype)
    k = rng.standard_normal((b, hkv, nk, d)).astype(dtype)
    v = rng.standard_normal((b, hkv, nk, dv)).astype(dtype)
    return q, k, v


def write_bundle(path, *flags, target="sm_80"):
    """Writes a bundle of ``target``'s kernels (f16, head dim 64, not
    assembled) with ``flashc bundle`` and ``flags`` to ``path``; skips the
    test where FLASHC_TOOLS_DIR (the folder of the flashc tool) is
    unset."""
    tools = os.environ.get("FLASHC_TOOLS_DIR")
    if not tools:
        pytest.skip("FLASHC_TOOLS_DIR (the folder of the flashc tool) unset")
    subprocess.run(
        [os.path.join(tools, "flashc"), "bundle", "-o", str(path),
         "--targets", target, "--dtypes", "f16", "--head-dims", "64",
         "--no-assemble", *flags], check=True, capture_output=True)
    return path


def offset_copy(x, offset):
    """A copy of ``x`` that starts ``offset`` elements into a buffer of its
    own: a view no more aligned than ``offset`` elements are."""
    buffer = np.zeros(x.size + offset, dtype=x.dtype)
    view = buffer[offset:].reshape(x.shape)
    view[...] = x
    return view


def reference(q, k, v, causal=False, scale=None, top_left=False):
    """O and LSE in float64. Causal masks are aligned at the bottom right:
    query i sees keys j <= i + Nk - Nq (with ``top_left``, PyTorch's
    ``is_causal``: j <= i); a row that sees no key gives O = 0 and LSE =
    -inf."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * (q @ np.swapaxes(k, -1, -2))
    nq, nk = s.shape[-2:]
    if causal:
        shift = 0 if top_left else nk - nq
        hidden = np.arange(nk)[None, :] > np.arange(nq)[:, None] + shift
        s = np.where(hidden, -np.inf, s)
    mx = s.max(axis=-1, keepdims=True)
    safe = np.where(np.isinf(mx), 0.0, mx)
    p = np.exp(s - safe)
    l = p.sum(axis=-1, keepdims=True)
    o = np.where(l > 0, (p @ v) / np.where(l > 0, l, 1.0), 0.0)
    lse = np.where(l > 0, safe + np.log(np.where(l > 0, l, 1.0)), -np.inf)
    return o, lse[..., 0]


def import_torch(name="torch"):
    """The module ``name`` (torch or one of its submodules), or a skip
    saying why; a failure when FLASHC_REQUIRE_TORCH is set (the
    environment is meant to have it)."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if os.environ.get("FLASHC_REQUIRE_TORCH"):
            raise
        pytest.skip(f"torch is not importable ({e}); scripts/torch-venv.sh "
                    "makes an environment with it")


# Absolute output tolerances by dtype (those of the C++ kernel tests).
TOLERANCE = {np.dtype(np.float32): 2e-4, np.dtype(np.float16): 4e-3}


def check(out, lse, q, k, v, causal, seed, scale=None):
    """Asserts that ``out`` (and ``lse`` when given) match the reference."""
    ref, ref_lse = reference(q, k, v, causal, scale)
    tol = TOLERANCE.get(np.dtype(q.dtype), 3e-2)
    err = np.abs(out.astype(np.float64) - ref).max() if out.size else 0.0
    assert err <= tol, f"max |error| {err} > {tol} (seed {seed})"
    if lse is None:
        return
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isneginf(lse), ~finite), f"seed {seed}"
    if finite.any():
        lerr = np.abs(lse[finite] - ref_lse[finite]) / (
            1e-3 + 1e-5 * np.abs(ref_lse[finite]))
        assert lerr.max() <= 1.0, f"lse error {lerr.max()} (seed {seed})"
