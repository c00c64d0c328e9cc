"""Calls that an entry point served before in the same form (each
tensor's kind, dtype and device, which outputs were given, the layout, the
GQA group, the head dims, decode-shaped or not, and the other arguments)
take a short path: the kernel or variant found before, the call's own
sizes, strides and addresses, checked here. Each such call must read its
own tensors, return a new output, and refuse what the full path refuses
(sizes that disagree, an output overlapping an input, an address not
aligned to the element size) as the full path would, by taking it."""

import gc
import weakref

import numpy as np
import pytest

import flashc

from conftest import check, import_torch, make_inputs, write_bundle

E = flashc.FlashcError


def quick_key(q, k, v, out=None, lse=None, layout="bhnd"):
    """The key of a call's short path, or None where it has none."""
    call = flashc._QuickCall.of((q, k, v, out, lse), layout)  # pylint: disable=protected-access
    return None if call is None else call.key


def unaligned(x):
    """A copy of ``x`` one byte into a buffer of its own: the form of
    ``x`` (dtype, shape, strides, writeable), an address that is not a
    multiple of the element size."""
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    view = np.frombuffer(raw, dtype=x.dtype, count=x.size, offset=1)
    view = view.reshape(x.shape)
    view[...] = x
    return view


def test_repeated_calls_read_their_own_data(rng, seed):
    outputs = []
    for _ in range(3):
        q, k, v = make_inputs(rng, 1, 4, 2, 9, 33, 64)
        o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)
        check(o, lse, q, k, v, True, seed)
        outputs.append((o, lse, q, k, v))
    # Each call allocated its own outputs: the later calls left the
    # earlier results as they were.
    assert len({id(o) for o, *_ in outputs}) == 3
    for o, lse, q, k, v in outputs:
        check(o, lse, q, k, v, True, seed)


def test_the_other_arguments_are_part_of_the_key(rng, seed):
    q, k, v = make_inputs(rng, 1, 2, 2, 16, 16, 64)
    for causal in (True, False, True):
        for scale in (None, 0.05, 0.5):
            o = flashc.attention(q, k, v, causal=causal, scale=scale)
            check(o, None, q, k, v, causal, seed, scale)
    o, lse = flashc.attention(q, k, v, return_lse=True)
    check(o, lse, q, k, v, False, seed)
    qn, kn, vn = (np.ascontiguousarray(np.swapaxes(x, 1, 2))
                  for x in (q, k, v))
    o = flashc.attention(qn, kn, vn, layout="bnhd")
    check(np.swapaxes(o, 1, 2), None, q, k, v, False, seed)


def test_given_outputs_are_written(rng, seed):
    q, k, v = make_inputs(rng, 1, 2, 1, 5, 40, 64)
    for _ in range(2):
        out = np.full(q.shape, np.nan, dtype=np.float32)
        lse = np.full(q.shape[:3], np.nan, dtype=np.float32)
        o, l = flashc.attention(q, k, v, out=out, lse=lse)
        assert o is out and l is lse
        check(out, lse, q, k, v, False, seed)


def test_a_repeated_call_refuses_overlapping_outputs(rng):
    # q, k, v and out of one shape: out=k has the form of the first
    # call's out, and must still be refused.
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64)
    flashc.attention(q, k, v, out=np.empty_like(q))
    with pytest.raises(E, match="^out overlaps k: an output must not"):
        flashc.attention(q, k, v, out=k)
    # An lse of q's memory with the strides of a dense one.
    lse = np.empty(q.shape[:3], dtype=np.float32)
    flashc.attention(q, k, v, out=np.empty_like(q), lse=lse)
    inside_q = np.lib.stride_tricks.as_strided(q, shape=lse.shape,
                                               strides=lse.strides)
    with pytest.raises(E, match="^lse overlaps q"):
        flashc.attention(q, k, v, out=np.empty_like(q), lse=inside_q)
    out = np.empty_like(q)
    inside_out = np.lib.stride_tricks.as_strided(out, shape=lse.shape,
                                                 strides=lse.strides)
    with pytest.raises(E, match="^lse overlaps out: the two outputs"):
        flashc.attention(q, k, v, out=out, lse=inside_out)


