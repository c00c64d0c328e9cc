"""The layout of every entry point, and the drop-in forms of FlashAttention's
flash_attn_func and PyTorch's scaled_dot_product_attention, against a
float64 reference on fresh random inputs.

Tolerances: f32 kernels on the CPU within 2e-4 absolute of the float64
result (the inputs are N(0, 1) and the outputs convex combinations of V's
rows); the LSE within 1e-4 relative.
"""

import numpy as np
import pytest

import flashc

from conftest import reference

TOL = 2e-4


def to_bnhd(x):
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3))


def make(rng, b=2, hq=4, hkv=2, nq=33, nk=47, d=32, dv=None):
    dv = d if dv is None else dv
    q = rng.standard_normal((b, hq, nq, d), dtype=np.float32)
    k = rng.standard_normal((b, hkv, nk, d), dtype=np.float32)
    v = rng.standard_normal((b, hkv, nk, dv), dtype=np.float32)
    return q, k, v


@pytest.mark.parametrize("causal", [False, True])
def test_attention_bnhd_matches_bhnd_reference(rng, causal):
    q, k, v = make(rng)
    o_ref, lse_ref = reference(q, k, v, causal=causal)
    o, lse = flashc.attention(to_bnhd(q), to_bnhd(k), to_bnhd(v),
                              causal=causal, return_lse=True, layout="bnhd")
    assert o.shape == (2, 33, 4, 32)
    assert lse.shape == (2, 4, 33)
    np.testing.assert_allclose(o.transpose(0, 2, 1, 3), o_ref, atol=TOL,
                               rtol=0)
    np.testing.assert_allclose(lse, lse_ref, rtol=1e-4)


def test_bnhd_views_need_no_copy(rng):
    # A [B, N, H, D] view of a fused [B, N, 3, H, D] projection: strided
    # in N, dense in D.
    b, n, h, d = 2, 40, 4, 32
    qkv = rng.standard_normal((b, n, 3, h, d), dtype=np.float32)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    assert not q.flags.c_contiguous
    o = flashc.attention(q, k, v, causal=True, layout="bnhd")
    o_ref, _ = reference(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                         v.transpose(0, 2, 1, 3), causal=True)
    np.testing.assert_allclose(o.transpose(0, 2, 1, 3), o_ref, atol=TOL,
                               rtol=0)


def test_given_out_in_bnhd(rng):
    q, k, v = make(rng, hq=2, hkv=2)
    out = np.full((2, 33, 2, 32), np.nan, dtype=np.float32)
    got = flashc.attention(to_bnhd(q), to_bnhd(k), to_bnhd(v), layout="bnhd",
                           out=out)
    assert got is out
    o_ref, _ = reference(q, k, v)
    np.testing.assert_allclose(out.transpose(0, 2, 1, 3), o_ref, atol=TOL,
                               rtol=0)


def test_the_layout_trap():
    # [B, N, H, D] arrays with Hq 8, Hkv 2, read as [B, H, N, D], are a
    # valid but different problem (128 heads of 8 queries over 128 KV heads
    # of 2 keys): no check can see it, which is why every entry point names
    # its layout. Named, the answer is right.
    rng = np.random.default_rng()
    q = rng.standard_normal((2, 128, 8, 64), dtype=np.float32)
    k = rng.standard_normal((2, 128, 2, 64), dtype=np.float32)
    v = rng.standard_normal((2, 128, 2, 64), dtype=np.float32)
    o_ref, _ = reference(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                         v.transpose(0, 2, 1, 3))
    for o in (flashc.flash_attn_func(q, k, v),
              flashc.attention(q, k, v, layout="bnhd")):
        np.testing.assert_allclose(o.transpose(0, 2, 1, 3), o_ref, atol=TOL,
                                   rtol=0)
    wrong = flashc.attention(q, k, v)  # the default, bhnd: another problem
    assert np.abs(wrong.transpose(0, 2, 1, 3) - o_ref).max() > 0.1


