"""flashc.combine: partial attention results over disjoint key chunks,
merged by their log-sum-exp, against one flashc call over all the keys and
against the float64 reference, on fresh random inputs; the merge formula
itself against float64; bad arguments; torch tensors (skipped without
torch, unless FLASHC_REQUIRE_TORCH is set)."""


import numpy as np
import pytest

import flashc

from conftest import check, import_torch, make_inputs

# Combined against one call over all the keys: the same f32 arithmetic in
# another order (f32), or partial outputs rounded to f16 before the merge
# and the whole output once (f16: two f16 steps). Both on O and on the LSE
# relative to 1 + |value|. (Seen: 6e-7 and 2.3e-7 in f32, 9.8e-4 in f16.)
AGAINST_ONE_CALL = {np.dtype(np.float32): (2e-5, 2e-6),
                    np.dtype(np.float16): (2e-3, 2e-6)}


def cuts(nk, kind):
    """The chunk boundaries [0, ..., nk] of a split of nk keys."""
    inner = {"halves": [nk // 2],
             "thirds": [nk // 3, 2 * nk // 3],
             "uneven": [1, nk // 2 + 3]}[kind]
    return [0] + inner + [nk]


def partial(q, k, v, start, end, causal):
    """flashc's O and LSE of q against keys [start, end) of k and v, under
    the mask of the whole problem: causal at the bottom right of all Nk
    keys, so query i sees key j <= i + Nk - Nq. Within the chunk, rows
    before ``first`` see no key, rows from ``first`` to ``full`` see a
    causal square ending at the chunk's last key (flashc's causal call on
    the chunk, aligned at its bottom right), later rows see it all; the
    rows are attended in those groups and put back together."""
    kc, vc = k[:, :, start:end], v[:, :, start:end]
    if not causal:
        return flashc.attention(q, kc, vc, return_lse=True)
    nq, nk = q.shape[2], k.shape[2]
    offset = nk - nq
    # The first row that sees key `start`, and the first row after the one
    # that first sees key `end - 1`.
    first = min(max(start - offset, 0), nq)
    full = min(max(end - offset, 0), nq)
    b, h, _, _ = q.shape
    out = np.zeros((b, h, nq, v.shape[3]), q.dtype)
    lse = np.full((b, h, nq), -np.inf, np.float32)
    if first < full:
        out[:, :, first:full], lse[:, :, first:full] = flashc.attention(
            q[:, :, first:full], kc, vc, causal=True, return_lse=True)
    if full < nq:
        out[:, :, full:], lse[:, :, full:] = flashc.attention(
            q[:, :, full:], kc, vc, return_lse=True)
    return out, lse


# (B, Hq, Hkv, Nq, Nk): Nk > Nq, Nq = Nk, Nq > Nk (causal: the first rows
# see no key in any chunk), one query.
SHAPES = [(2, 4, 2, 23, 61), (1, 4, 2, 48, 48), (1, 4, 4, 40, 24),
          (1, 4, 1, 1, 37)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("split", ["halves", "thirds", "uneven"])
@pytest.mark.parametrize("shape", SHAPES)
def test_chunks_combine_to_one_call(rng, seed, shape, split, causal, dtype):
    b, hq, hkv, nq, nk = shape
    q, k, v = make_inputs(rng, b, hq, hkv, nq, nk, 32, 16, dtype)
    bounds = cuts(nk, split)
    parts = [partial(q, k, v, s, e, causal)
             for s, e in zip(bounds[:-1], bounds[1:])]
    out, lse = flashc.combine([o for o, _ in parts], [l for _, l in parts])
    assert out.dtype == q.dtype and lse.dtype == np.float32
    assert out.shape == (b, hq, nq, 16) and lse.shape == (b, hq, nq)
    # Against the float64 reference (conftest's tolerances)...
    check(out, lse, q, k, v, causal, seed)
    # ... and against one flashc call over all the keys.
    one_out, one_lse = flashc.attention(q, k, v, causal=causal,
                                        return_lse=True)
    out_tol, lse_tol = AGAINST_ONE_CALL[np.dtype(dtype)]
    assert np.array_equal(np.isneginf(lse), np.isneginf(one_lse))
    error = (np.abs(out.astype(np.float64) - one_out) /
             (1 + np.abs(one_out.astype(np.float64)))).max()
    assert error <= out_tol, f"O differs by {error} (seed {seed})"
    finite = np.isfinite(one_lse)
    if finite.any():
        lerr = (np.abs(lse[finite] - one_lse[finite]) /
                (1 + np.abs(one_lse[finite]))).max()
        assert lerr <= lse_tol, f"LSE differs by {lerr} (seed {seed})"
    # Rows that see no key: O = 0 and LSE = -inf, as the one call gives.
    unseen = np.isneginf(one_lse)
    assert np.all(out[unseen] == 0) and np.all(one_out[unseen] == 0)


def merge64(outputs, lses):
    """The merge in float64, written out: rows where every L_i is -inf
    give O = 0 and L = -inf."""
    o = np.stack([x.astype(np.float64) for x in outputs])
    l = np.stack([x.astype(np.float64) for x in lses])
    top = l.max(axis=0)
    seen = np.isfinite(top)
    shift = np.where(seen, top, 0.0)
    w = np.exp(l - shift)
    total = w.sum(axis=0)
    lse = np.where(seen, shift + np.log(np.where(seen, total, 1.0)), -np.inf)
    out = (w[..., None] * np.where(w[..., None] > 0, o, 0.0)).sum(axis=0)
    return out / np.where(seen, total, 1.0)[..., None], lse


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_formula_against_float64(rng, seed, parts):
    # LSEs far apart (exp of their differences underflows f32 unless
    # shifted), and -inf in some partials' rows and in every partial of
    # row 0.
    shape = (2, 3, 9)
    outputs = [rng.standard_normal(shape + (8,)).astype(np.float32)
               for _ in range(parts)]
    lses = [(rng.standard_normal(shape) * 50).astype(np.float32)
            for _ in range(parts)]
    for i, lse in enumerate(lses):
        lse[rng.random(shape) < 0.3] = -np.inf
        lse[:, :, 0] = -np.inf
        outputs[i][:, :, 0] = 0
    out, lse = flashc.combine(outputs, lses)
    ref_out, ref_lse = merge64(outputs, lses)
    assert np.array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    assert np.all(np.isneginf(lse[:, :, 0])) and np.all(out[:, :, 0] == 0)
    # f32 rounding: relative 1e-6 on the LSE, 4e-6 absolute on O ~ N(0, 1).
    finite = np.isfinite(ref_lse)
    lerr = (np.abs(lse[finite] - ref_lse[finite]) /
            (1 + np.abs(ref_lse[finite]))).max()
    assert lerr <= 1e-6, f"LSE error {lerr} (seed {seed})"
    error = np.abs(out - ref_out).max()
    assert error <= 4e-6, f"O error {error} (seed {seed})"


def test_partial_without_keys_adds_nothing(rng):
    # A partial whose LSE is -inf in a row adds nothing there, even when
    # its O holds NaN or infinity (a buffer never written).
    o1 = rng.standard_normal((1, 2, 4, 8)).astype(np.float32)
    l1 = rng.standard_normal((1, 2, 4)).astype(np.float32)
    o2 = np.full_like(o1, np.nan)
    o2[:, :, 1] = np.inf
    l2 = np.full_like(l1, -np.inf)
    out, lse = flashc.combine([o1, o2], [l1, l2])
    np.testing.assert_allclose(out, o1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(lse, l1, rtol=1e-6)


def test_nan_lse_gives_nan_row(rng):
    o = rng.standard_normal((1, 1, 3, 4)).astype(np.float32)
    l = np.zeros((1, 1, 3), np.float32)
    bad = l.copy()
    bad[0, 0, 1] = np.nan
    out, lse = flashc.combine([o, o], [l, bad])
    assert np.isnan(lse[0, 0, 1]) and np.all(np.isnan(out[0, 0, 1]))
    assert np.all(np.isfinite(lse[0, 0, [0, 2]]))


def test_inputs_are_not_changed(rng):
    o = rng.standard_normal((1, 2, 5, 4)).astype(np.float16)
    l = rng.standard_normal((1, 2, 5)).astype(np.float32)
    o_copy, l_copy = o.copy(), l.copy()
    out, lse = flashc.combine((o, o), (l, l))
    assert np.array_equal(o, o_copy) and np.array_equal(l, l_copy)
    assert out is not o and lse is not l
    # Two equal halves: the same O, and L + log 2.
    np.testing.assert_allclose(out.astype(np.float32), o, atol=1e-3)
    np.testing.assert_allclose(lse, l + np.log(2), rtol=1e-6, atol=1e-6)


@pytest.fixture
def part(rng):
    return (rng.standard_normal((1, 2, 5, 4)).astype(np.float32),
            rng.standard_normal((1, 2, 5)).astype(np.float32))


def test_errors(part):
    o, l = part
    cases = [
        ((o, [l]), flashc.FlashcTypeError, "outputs must be a list or tuple"),
        (([o], l), flashc.FlashcTypeError, "lses must be a list or tuple"),
        (([], []), flashc.FlashcError, "outputs is empty"),
        (([o], []), flashc.FlashcError, "lses is empty"),
        (([o, o], [l]), flashc.FlashcError, "2 outputs but 1 lses"),
        (([o, [1.0]], [l, l]), flashc.FlashcTypeError,
         r"outputs\[1\] must be a numpy array or a torch tensor, got list"),
        (([o], [None]), flashc.FlashcTypeError,
         r"lses\[0\] must be a numpy array or a torch tensor, got None"),
        (([o, o[:, :, :4]], [l, l]), flashc.FlashcError,
         r"outputs\[1\] has shape \(1, 2, 4, 4\) but outputs\[0\] has "
         r"\(1, 2, 5, 4\)"),
        (([o, o.astype(np.float16)], [l, l]), flashc.FlashcError,
         r"outputs\[1\] has dtype float16 but outputs\[0\] has float32"),
        (([o.astype(np.float64)], [l]), flashc.FlashcError,
         "outputs\\[0\\] has dtype float64; expected float32, float16, "
         "bfloat16"),
        (([o.astype(np.int32)], [l]), flashc.FlashcError,
         r"outputs\[0\] has dtype int32"),
        (([o], [l[:, :, :4]]), flashc.FlashcError,
         r"lses\[0\] has shape \(1, 2, 4\); expected \(1, 2, 5\)"),
        (([o], [l[..., None]]), flashc.FlashcError, r"lses\[0\] has shape"),
        (([o], [l.astype(np.float64)]), flashc.FlashcError,
         r"lses\[0\] has dtype float64; the log-sum-exp must be float32"),
        (([o], [l.astype(np.float16)]), flashc.FlashcError,
         "must be float32"),
        (([np.float32(1.0)], [l]), flashc.FlashcTypeError,
         r"outputs\[0\] must be a numpy array"),
        (([np.zeros((), np.float32)], [l]), flashc.FlashcError,
         "outputs\\[0\\] is a scalar"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            flashc.combine(*args)
    # Every error is a ValueError; a wrong type is also a TypeError.
    assert issubclass(flashc.FlashcTypeError, TypeError)
    assert issubclass(flashc.FlashcTypeError, flashc.FlashcError)


def test_torch_tensors(rng, seed):
    torch = import_torch()
    q, k, v = make_inputs(rng, 1, 4, 2, 30, 50, 32, 16)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    outputs, lses = [], []
    for s, e in ((0, 17), (17, 50)):
        # flashc writes into torch tensors handed to it.
        o = torch.empty((1, 4, 30, 16), dtype=torch.float32)
        l = torch.empty((1, 4, 30), dtype=torch.float32)
        flashc.attention(tq, tk[:, :, s:e], tv[:, :, s:e], out=o, lse=l)
        outputs.append(o)
        lses.append(l)
    out, lse = flashc.combine(outputs, lses)
    assert isinstance(out, torch.Tensor) and isinstance(lse, torch.Tensor)
    assert out.dtype == torch.float32 and lse.dtype == torch.float32
    assert out.device.type == "cpu"
    check(out.numpy(), lse.numpy(), q, k, v, False, seed)
    # The same as the numpy merge of the same partials.
    np_out, np_lse = flashc.combine([o.numpy() for o in outputs],
                                    [l.numpy() for l in lses])
    np.testing.assert_allclose(out.numpy(), np_out, rtol=0, atol=1e-6)
    np.testing.assert_allclose(lse.numpy(), np_lse, rtol=1e-6)
    # f16 outputs stay f16; -inf rows give 0 and -inf.
    half = [o.half() for o in outputs]
    masked = [torch.full_like(lses[0], float("-inf")), lses[1]]
    h_out, h_lse = flashc.combine(half, masked)
    assert h_out.dtype == torch.float16
    torch.testing.assert_close(h_out, half[1])
    torch.testing.assert_close(h_lse, lses[1])
    none_out, none_lse = flashc.combine(half[:1], masked[:1])
    assert torch.all(none_out == 0) and torch.all(torch.isneginf(none_lse))


def test_torch_errors():
    torch = import_torch()
    o = torch.zeros((1, 2, 3, 4))
    l = torch.zeros((1, 2, 3))
    with pytest.raises(flashc.FlashcError, match="mix numpy arrays and "
                       "torch tensors"):
        flashc.combine([o, o.numpy()], [l, l])
    meta = torch.empty((1, 2, 3), device="meta")
    with pytest.raises(flashc.FlashcError, match=r"different devices \(cpu, "
                       r"meta\)"):
        flashc.combine([o, o], [l, meta])
    with pytest.raises(flashc.FlashcError, match=r"lses\[0\] has dtype "
                       "float64"):
        flashc.combine([o], [l.double()])
    with pytest.raises(flashc.FlashcError, match=r"outputs\[0\] has dtype "
                       "int64"):
        flashc.combine([o.long()], [l])


def test_torch_cuda():
    torch = import_torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    o = [torch.randn((2, 3, 7, 8), device="cuda") for _ in range(3)]
    l = [torch.randn((2, 3, 7), device="cuda") * 10 for _ in range(3)]
    out, lse = flashc.combine(o, l)
    assert out.device.type == "cuda" and lse.device.type == "cuda"
    ref_out, ref_lse = merge64([x.cpu().numpy() for x in o],
                               [x.cpu().numpy() for x in l])
    np.testing.assert_allclose(out.cpu().numpy(), ref_out, atol=4e-6)
    np.testing.assert_allclose(lse.cpu().numpy(), ref_lse, rtol=1e-5)