def test_a_repeated_call_refuses_unaligned_addresses(rng):
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64)
    flashc.attention(q, k, v)
    qu = unaligned(q)
    assert quick_key(qu, k, v) is None and quick_key(q, k, v) is not None
    with pytest.raises(E, match="^q is not aligned to its element size"):
        flashc.attention(qu, k, v)


def test_flags_and_byte_order_take_the_full_path(rng):
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64)
    out = np.empty_like(q)
    flashc.attention(q, k, v, out=out)
    out.flags.writeable = False
    with pytest.raises(E, match="^out is read-only"):
        flashc.attention(q, k, v, out=out)
    # Strides that are not whole elements (6 bytes over the keys of f32),
    # and a writable output whose elements overlap (stride 0).
    raw = np.zeros(k.nbytes * 2, dtype=np.uint8)
    odd = np.lib.stride_tricks.as_strided(
        raw.view(np.float32), shape=k.shape,
        strides=(k.strides[0] * 2, k.strides[1] * 2, 6, 4))
    with pytest.raises(E, match="^k has strides .* bytes, not whole "
                                "elements"):
        flashc.attention(q, odd, v)
    # 3-byte strides over dimensions of one element: numpy calls such an
    # array aligned.
    single = np.lib.stride_tricks.as_strided(
        np.zeros(64, np.float32), shape=(1, 1, 1, 64),
        strides=(3, 3, 3, 4))
    assert single.flags.aligned
    one = make_inputs(rng, 1, 1, 1, 1, 8, 64)
    flashc.attention(*one)
    with pytest.raises(E, match=r"^q has strides \(3, 3, 3, 4\) bytes, "
                                "not whole elements"):
        flashc.attention(single, one[1], one[2])
    flashc.attention(q, k, v, out=np.empty_like(q))
    flat = np.lib.stride_tricks.as_strided(
        np.empty_like(q), shape=q.shape,
        strides=q.strides[:2] + (0, q.strides[3]))
    with pytest.raises(E, match="^out has stride 0 over a dimension of 8"):
        flashc.attention(q, k, v, out=flat)
    swapped = q.astype(q.dtype.newbyteorder())
    with pytest.raises(E, match="^q is not in the machine's byte order"):
        flashc.attention(swapped, k, v)


def test_no_tensor_is_kept_alive(rng):
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64)
    for _ in range(2):
        out = flashc.attention(q, k, v)
    refs = [weakref.ref(x) for x in (q, k, v, out)]
    del q, k, v, out
    gc.collect()
    assert all(r() is None for r in refs)


def test_subclasses_take_the_checked_path(rng, seed):
    class Sub(np.ndarray):
        pass
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64)
    qs = q.view(Sub)
    assert quick_key(qs, k, v) is None
    assert quick_key(q, k, v) is not None
    for _ in range(2):
        check(flashc.attention(qs, k, v), None, q, k, v, False, seed)


def test_calls_kept_are_bounded(rng):
    # The scale is part of the key (and needs no new kernel).
    served = flashc._attention_served  # pylint: disable=protected-access
    q, k, v = make_inputs(rng, 1, 1, 1, 1, 3, 64)
    for n in range(1, served.LIMIT + 20):
        flashc.attention(q, k, v, scale=1.0 / n)
    assert len(served) == served.LIMIT


def test_compiled_kernel_repeats(rng, seed):
    spec = flashc.AttentionSpec(heads=4, kv_heads=2, head_dim=64,
                                causal=True, with_lse=True)
    kernel = flashc.compile(spec)
    for splits in (0, 3, 1):
        q, k, v = make_inputs(rng, 2, 4, 2, 3, 70, 64)
        o, lse = kernel(q, k, v, return_lse=True, splits=splits)
        check(o, lse, q, k, v, True, seed)
        o = kernel(q, k, v)
        check(o, None, q, k, v, True, seed)
    kernel(q, k, v, out=np.empty_like(q))
    with pytest.raises(E, match="^out overlaps q"):
        kernel(q, k, v, out=q)