def test_bhnd_shape_errors_name_the_layout(rng):
    q, k, v = make(rng, hq=3, hkv=2)
    with pytest.raises(flashc.FlashcError, match="layout 'bhnd'"):
        flashc.attention(q, k, v)
    with pytest.raises(flashc.FlashcError, match=r"\[B, N, H, D\]"):
        flashc.attention(q[0], k[0], v[0], layout="bnhd")


@pytest.mark.parametrize("bad", ["BHND", "bshd", "nhd", ""])
def test_unknown_layouts(rng, bad):
    q, k, v = make(rng)
    with pytest.raises(flashc.FlashcError, match="unknown layout"):
        flashc.attention(q, k, v, layout=bad)
    with pytest.raises(flashc.FlashcTypeError):
        flashc.attention(q, k, v, layout=1)


def test_spec_and_kernel_carry_the_layout(rng):
    spec = flashc.AttentionSpec(heads=2, head_dim=32, layout="bnhd")
    assert "layout='bnhd'" in repr(spec)
    kernel = flashc.compile(spec)
    assert "layout='bnhd'" in repr(kernel)
    q, k, v = make(rng, b=1, hq=2, hkv=2, nq=5, nk=9)
    o = kernel(to_bnhd(q), to_bnhd(k), to_bnhd(v))
    np.testing.assert_allclose(o.transpose(0, 2, 1, 3), reference(q, k, v)[0],
                               atol=TOL, rtol=0)
    with pytest.raises(flashc.FlashcError, match="unknown layout"):
        flashc.AttentionSpec(layout="bsnd")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("nq,nk", [(33, 47), (47, 47), (1, 64)])
def test_flash_attn_func(rng, causal, nq, nk):
    q, k, v = make(rng, nq=nq, nk=nk, dv=16)
    scale = 0.3
    o, lse = flashc.flash_attn_func(to_bnhd(q), to_bnhd(k), to_bnhd(v),
                                    softmax_scale=scale, causal=causal,
                                    return_lse=True)
    o_ref, lse_ref = reference(q, k, v, causal=causal, scale=scale)
    np.testing.assert_allclose(o.transpose(0, 2, 1, 3), o_ref, atol=TOL,
                               rtol=0)
    finite = np.isfinite(lse_ref)
    np.testing.assert_allclose(lse[finite], lse_ref[finite], rtol=1e-4)
    # Positional arguments in FlashAttention's order after v.
    o2 = flashc.flash_attn_func(to_bnhd(q), to_bnhd(k), to_bnhd(v), scale,
                                causal)
    np.testing.assert_array_equal(o2, o)


@pytest.mark.parametrize("option,value", [
    ("dropout_p", 0.1), ("window_size", (128, 0)), ("softcap", 30.0),
    ("alibi_slopes", np.ones(4, np.float32)), ("return_attn_probs", True)])
def test_flash_attn_func_refuses_what_it_lacks(rng, option, value):
    q, k, v = make(rng)
    with pytest.raises(flashc.FlashcError, match="not supported yet"):
        flashc.flash_attn_func(to_bnhd(q), to_bnhd(k), to_bnhd(v),
                               **{option: value})


def test_flash_attn_func_accepts_defaults_spelled_out(rng):
    q, k, v = make(rng)
    o = flashc.flash_attn_func(to_bnhd(q), to_bnhd(k), to_bnhd(v),
                               dropout_p=0.0, window_size=[-1, -1],
                               softcap=0.0, alibi_slopes=None,
                               deterministic=True, return_attn_probs=False)
    np.testing.assert_allclose(o.transpose(0, 2, 1, 3), reference(q, k, v)[0],
                               atol=TOL, rtol=0)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("nq,nk", [(33, 47), (47, 47), (60, 20), (1, 30)])
def test_scaled_dot_product_attention(rng, is_causal, nq, nk):
    q, k, v = make(rng, nq=nq, nk=nk, hq=4, hkv=4)
    o = flashc.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    o_ref, _ = reference(q, k, v, causal=is_causal, top_left=True)
    np.testing.assert_allclose(o, o_ref, atol=TOL, rtol=0)