def test_bundle_repeats_in_the_simulator(tmp_path, rng, seed):
    bundle = flashc.load_bundle(write_bundle(
        tmp_path, "--groups", "2", "--causal", "no", "--lse", "no",
        "--variants", "decode"))
    for splits in (0, 2, 0):
        q, k, v = make_inputs(rng, 1, 4, 2, 1, 45, 64, dtype=np.float16)
        out = bundle.attention(q, k, v, simulate=True, splits=splits)
        check(out, None, q, k, v, False, seed)
    with pytest.raises(E, match="^q is not aligned to its element size"):
        bundle.attention(unaligned(q), k, v, simulate=True)


def test_torch_repeated_calls(rng, seed):
    torch = import_torch()
    for _ in range(3):
        q, k, v = (torch.from_numpy(x) for x in
                   make_inputs(rng, 1, 2, 2, 7, 19, 64))
        o = flashc.attention(q, k, v, causal=True)
        assert isinstance(o, torch.Tensor)
        check(o.numpy(), None, q.numpy(), k.numpy(), v.numpy(), True, seed)
    # A lazy negation leaves shape, strides and dtype as they were, and
    # must still be refused.
    neg = torch._neg_view(q)  # pylint: disable=protected-access
    assert quick_key(neg, k, v) is None
    with pytest.raises(E, match="lazy conjugate or negation bit"):
        flashc.attention(neg, k, v, causal=True)
    with pytest.raises(E, match="^q: cannot read the tensor"):
        flashc.attention(q.to_sparse(), k, v, causal=True)
    flashc.attention(q, k, v, causal=True,
                     out=torch.empty_like(v)[:, :, :7])
    with pytest.raises(E, match="^out overlaps v"):
        flashc.attention(q, k, v, causal=True, out=v[:, :, :7])


def _views(rng, shape, dtype, form):
    """A [B, H, N, D] array of ``shape`` with random values, laid out as
    ``form`` says: dense, strided over N, a transposed view, a few
    elements into its buffer, or one byte into it (misaligned)."""
    b, h, n, d = shape
    values = rng.standard_normal(shape).astype(dtype)
    if form == "dense":
        return values
    if form == "headstrided":  # Not dense over D: always refused.
        x = np.zeros((b, h, n, 2 * d), dtype=dtype)[..., ::2]
    elif form == "strided":
        x = np.zeros((b, h, 2 * n, d), dtype=dtype)[:, :, ::2]
    elif form == "transposed":
        x = np.zeros((b, n, h, d), dtype=dtype).swapaxes(1, 2)
    elif form == "offset":
        buffer = np.zeros(values.size + 3, dtype=dtype)
        x = buffer[int(rng.integers(1, 4)):][:values.size].reshape(shape)
    else:
        return unaligned(values)
    x[...] = values
    return x


def _outcome(call):
    """("ok", results) or (exception type, message) of ``call()``."""
    try:
        result = call()
    except Exception as e:  # pylint: disable=broad-except
        return type(e), str(e)
    if not isinstance(result, tuple):
        result = (result,)
    return "ok", tuple(np.array(r, copy=True) for r in result)


@pytest.fixture
def short_path(monkeypatch):
    """A list that gets, for each call that tries the short path, whether
    the short path served it."""
    served = []
    run = flashc._QuickCall.run  # pylint: disable=protected-access

    def counted(self, *args):
        result = run(self, *args)
        served.append(result is not None)
        return result
    monkeypatch.setattr(flashc._QuickCall, "run", counted)  # pylint: disable=protected-access
    return served


@pytest.fixture(scope="module")
def sim_bundle(tmp_path_factory):
    """sm_80 kernels for the simulator: f16, group 2, D = 64, every mask,
    with and without LSE, prefill and decode, for 16-byte and (the
    fallbacks) 2-byte aligned tensors."""
    return flashc.load_bundle(write_bundle(
        tmp_path_factory.mktemp("bundle"), "--groups", "2", "--causal",
        "both", "--lse", "both", "--variants", "prefill,decode",
        "--alignments", "16,2"))


@pytest.mark.parametrize("entry", ["attention", "kernel", "bundle"])
def test_repeated_calls_agree_with_the_full_path(entry, rng, seed,
                                                 short_path, request):
    # Random calls drawn from a few call forms (so that keys repeat: the
    # layout, each tensor's strides, the head counts and dims, the
    # arguments), with lengths drawn afresh (decode-shaped or not, as the
    # form says), fresh data and, now and then, a defect that keeps the
    # form (a misaligned tensor, one not dense over the head dim, an
    # output over an input's memory or of the wrong length, lengths of k
    # and v that disagree) or changes it (a read-only output, a dtype).
    # Each call runs with the entry point's table of served calls as the
    # calls before left it, then again with the table emptied (the full
    # path). Both must end alike: the same error, or the same results,
    # which match float64. flashc.attention and a compiled Kernel on the
    # CPU (f32); a bundle's sm_80 kernels in the simulator (f16, group 2,
    # D = 64, fewer calls).
    if entry == "bundle":
        bundle = request.getfixturevalue("sim_bundle")
        served = bundle._served  # pylint: disable=protected-access
        heads = [(1, 2, 1, 64, 64), (2, 4, 2, 64, 64)]
        dtype, calls, lengths = np.float16, 60, 24
    else:
        served = flashc._attention_served  # pylint: disable=protected-access
        heads = [(1, 2, 2, 16, 16), (2, 4, 2, 32, 32), (1, 2, 1, 16, 8)]
        dtype, calls, lengths = np.float32, 200, 50
    forms = ["dense", "dense", "strided", "transposed", "offset"]
    templates = []
    for _ in range(6):
        templates.append(dict(
            heads=heads[rng.integers(len(heads))],
            decode=bool(rng.integers(2)),
            forms=[forms[rng.integers(len(forms))] for _ in range(4)],
            causal=bool(rng.integers(2)), scale=[None, 0.3][rng.integers(2)],
            return_lse=bool(rng.integers(2)), out=bool(rng.integers(2)),
            lse=bool(rng.integers(2)),
            layout=["bhnd", "bnhd"][rng.integers(2)]))
        if entry == "kernel":
            b, hq, hkv, d, dv = templates[-1]["heads"]
            templates[-1]["kernel"] = flashc.compile(flashc.AttentionSpec(
                heads=hq, kv_heads=hkv, head_dim=d, head_dim_v=dv,
                causal=templates[-1]["causal"],
                scale=templates[-1]["scale"],
                with_lse=templates[-1]["return_lse"],
                layout=templates[-1]["layout"]))
            served = None  # Each kernel's own table, below.
    if served is not None:
        served.clear()
    accepted = refused = 0
    short = short_path  # The calls that took the short path.
    for trial in range(calls):
        t = templates[rng.integers(len(templates))]
        b, hq, hkv, d, dv = t["heads"]
        nq = int(rng.integers(1, 17) if t["decode"] else
                 rng.integers(17, 40))
        nk = int(rng.integers(1, lengths))

        def tensor(shape, form):
            if form == "dense":
                form = rng.choice(["dense"] * 22 + ["misaligned"] * 2 +
                                  ["headstrided"])
            return _views(rng, shape, dtype, str(form))

        def order(shape):  # [B, H, N, D] in the call's layout
            return shape if t["layout"] == "bhnd" else (
                shape[0], shape[2], shape[1], shape[3])
        q = tensor(order((b, hq, nq, d)), t["forms"][0])
        k = tensor(order((b, hkv, nk, d)), t["forms"][1])
        v = tensor(order((b, hkv, nk if rng.random() > 0.03 else nk + 1,
                          dv)), t["forms"][2])
        if rng.random() < 0.03:
            v = v.astype(np.float32 if dtype == np.float16 else np.float16)
        out = lse = None
        if t["out"]:
            out = tensor(order((b, hq, nq, dv)), t["forms"][3])
            defect = rng.random()
            if defect < 0.05:
                out.flags.writeable = False
            elif defect < 0.15 and q.nbytes >= out.nbytes:
                out = np.lib.stride_tricks.as_strided(
                    q, shape=out.shape, strides=out.strides)
            elif defect < 0.18:
                out = out[:, :, :-1] if nq > 1 else np.concatenate(
                    (out, out), axis=2)
        if t["return_lse"] and t["lse"]:
            lse = np.empty((b, hq, nq), dtype=np.float32)
            if rng.random() < 0.1 and k.nbytes >= lse.nbytes:
                lse = np.lib.stride_tricks.as_strided(
                    k, shape=lse.shape, strides=lse.strides)

        def call():
            if entry == "kernel":
                return t["kernel"](q, k, v, return_lse=t["return_lse"],
                                   out=out, lse=lse)
            if entry == "bundle":
                return bundle.attention(
                    q, k, v, causal=t["causal"], scale=t["scale"],
                    return_lse=t["return_lse"], out=out, lse=lse,
                    layout=t["layout"], simulate=True)
            return flashc.attention(q, k, v, causal=t["causal"],
                                    scale=t["scale"],
                                    return_lse=t["return_lse"], out=out,
                                    lse=lse, layout=t["layout"])
        repeated = _outcome(call)
        owner = {"kernel": t.get("kernel"), "bundle": served}.get(entry)
        table = (owner._served if entry == "kernel" else served)._found  # pylint: disable=protected-access
        del owner
        kept = dict(table)
        table.clear()
        checked = _outcome(call)
        added = dict(table)
        table.clear()
        table.update(kept)
        table.update(added)
        where = f"{entry}, trial {trial}, seed {seed}"
        assert repeated[0] == checked[0], (where, repeated, checked)
        if checked[0] != "ok":
            assert repeated[1] == checked[1], where
            assert issubclass(checked[0], flashc.FlashcError), where
            refused += 1
            continue
        accepted += 1
        for a, b_ in zip(repeated[1], checked[1]):
            assert np.array_equal(a, b_, equal_nan=True), where

        def bhnd(x):
            return x if t["layout"] == "bhnd" else np.swapaxes(x, 1, 2)
        check(bhnd(checked[1][0]),
              checked[1][1] if t["return_lse"] else None, bhnd(q), bhnd(k),
              bhnd(v), t["causal"], seed, t["scale"])
    # Both kinds of outcome were drawn, and most accepted calls took the
    # short path.
    assert accepted > calls // 4 and refused > calls // 20, (accepted,
                                                             refused)
    assert short.count(True) > calls // 4, short.count(True)