def test_sdpa_gqa_needs_enable_gqa(rng):
    q, k, v = make(rng, hq=4, hkv=2)
    with pytest.raises(flashc.FlashcError, match="enable_gqa=True"):
        flashc.scaled_dot_product_attention(q, k, v)
    o = flashc.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                            scale=0.25)
    np.testing.assert_allclose(o, reference(q, k, v, scale=0.25)[0], atol=TOL,
                               rtol=0)


def test_sdpa_transposed_views(rng):
    # The usual PyTorch idiom: [B, N, H, D] data passed as q.transpose(1, 2).
    q, k, v = make(rng, hq=4, hkv=4)
    qt, kt, vt = (to_bnhd(x).transpose(0, 2, 1, 3) for x in (q, k, v))
    o = flashc.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    np.testing.assert_allclose(
        o, reference(q, k, v, causal=True, top_left=True)[0], atol=TOL, rtol=0)


@pytest.mark.parametrize("option,value", [
    ("attn_mask", np.zeros((33, 47), bool)), ("dropout_p", 0.5)])
def test_sdpa_refuses_what_it_lacks(rng, option, value):
    q, k, v = make(rng, hq=4, hkv=4)
    with pytest.raises(flashc.FlashcError, match="not supported yet"):
        flashc.scaled_dot_product_attention(q, k, v, **{option: value})


def test_sdpa_rank(rng):
    q, k, v = make(rng, hq=4, hkv=4)
    with pytest.raises(flashc.FlashcError, match="4-D"):
        flashc.scaled_dot_product_attention(q[0], k[0], v[0])


def test_torch_tensors_in_and_out(rng):
    torch = pytest.importorskip("torch")
    q, k, v = make(rng, hq=4, hkv=2)
    tq, tk, tv = (torch.from_numpy(to_bnhd(x)) for x in (q, k, v))
    o = flashc.flash_attn_func(tq, tk, tv, causal=True)
    assert isinstance(o, torch.Tensor) and o.shape == (2, 33, 4, 32)
    np.testing.assert_allclose(o.numpy().transpose(0, 2, 1, 3),
                               reference(q, k, v, causal=True)[0],
                               atol=TOL, rtol=0)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(x) for x in (q, k, v)), is_causal=True,
        enable_gqa=True)
    got = flashc.scaled_dot_product_attention(
        *(torch.from_numpy(x) for x in (q, k, v)), is_causal=True,
        enable_gqa=True)
    torch.testing.assert_close(got, ref, atol=TOL, rtol=0)
    with pytest.raises(flashc.FlashcError, match="forward pass only"):
        flashc.flash_attn_func(tq.requires_grad_(), tk, tv)


def test_torch_views_are_described_from_their_attributes(rng):
    """torch tensors are read without DLPack: a view's storage offset and
    strides, torch's dtypes, and every other device or dtype refused with
    the tensor's name."""
    torch = pytest.importorskip("torch")
    q, k, v = make(rng, b=3, hq=4, hkv=2)
    # Views into larger tensors: offset storage, batch strides that skip.
    big = [torch.from_numpy(np.concatenate([x, x], axis=0)) for x in (q, k, v)]
    views = [t[1:4] for t in big]
    assert views[0].storage_offset() > 0
    want = reference(np.concatenate([q, q])[1:4], np.concatenate([k, k])[1:4],
                     np.concatenate([v, v])[1:4], causal=True)[0]
    o = flashc.attention(*views, causal=True)
    np.testing.assert_allclose(o.numpy(), want, atol=TOL, rtol=0)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    with pytest.raises(flashc.FlashcError,
                       match="q has dtype torch.int32; expected float32"):
        flashc.attention(tq.to(torch.int32), tk, tv)
    with pytest.raises(flashc.FlashcError,
                       match="k is on torch device 'meta'"):
        flashc.attention(tq, tk.to("meta"), tv)
    if hasattr(torch, "_neg_view"):
        with pytest.raises(flashc.FlashcError, match="v has a lazy"):
            flashc.attention(tq, tk, torch._neg_view(tv))  # pylint: disable=protected-access