def test_a_decode_loop_takes_the_short_path(rng, seed, short_path):
    # Step i reads the first n + i keys of a cache: the lengths change at
    # every call, the form does not.
    short = short_path
    k_cache, v_cache = (rng.standard_normal((2, 2, 60, 64)).astype(
        np.float32) for _ in range(2))
    for step in range(20):
        q = rng.standard_normal((2, 8, 1, 64)).astype(np.float32)
        nk = 30 + step
        o = flashc.attention(q, k_cache[:, :, :nk], v_cache[:, :, :nk])
        check(o, None, q, k_cache[:, :, :nk], v_cache[:, :, :nk], False,
              seed)
    assert short.count(True) >= 19


def test_bundle_decode_and_prefill_calls_alternate(tmp_path, rng, seed):
    # One form, decode-shaped and not: each runs its own variant.
    bundle = flashc.load_bundle(write_bundle(
        tmp_path, "--groups", "2", "--causal", "no", "--lse", "no",
        "--variants", "prefill,decode"))
    for nq in (1, 30, 1, 30):
        q, k, v = make_inputs(rng, 1, 4, 2, nq, 40, 64, dtype=np.float16)
        out = bundle.attention(q, k, v, simulate=True)
        check(out, None, q, k, v, False, seed)
    found = bundle._served._found.values()  # pylint: disable=protected-access
    decode = {v["id"]: v["decode"] for v in bundle.variants}
    assert sorted(decode[bundle.variants[index]["id"]]
                  for index, _ in found) == [False, True]


def test_the_full_paths_message_for_what_the_kernel_refuses(rng):
    # Keys of 2^56 rows (a broadcast view): the spec's check refuses it on
    # the full path; on the short path the kernel refuses it, and the full
    # path then reports its own message.
    q, k, v = make_inputs(rng, 1, 1, 1, 1, 8, 8)
    huge = np.broadcast_to(np.zeros((1, 1, 1, 8), np.float32),
                           (1, 1, 2**56, 8))
    served = flashc._attention_served  # pylint: disable=protected-access
    served.clear()
    with pytest.raises(E) as fresh:
        flashc.attention(q, huge, huge)
    flashc.attention(q, k, v)
    with pytest.raises(E) as repeated:
        flashc.attention(q, huge, huge)
    assert str(repeated.value) == str(fresh.value)
