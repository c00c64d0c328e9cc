"""flashc: attention kernels compiled by flashc, from Python.

One call::

    import flashc
    o = flashc.attention(q, k, v, causal=True)          # numpy: the CPU
    o, lse = flashc.attention(q, k, v, return_lse=True)

    # Drop-in forms, same names and arguments as the libraries':
    o = flashc.flash_attn_func(q, k, v, causal=True)     # [B, N, H, D]
    o = flashc.scaled_dot_product_attention(q, k, v)     # [B, H, N, D]

Every entry point names its layout, the order of the tensors' dimensions:
``layout="bhnd"`` (``flashc.attention``'s default, PyTorch's
scaled_dot_product_attention's) reads ``q`` as ``[B, Hq, Nq, D]``, ``k`` as
``[B, Hkv, Nk, D]`` and ``v`` as ``[B, Hkv, Nk, Dv]``; ``layout="bnhd"``
(FlashAttention's flash_attn_func) as ``[B, Nq, Hq, D]``, ``[B, Nk, Hkv,
D]`` and ``[B, Nk, Hkv, Dv]``. The output comes in the same layout; the LSE
is ``[B, Hq, Nq]`` in both. Either way the strides are the arrays' own (no
copy): any view whose head dimension is dense works. Grouped-query and
multi-query attention follow from Hq and Hkv. Where the arrays live picks
the target: numpy arrays run on the
CPU, CUDA tensors (DLPack or ``__cuda_array_interface__``) on the GPU on the
tensor's current stream, and ``target="sm_80-sim"`` runs the GPU kernel in
flashc's PTX simulator on numpy arrays. Kernels are compiled once per
(dtype, GQA group, head dims, mask, LSE, target) and cached: other
batch sizes, sequence lengths and scales reuse them. A compile is logged (one
line at INFO) on the ``flashc`` logger of the ``logging`` module.

The explicit form: ``flashc.AttentionSpec``, ``flashc.compile(spec,
target)`` (a callable ``Kernel`` with ``ir(stage)``, ``ptx`` and
``metadata``), ``flashc.cost(spec, ...)`` and ``flashc.load_bundle(path)``
for precompiled GPU kernels, which works without the compiler module.

Every error is a ``flashc.FlashcError`` (a ``ValueError``) whose message
names the argument or carries the C++ layer's message; an argument of the
wrong type raises ``flashc.FlashcTypeError``, a ``FlashcError`` that is also
a ``TypeError``.
"""

import logging
import math
import numbers
import os
import threading
import time

import numpy as np

from . import _runtime
from . import _tensors
from ._version import __version__
from ._combine import combine
from ._runtime import FlashcError, FlashcTypeError
from ._tensors import got as _got

__all__ = [
    "AttentionSpec", "Bundle", "FlashcError", "FlashcTypeError", "Kernel",
    "LAYOUTS", "attention", "cache_size", "combine", "compile",
    "compile_options", "cost",
    "flash_attn_func", "load_bundle", "scaled_dot_product_attention",
    "set_cache_directory",
]

_log = logging.getLogger("flashc")

# The layouts a call may name: the order of q, k, v and out's dimensions.
LAYOUTS = ("bhnd", "bnhd")

_compiler_lock = threading.Lock()
_compiler_module = None


def _compiler_api():
    """The compiler extension, imported on first use."""
    global _compiler_module  # pylint: disable=global-statement
    with _compiler_lock:
        if _compiler_module is None:
            try:
                from . import _compiler as module  # pylint: disable=import-outside-toplevel
            except ImportError as e:
                raise FlashcError(
                    "the flashc compiler module is not available (" + str(e) +
                    "); precompiled GPU kernels still load with "
                    "flashc.load_bundle") from e
            _compiler_module = module
        return _compiler_module


def _integer(value, name, minimum=None):
    """``value`` as a 64-bit integer (at least ``minimum`` when given), or
    FlashcTypeError / FlashcError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, np.integer)):
        raise FlashcTypeError(f"{name} must be an integer, got {_got(value)}")
    result = int(value)
    if not -2**63 <= result < 2**63:
        raise FlashcError(f"{name} {result} does not fit 64 bits")
    if minimum is not None and result < minimum:
        raise FlashcError(f"{name} must be at least {minimum}, got {result}")
    return result


def _boolean(value, name):
    """``value`` as a bool (a Python or numpy bool), or FlashcTypeError
    naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise FlashcTypeError(f"{name} must be a bool, got {_got(value)}")
    return bool(value)


def _string(value, name):
    """``value``, a str, or FlashcTypeError naming ``name``."""
    if not isinstance(value, str):
        raise FlashcTypeError(f"{name} must be a string, got {_got(value)}")
    return value


def _scale(value, name="scale"):
    """None, or ``value`` as a positive, finite float."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Real):
        raise FlashcTypeError(f"{name} must be a number or None, got "
                              f"{_got(value)}")
    try:
        result = float(value)
    except (OverflowError, ValueError, TypeError) as e:
        raise FlashcError(f"{name} {value!r} is not a float: {e}") from e
    if not math.isfinite(result) or result <= 0:
        raise FlashcError(f"{name} must be finite and positive, got {result}")
    f32 = np.finfo(np.float32)
    if not float(f32.tiny) <= result <= float(f32.max):
        raise FlashcError(f"{name} {result:g} is not a normal f32 value (the "
                          "kernels scale in f32)")
    return result


def _layout(value, name="layout"):
    """``value``, one of LAYOUTS."""
    if _string(value, name) not in LAYOUTS:
        raise FlashcError(f"unknown {name} {value!r}; expected 'bhnd' ([B, "
                          "H, N, D], as PyTorch's scaled_dot_product_attention)"
                          " or 'bnhd' ([B, N, H, D], as FlashAttention's "
                          "flash_attn_func)")
    return value


def _dtype_name(value, name="dtype"):
    """flashc's name (f32, f16, bf16) of a dtype given as such a name, a
    numpy dtype or its name, or a numpy scalar type."""
    if isinstance(value, str) and value in ("f32", "f16", "bf16"):
        return value
    if not isinstance(value, (str, np.dtype, type)):
        raise FlashcTypeError(
            f"{name} must be 'f32', 'f16', 'bf16' or a numpy dtype, got "
            f"{_got(value)}")
    try:
        dtype = np.dtype(value)
    except Exception as e:  # pylint: disable=broad-except
        raise FlashcError(f"{name} {value!r} is not a dtype") from e
    try:
        return _tensors.numpy_dtype_name(dtype)
    except FlashcError as e:
        raise FlashcError(f"{name}: {e}") from e


def _path(value, name="path"):
    """A file system path (str, bytes or os.PathLike) as bytes, the form
    the extension modules take (any name the file system holds, encoded as
    os.fsencode does); FlashcTypeError for other types, FlashcError for a
    path holding a NUL."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise FlashcTypeError(f"{name} must be a string, bytes or an "
                              f"os.PathLike, got {_got(value)}")
    try:
        path = os.fsencode(value)
    except TypeError as e:  # __fspath__ gave something else
        raise FlashcTypeError(f"{name}: {e}") from e
    except Exception as e:  # pylint: disable=broad-except
        raise FlashcError(f"{name} cannot be encoded: {e}") from e
    if b"\0" in path:
        raise FlashcError(f"{name} {os.fsdecode(path)!r} contains a NUL "
                          "character")
    return path


def _native(function, *args):
    """Calls an extension function. Its errors are FlashcError or
    FlashcTypeError already; anything else (a defect) is turned into one
    here, so that no other exception escapes the package."""
    try:
        return function(*args)
    except FlashcError:
        raise
    except TypeError as e:
        raise FlashcTypeError(f"{_name_of(function)}: {e}") from e
    except (ArithmeticError, AttributeError, LookupError, RuntimeError,
            UnicodeError, ValueError, MemoryError, OSError) as e:
        raise FlashcError(f"{_name_of(function)}: {type(e).__name__}: "
                          f"{e}") from e


def _name_of(function):
    return getattr(function, "__name__", "flashc")


def _mask(value, name="mask"):
    """``value``, one of the masks flashc knows (``_runtime.mask_kinds()``)."""
    kinds = _runtime.mask_kinds()
    if _string(value, name) not in kinds:
        raise FlashcError(f"unknown {name} {value!r}; expected one of "
                          f"{', '.join(repr(k) for k in kinds)}")
    return value


def _mask_of(causal, mask):
    """The mask a call names: ``mask`` (a name) or, for ``causal=True``,
    "causal"; both given must agree."""
    causal = _boolean(causal, "causal")
    if mask is None:
        return "causal" if causal else "none"
    mask = _mask(mask)
    if causal and mask != "causal":
        raise FlashcError(f"causal=True contradicts mask={mask!r}")
    return mask


class AttentionSpec(_runtime.AttentionProblem):
    """One attention problem: O = softmax(scale Q K^T [+ mask]) V.

    flashc's own problem description (``AttentionProblem``, from the C++
    library), with Python's checks on every field. Sizes default to a
    single query over a single key; ``scale`` None means 1/sqrt(head_dim);
    ``head_dim_v`` 0 means ``head_dim``; ``dtype`` is "f32", "f16" or
    "bf16" (or a numpy dtype); ``mask`` names which keys a query sees
    ("none" or "causal"; ``causal=True`` is ``mask="causal"``); ``layout``
    ("bhnd" or "bnhd") is the order of the dimensions of the tensors a
    kernel compiled from it takes.
    """

    _FIELDS = _runtime.AttentionProblem.FIELDS

    def __init__(self, *, batch=1, heads=1, kv_heads=None, seq_q=1, seq_kv=1,
                 head_dim=64, head_dim_v=0, dtype="f32", causal=False,
                 mask=None, scale=None, with_lse=False, layout="bhnd"):
        super().__init__()
        self.batch = batch
        self.heads = heads
        self.kv_heads = self.heads if kv_heads is None else kv_heads
        self.seq_q = seq_q
        self.seq_kv = seq_kv
        self.head_dim = head_dim
        self.head_dim_v = head_dim_v
        self.dtype = dtype
        self.mask = _mask_of(causal, mask)
        self.scale = scale
        self.with_lse = with_lse
        self.layout = layout

    def __setattr__(self, name, value):
        # Every field is checked when it is set, in the constructor or
        # later: the extension modules only ever see valid types.
        if name in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                    "head_dim", "head_dim_v"):
            value = _integer(value, name)
        elif name == "dtype":
            value = _dtype_name(value)
        elif name in ("causal", "with_lse"):
            value = _boolean(value, name)
        elif name == "mask":
            value = _mask(value)
        elif name == "scale":
            value = _scale(value)
        elif name == "layout":
            value = _layout(value)
        super().__setattr__(name, value)

    @classmethod
    def _trusted(cls, **fields):
        """A spec of fields that are valid already (the sizes and dtype of
        described tensors, and arguments the public entry points checked),
        set without ``__setattr__``'s checks: the per-call path of
        ``_prepare``, where the checks cost more than the launch."""
        spec = cls.__new__(cls)
        _runtime.AttentionProblem.__init__(spec)
        setter = _runtime.AttentionProblem.__setattr__
        for name, value in fields.items():
            setter(spec, name, value)
        return spec

    @property
    def causal(self):
        """Whether the mask is causal (``mask == "causal"``)."""
        return self.mask == "causal"

    @causal.setter
    def causal(self, value):
        self.mask = "causal" if value else "none"

    def to_dict(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    def __repr__(self):
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"AttentionSpec({fields})"


def _to_bhnd(desc, layout):
    """A rank-4 tensor description in ``layout``'s order, as the same
    tensor in [B, H, N, D] order: its sizes and strides permuted."""
    if layout == "bhnd" or len(desc[2]) != 4:
        return desc
    data, dtype, sizes, strides, on_device = desc
    order = (0, 2, 1, 3)
    return (data, dtype, [sizes[i] for i in order],
            [strides[i] for i in order], on_device)


def _dims(layout):
    return "[B, H, N, D]" if layout == "bhnd" else "[B, N, H, D]"


def _allocate(q, on_device, shape, dtype, name):
    """A new output ``name`` next to ``q`` (a torch tensor for torch
    inputs, on the host too)."""
    try:
        if on_device or _tensors.is_torch(q):
            return _tensors.empty_like_device(q, shape, dtype)
        return np.empty(shape, dtype=_tensors.numpy_dtype(dtype))
    except FlashcError:
        raise
    except Exception as e:  # pylint: disable=broad-except
        raise FlashcError(
            f"cannot allocate {name} of shape {tuple(shape)}: "
            f"{type(e).__name__}: {e}") from e


def _output_shapes(batch, heads, seq_q, value_dim, layout):
    """The shapes of the output (in ``layout``'s order) and of the LSE."""
    if layout == "bhnd":
        out = (batch, heads, seq_q, value_dim)
    else:
        out = (batch, seq_q, heads, value_dim)
    return out, (batch, heads, seq_q)


class _Call:
    """One call's spec and the descriptions of its tensors in [B, H, N, D]
    order (each with the object that keeps its data alive until the kernel
    has run)."""

    def __init__(self, spec, on_device, inputs):
        self.spec = spec
        self.on_device = on_device
        self.inputs = inputs

    def run(self, native_run, q, out, lse, stream, return_lse):
        """Allocates the outputs next to ``q`` when not given, describes
        them, checks that no output overlaps an input or the other output,
        calls ``native_run(q, k, v, out, lse, stream)`` with the
        descriptions, and returns ``o`` or ``(o, lse)``."""
        spec = self.spec
        out_shape, lse_shape = _output_shapes(
            spec.batch, spec.heads, spec.seq_q, spec.value_dim, spec.layout)
        if out is None:
            out = _allocate(q, self.on_device, out_shape, spec.dtype, "out")
        if spec.with_lse and lse is None:
            lse = _allocate(q, self.on_device, lse_shape, "f32", "lse")
        desc, keep = _tensors.describe(out, "out", output=True)
        outputs = [(_to_bhnd(desc, spec.layout), keep)]
        if lse is not None:
            outputs.append(_tensors.describe(lse, "lse", output=True))
        for (desc, _), name in zip(outputs, ("out", "lse")):
            if desc[4] != self.on_device:
                raise FlashcError(f"{name} is not on the device of q, k and v")
        named_inputs = list(zip(("q", "k", "v"), self.inputs))
        for name, output in zip(("out", "lse"), outputs):
            for other, tensor in named_inputs:
                if _tensors.overlaps(output, tensor):
                    raise FlashcError(
                        f"{name} overlaps {other}: an output must not share "
                        "memory with an input")
        if len(outputs) == 2 and _tensors.overlaps(outputs[1], outputs[0]):
            raise FlashcError("lse overlaps out: the two outputs must not "
                              "share memory")
        if stream is None:
            stream = _tensors.cuda_stream(q) if self.on_device else 0
        descs = [d for d, _ in self.inputs + outputs]
        keep = [k for _, k in self.inputs + outputs]
        _native(native_run, *descs[:4], descs[4] if len(descs) > 4 else None,
                int(stream))
        del keep
        return (out, lse) if return_lse else out


def _bhnd(sizes, strides, layout):
    """Rank-4 sizes and strides in ``layout``'s order, in [B, H, N, D]
    order."""
    if layout == "bhnd":
        return sizes, strides
    return ((sizes[0], sizes[2], sizes[1], sizes[3]),
            (strides[0], strides[2], strides[1], strides[3]))


def _span(data, dtype, sizes, strides, output):
    """The byte range ``(first, end)`` of a tensor's elements, or None when
    a size is 0 or, over a dimension of more than one element, a stride is
    negative (or 0 for an output)."""
    last = 0
    for n, st in zip(sizes, strides):
        if n > 1:
            if st < 0 or (output and st == 0):
                return None
            last += (n - 1) * st
        elif n < 1:
            return None
    item = _tensors.ITEM_BYTES[dtype]
    if data % item:
        return None
    return data, data + (last + 1) * item


class _QuickCall:
    """A call whose tensors ``_tensors.quick`` describes, checked here as
    ``_prepare`` and ``_Call.run`` check them, or more strictly: a call
    that fails a check here takes their path, which accepts it or refuses
    it naming why. ``key`` is what a call's kernel or variant depends on:
    each tensor's kind, dtype and device, which outputs were given, the
    layout, the GQA group, the head dims and whether the call is
    decode-shaped (Nq <= 16), but no size, stride or address. An entry
    point keeps the kernel or variant of each key its full path served
    (``_Served``), so that a decode loop over a growing KV cache, whose
    lengths change at every call, repeats none of that path."""

    __slots__ = ("key", "tensors", "parts", "layout")

    @classmethod
    def of(cls, tensors, layout):
        """The call of ``tensors`` (q, k, v, out, lse; out and lse may be
        None) in ``layout``, or None."""
        parts = []
        torch_tensor = _tensors.torch_tensor_type()
        for i, x in enumerate(tensors):
            if x is None:
                if i < 3:
                    return None
                parts.append(None)
                continue
            d = _tensors.quick(x, torch_tensor)
            if d is None:
                return None
            kind, data, dtype, sizes, strides, on_device, writeable = d
            if i < 4:
                if len(sizes) != 4:
                    return None
                sizes, strides = _bhnd(sizes, strides, layout)
            elif len(sizes) != 3:
                return None
            span = _span(data, dtype, sizes, strides, i >= 3)
            if span is None or (i >= 3 and not writeable):
                return None
            parts.append((kind, data, dtype, sizes, strides, on_device, span))
        q, k, v, out, lse = parts
        dtype, on_device = q[2], q[5]
        b, hq, nq, d = q[3]
        _, hkv, nk, _ = k[3]
        dv = v[3][3]
        if (k[2] != dtype or v[2] != dtype or k[5] != on_device or
                v[5] != on_device or k[3] != (b, hkv, nk, d) or
                v[3] != (b, hkv, nk, dv) or hq % hkv):
            return None
        for p in (q, k, v):
            if p[3][3] > 1 and p[4][3] != 1:
                return None
        spans = [q[6], k[6], v[6]]
        for p, shape, out_dtype in ((out, (b, hq, nq, dv), dtype),
                                    (lse, (b, hq, nq), "f32")):
            if p is None:
                continue
            if p[3] != shape or p[2] != out_dtype or p[5] != on_device:
                return None
            first, end = p[6]
            for other in spans:
                if first < other[1] and other[0] < end:
                    return None
            spans.append(p[6])
        call = cls()
        call.key = tuple(None if p is None else (p[0], p[2], p[5])
                         for p in parts) + (layout, hq // hkv, d, dv,
                                            nq <= 16)
        call.tensors = tensors
        call.parts = parts
        call.layout = layout
        return call

    def _allocated(self, shape, dtype, name):
        """A new output of ``shape`` next to q, as its part; None where
        ``quick`` cannot describe it."""
        q = self.parts[0]
        x = _allocate(self.tensors[0], q[5], shape, dtype, name)
        d = _tensors.quick(x)
        if d is None:
            return x, None
        sizes, strides = d[3], d[4]
        if name == "out":
            sizes, strides = _bhnd(sizes, strides, self.layout)
        return x, (d[0], d[1], d[2], sizes, strides, d[5], None)

    def run(self, native_run, with_lse, stream, return_lse):
        """Allocates the outputs not given (the LSE ``with_lse``), calls
        ``native_run(q, k, v, out, lse, stream)`` with the descriptions
        and returns ``o`` or ``(o, lse)``; None, with nothing launched,
        where an output allocated cannot be described here."""
        q, k, v, out_part, lse_part = self.parts
        out, lse = self.tensors[3], self.tensors[4]
        b, hq, nq, _ = q[3]
        out_shape, lse_shape = _output_shapes(b, hq, nq, v[3][3],
                                              self.layout)
        if out is None:
            out, out_part = self._allocated(out_shape, q[2], "out")
        if with_lse and lse is None:
            lse, lse_part = self._allocated(lse_shape, "f32", "lse")
            if lse_part is None:
                return None
        if out_part is None:
            return None
        descs = [p[1:6] for p in (q, k, v, out_part)]
        lse_desc = lse_part[1:6] if lse_part is not None else None
        if stream is None:
            stream = _tensors.cuda_stream(self.tensors[0]) if q[5] else 0
        _native(native_run, *descs, lse_desc, stream)
        return (out, lse) if return_lse else out


class _Served:
    """What an entry point's full path found for each ``_QuickCall`` key
    it served (the variant, the kernel), at most ``LIMIT`` keys (when
    full, the key kept longest goes, however often it is used)."""

    LIMIT = 256

    def __init__(self):
        self._found = {}
        self._lock = threading.Lock()

    def get(self, key):
        return None if key is None else self._found.get(key)

    def put(self, key, found):
        if key is None:
            return
        with self._lock:  # Calls from threads put concurrently.
            if key not in self._found and len(self._found) >= self.LIMIT:
                self._found.pop(next(iter(self._found)), None)
            self._found[key] = found

    def clear(self):
        with self._lock:
            self._found.clear()

    def __len__(self):
        return len(self._found)


def _prepare(q, k, v, mask, scale, with_lse, layout="bhnd"):
    """The call's spec, after the checks a shape mismatch needs; ``q``,
    ``k`` and ``v`` are in ``layout``'s order."""
    devices = [_tensors.is_cuda(t, name) for t, name in ((q, "q"), (k, "k"),
                                                          (v, "v"))]
    if len(set(devices)) != 1:
        raise FlashcError("q, k and v are on different devices (host and "
                          "CUDA); move them to one")
    inputs = [_tensors.describe(t, name) for t, name in ((q, "q"), (k, "k"),
                                                         (v, "v"))]
    for ((_, _, sizes, strides, _), _), name in zip(inputs, "qkv"):
        if len(sizes) != 4:
            raise FlashcError(
                f"{name} has rank {len(sizes)} (shape {tuple(sizes)}); "
                f"expected {_dims(layout)} (layout '{layout}')")
        if 0 in sizes:
            raise FlashcError(f"{name} is empty (shape {tuple(sizes)}); every "
                              "size must be positive")
        if sizes[3] > 1 and strides[3] != 1:
            raise FlashcError(
                f"{name} is not contiguous in its last dimension (stride "
                f"{strides[3]} elements); the head dimension must be dense")
    inputs = [(_to_bhnd(d, layout), keep) for d, keep in inputs]
    (_, qt, qs, _, _), (_, kt, ks, _, _), (_, vt, vs, _, _) = [
        d for d, _ in inputs]
    if len({qt, kt, vt}) != 1:
        raise FlashcError(f"q, k and v have different dtypes ({qt}, {kt}, "
                          f"{vt})")
    b, hq, nq, d = qs
    if ks[0] != b or vs[0] != b:
        raise FlashcError(f"batch sizes differ: q {b}, k {ks[0]}, v {vs[0]}")
    if ks[1] != vs[1]:
        raise FlashcError(f"k has {ks[1]} heads but v has {vs[1]}")
    if hq % ks[1]:
        raise FlashcError(f"the {hq} query heads are not a multiple of the "
                          f"{ks[1]} KV heads (layout '{layout}': q "
                          f"{_dims(layout)})")
    if ks[3] != d:
        raise FlashcError(f"head dims differ: q has {d}, k has {ks[3]}")
    if ks[2] != vs[2]:
        raise FlashcError(f"k has {ks[2]} keys but v has {vs[2]}")
    # Every field is checked: the sizes and dtype by describe, the rest by
    # the callers (mask, scale, with_lse and layout validated).
    spec = AttentionSpec._trusted(  # pylint: disable=protected-access
        batch=b, heads=hq, kv_heads=ks[1], seq_q=nq, seq_kv=ks[2],
        head_dim=d, head_dim_v=vs[3] if vs[3] != d else 0, dtype=qt,
        mask=mask, scale=scale, with_lse=with_lse, layout=layout)
    return _Call(spec, devices[0], inputs)


_CHIPS = ("cpu", "sm_80", "sm_90a")
_TARGETS = "cpu, sm_80, sm_90a, sm_80-sim or sm_90a-sim"


def _split_target(target):
    """(chip, simulate) of a target name: "sm_80-sim" is ("sm_80", True)."""
    _string(target, "target")
    simulate = target.endswith("-sim")
    chip = target[:-4] if simulate else target
    if simulate and chip not in _CHIPS[1:]:
        raise FlashcError(f"unknown target {target!r}; expected {_TARGETS}")
    return chip, simulate


def _parse_target(target, on_device):
    """(chip or "cpu", simulate) for a target name and where the data is."""
    if target is None:
        if on_device:
            return _native(_runtime.cuda_chip), False
        return "cpu", False
    chip, simulate = _split_target(target)
    if chip not in _CHIPS:
        raise FlashcError(f"unknown target {target!r}; expected {_TARGETS}")
    if on_device and (simulate or chip == "cpu"):
        raise FlashcError(f"target '{target}' runs on host memory, but the "
                          "tensors are in CUDA device memory")
    if not on_device and chip != "cpu" and not simulate:
        raise FlashcError(
            f"target '{target}' needs CUDA tensors; numpy arrays run on the "
            f"CPU or in the simulator (target='{chip}-sim')")
    return chip, simulate


def _stream(value):
    """None, or a CUDA stream handle: an integer that fits a pointer."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, np.integer)):
        raise FlashcTypeError(f"stream must be an integer handle or None, "
                              f"got {_got(value)}")
    if not 0 <= int(value) < 2**64:
        raise FlashcError(f"stream {int(value)} is not a stream handle (it "
                          "must fit 64 bits unsigned)")
    return int(value)


class Kernel:
    """A compiled attention kernel. Call it with q, k, v of its spec's dtype,
    head dims and group size (query heads per KV head), in its spec's
    layout; the batch, head counts and sequence lengths may differ from the
    spec's."""

    def __init__(self, native, spec, target, simulate, resources=None):
        if not isinstance(native, _compiler_api().Kernel):
            raise FlashcTypeError(
                f"native must be a compiled kernel, got {_got(native)}; "
                "kernels come from flashc.compile")
        _check_spec(spec)
        self._native = native
        self.spec = spec
        self.target = target
        self.simulate = simulate
        self._resources = resources
        # The calls served so far (_QuickCall keys).
        self._served = _Served()

    def ir(self, stage):
        """The IR after pipeline stage ``stage`` (see ``metadata['stages']``)."""
        return _native(self._native.ir, _string(stage, "stage"))

    @property
    def ptx(self):
        """The PTX of a GPU kernel; None for a CPU kernel."""
        return _native(getattr, self._native, "ptx")

    @property
    def metadata(self):
        """Tiles, splits, stages and, for GPU kernels, the entry, grid,
        block, shared bytes, the variant's id and the alignment (bytes) it
        assumes of the tensors, its ``fallbacks`` (one dict per variant
        that ran tensors less aligned: ``alignment``, ``variant``,
        ``entry``, ``reason``) and, once assembled (``compile(...,
        assemble=True)``), the registers and spill bytes from ptxas (-1
        until then), as a dict."""
        meta = _native(getattr, self._native, "metadata")
        if self._resources:
            meta.update(self._resources)
        return meta

    def __call__(self, q, k, v, *, return_lse=False, splits=0, out=None,
                 lse=None, stream=None):
        """Runs the kernel; ``lse=`` implies ``return_lse``."""
        return_lse = _boolean(return_lse, "return_lse") or lse is not None
        splits = _integer(splits, "splits", minimum=0)
        stream = _stream(stream)
        if return_lse and not self.spec.with_lse:
            raise FlashcError(
                "this kernel was compiled without the log-sum-exp; compile "
                "an AttentionSpec(with_lse=True) to get it")
        with_lse = return_lse or self.spec.with_lse
        quick = _QuickCall.of((q, k, v, out, lse), self.spec.layout)
        key = None if quick is None else quick.key + (return_lse,)
        if self._served.get(key):
            result = quick.run(self._runner(splits), with_lse, stream,
                               return_lse)
            if result is not None:
                return result
        call = _prepare(q, k, v, self.spec.mask, self.spec.scale, with_lse,
                        self.spec.layout)
        result = call.run(self._runner(splits), q, out, lse, stream,
                          return_lse)
        self._served.put(key, True)
        return result

    def _runner(self, splits):
        """The native run of described tensors, for ``_Call.run`` and
        ``_QuickCall.run``."""
        def run(qd, kd, vd, od, ld, stream_handle):
            self._native.run(qd, kd, vd, od, ld, self.simulate, splits,
                             stream_handle)
        return run

    def __repr__(self):
        return (f"Kernel({self._native.spec}, layout={self.spec.layout!r}, "
                f"target={self.target!r})")


def _check_spec(spec):
    if not isinstance(spec, AttentionSpec):
        raise FlashcTypeError(f"spec must be a flashc.AttentionSpec, got "
                              f"{_got(spec)}")


def compile_options():
    """The compile options ``compile`` takes, from the compiler's one table
    of pipeline options: a list of dicts with name, kind ("int", "bool" or
    "str"), values (of an enum-like option), description and default."""
    return _native(_compiler_api().pipeline_options)


def compile(spec, target="cpu", **options):  # pylint: disable=redefined-builtin
    """Compiles ``spec`` for ``target`` ("cpu", "sm_80", "sm_90a", or
    "sm_80-sim" / "sm_90a-sim" to run the GPU kernel in the simulator).
    Options: those ``compile_options()`` lists (loop_order, block_q,
    block_kv, sram_bytes, splits, num_threads, vector_lanes, ...);
    assemble=True (GPU targets) also runs the toolkit's ptxas for the
    registers and spills in ``metadata``. Returns a cached kernel when one
    exists."""
    _check_spec(spec)
    chip, simulate = _split_target(target)
    assemble = _boolean(options.pop("assemble", False), "assemble")
    known = {o["name"]: o for o in compile_options()}
    checked = {}
    for name, value in options.items():
        option = known.get(name)
        if option is None:
            raise FlashcError(f"unknown compile option '{name}'; expected "
                              f"{', '.join(known)} or assemble")
        kind = option["kind"]
        checked[name] = (_integer(value, name) if kind == "int" else
                         _boolean(value, name) if kind == "bool" else
                         _string(value, name))
    api = _compiler_api()
    cached = _native(api.cache_size)
    start = time.perf_counter()
    native = _native(api.compile, spec, chip, checked)
    if _native(api.cache_size) != cached:
        _log.info("compiled attention kernel for %s (first use) in %.2f s",
                  _describe_spec(spec, target), time.perf_counter() - start)
    resources = None
    if assemble:
        if chip == "cpu":
            raise FlashcError("assemble=True is for GPU targets (ptxas)")
        resources = _native(native.assemble)
    return Kernel(native, spec, chip, simulate, resources)


def _describe_spec(spec, target):
    """One line naming what a kernel computes, for the compile log."""
    heads = (f"{spec.heads} heads" if spec.heads == spec.kv_heads else
             f"{spec.heads} query / {spec.kv_heads} KV heads")
    dims = (f"d={spec.head_dim}" if not spec.head_dim_v else
            f"d={spec.head_dim}/{spec.head_dim_v}")
    return (f"{spec.dtype}, {heads}, {dims}"
            f"{'' if spec.mask == 'none' else ', ' + spec.mask}"
            f"{', with LSE' if spec.with_lse else ''} on {target}")


# The kernel of each call flashc.attention served so far (_QuickCall
# keys).
_attention_served = _Served()


def attention(q, k, v, *, causal=False, mask=None, scale=None,
              return_lse=False, layout="bhnd", target=None, out=None,
              lse=None):
    """softmax(scale q k^T) v; returns ``o`` or ``(o, lse)`` (``lse=``
    implies ``return_lse``). ``layout`` names the order of q, k, v and
    out's dimensions: "bhnd" ([B, H, N, D], the default) or "bnhd" ([B, N,
    H, D]); the LSE is [B, H, N] in both. Causal masks are aligned at the
    bottom right: query i sees keys j <= i + Nk - Nq (SDPA's ``is_causal``
    aligns at the top left when Nq != Nk). ``mask`` names the mask
    ("none" or "causal"); ``causal=True`` is ``mask="causal"``. See the
    module's documentation for targets."""
    mask = _mask_of(causal, mask)
    scale = _scale(scale)
    return_lse = _boolean(return_lse, "return_lse") or lse is not None
    layout = _layout(layout)
    if target is not None:
        _split_target(target)
    quick = _QuickCall.of((q, k, v, out, lse), layout)
    key = None if quick is None else quick.key + (mask, scale, return_lse,
                                                  target)
    kernel = _attention_served.get(key)
    if kernel is not None:
        try:
            result = quick.run(kernel._runner(0), return_lse, None,  # pylint: disable=protected-access
                               return_lse)
        except FlashcError:
            # The full path refuses what the kernel refused, with its own
            # message (the spec's checks come first there).
            result = None
        if result is not None:
            return result
    call = _prepare(q, k, v, mask, scale, return_lse, layout)
    chip, simulate = _parse_target(target, call.on_device)
    kernel = compile(call.spec, chip + ("-sim" if simulate else ""))
    result = call.run(kernel._runner(0), q, out, lse, None, return_lse)  # pylint: disable=protected-access
    _attention_served.put(key, kernel)
    return result


def cost(spec, target="cpu", sram_bytes=None, loop_order="fa2"):
    """The IO cost report of ``spec`` on ``target`` as a dict: FLOPs, HBM
    traffic of the standard, algorithm-1 and FA2 loop orders, the chosen
    schedule and, on GPU targets, the CTA x wave prediction."""
    _check_spec(spec)
    _string(target, "target")
    _string(loop_order, "loop_order")
    sram = 0 if sram_bytes is None else _integer(sram_bytes, "sram_bytes")
    return _native(_compiler_api().cost, spec, target, sram,
                   loop_order)


def cache_size():
    """Kernels compiled so far in this process."""
    return _native(_compiler_api().cache_size)


def set_cache_directory(path):
    """Keeps the GPU kernels this process compiles in the bundle directory
    ``path`` (created when missing), and takes kernels from there instead of
    compiling them, in this process and later ones; ``load_bundle(path)``
    reads it with the runtime alone. ``None`` or ``""`` turns it off."""
    directory = b"" if path is None else _path(path)
    if directory and os.path.exists(directory) and not os.path.isdir(
            directory):
        raise FlashcError(f"path '{os.fsdecode(directory)}' is not a "
                          "directory")
    _native(_compiler_api().set_cache_directory, directory)


def _not_supported(name, value, default):
    """FlashcError when option ``name`` is set to anything but
    ``default``: options flashc does not implement are never ignored."""
    same = value is default
    if not same:
        try:
            same = bool(value == default)
        except Exception:  # pylint: disable=broad-except
            same = False
    if not same:
        raise FlashcError(f"{name}={value!r} is not supported yet (flashc "
                          f"supports only {name}={default!r}); see the "
                          "README's table of what is supported")


def _no_grad(tensors):
    """FlashcError when a tensor needs a gradient: flashc computes the
    forward pass only, and a result without a backward must not look like
    one that has it."""
    for t, name in tensors:
        if _tensors.is_torch(t) and getattr(t, "requires_grad", False):
            import torch  # pylint: disable=import-outside-toplevel
            if torch.is_grad_enabled():
                raise FlashcError(
                    f"{name} requires a gradient, but flashc computes the "
                    "forward pass only (no backward yet); call it under "
                    "torch.no_grad() or pass detached tensors")


def flash_attn_func(q, k, v, softmax_scale=None, causal=False,
                    return_lse=False, *, dropout_p=0.0, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False):
    """FlashAttention's ``flash_attn_func``: q ``[B, Nq, Hq, D]``, k ``[B,
    Nk, Hkv, D]``, v ``[B, Nk, Hkv, Dv]`` (layout "bnhd"), Hq a multiple of
    Hkv; returns out ``[B, Nq, Hq, Dv]``, or ``(out, lse)`` with
    ``return_lse`` (lse ``[B, Hq, Nq]``, f32, natural log, FlashAttention's
    ``softmax_lse``). ``softmax_scale`` None means 1/sqrt(D). ``causal``
    aligns the mask at the bottom right, as FlashAttention 2.1 and later:
    query i sees keys j <= i + Nk - Nq. ``dropout_p``, ``window_size``,
    ``softcap``, ``alibi_slopes`` and ``return_attn_probs`` are not
    supported yet: any value but their default raises FlashcError.
    ``deterministic`` is accepted (flashc's forward pass is deterministic).
    Runs where the tensors are, as ``flashc.attention``."""
    _not_supported("dropout_p", dropout_p, 0.0)
    _not_supported("window_size", tuple(window_size) if isinstance(
        window_size, (list, tuple)) else window_size, (-1, -1))
    _not_supported("softcap", softcap, 0.0)
    _not_supported("alibi_slopes", alibi_slopes, None)
    _not_supported("return_attn_probs", return_attn_probs, False)
    _boolean(deterministic, "deterministic")
    _no_grad(((q, "q"), (k, "k"), (v, "v")))
    return attention(q, k, v, causal=causal, scale=softmax_scale,
                     return_lse=return_lse, layout="bnhd")


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """PyTorch's ``torch.nn.functional.scaled_dot_product_attention``:
    query ``[B, Hq, L, E]``, key ``[B, Hkv, S, E]``, value ``[B, Hkv, S,
    Ev]`` (layout "bhnd"); returns ``[B, Hq, L, Ev]``. ``scale`` None means
    1/sqrt(E). ``is_causal`` is PyTorch's mask, aligned at the top left
    (query i sees keys j <= i, whatever L and S). Hq != Hkv needs
    ``enable_gqa=True``, as in PyTorch. ``attn_mask`` and ``dropout_p`` are
    not supported yet: any value but None and 0 raises FlashcError. Inputs
    must be 4-D. Runs where the tensors are, as ``flashc.attention``."""
    _not_supported("attn_mask", attn_mask, None)
    _not_supported("dropout_p", dropout_p, 0.0)
    is_causal = _boolean(is_causal, "is_causal")
    enable_gqa = _boolean(enable_gqa, "enable_gqa")
    _no_grad(((query, "query"), (key, "key"), (value, "value")))
    shapes = []
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        shape = _shape(t, name)
        if len(shape) != 4:
            raise FlashcError(
                f"{name} has shape {shape}; flashc takes 4-D tensors [B, H, "
                "N, D] (PyTorch also takes other ranks: reshape first)")
        shapes.append(shape)
    hq, hkv = shapes[0][1], shapes[1][1]
    if hq != hkv and not enable_gqa:
        raise FlashcError(
            f"query has {hq} heads but key and value have {hkv}: grouped-"
            "query attention needs enable_gqa=True, as in PyTorch")
    nq, nk = shapes[0][2], shapes[1][2]
    if not is_causal or nq == nk:
        return attention(query, key, value, causal=is_causal, scale=scale)
    # PyTorch's causal mask is aligned at the top left, flashc's at the
    # bottom right. Query i sees keys 0..i: with L <= S, that is flashc's
    # mask over the first L keys; with L > S, rows 0..S-1 are that and the
    # rows after see every key.
    if nq < nk:
        return attention(query, key[:, :, :nq], value[:, :, :nq], causal=True,
                         scale=scale)
    out = attention(query[:, :, :nk], key, value, causal=True, scale=scale)
    rest = attention(query[:, :, nk:], key, value, causal=False, scale=scale)
    return _concatenate_rows(out, rest)


def _shape(t, name):
    """The shape of array ``t`` as a tuple of ints."""
    try:
        return tuple(int(n) for n in t.shape)
    except Exception as e:  # pylint: disable=broad-except
        raise FlashcTypeError(f"{name} must be an array with a shape, got "
                              f"{_got(t)}") from e


def _concatenate_rows(a, b):
    """[B, H, Na, D] and [B, H, Nb, D] arrays joined along N, in their own
    library (numpy or torch)."""
    if _tensors.is_torch(a):
        import torch  # pylint: disable=import-outside-toplevel
        return torch.cat((a, b), dim=2)
    return np.concatenate((a, b), axis=2)


class Bundle:
    """Precompiled GPU kernels (``flashc bundle -o DIR``), run by the
    LLVM-free runtime: no compiler needed."""

    def __init__(self, native, path):
        if not isinstance(native, _runtime.Bundle):
            raise FlashcTypeError(
                f"native must be a loaded bundle, got {_got(native)}; "
                "bundles come from flashc.load_bundle")
        self._native = native
        self.path = path
        # The variant of each query asked so far (a bundle never changes).
        self._found = {}
        # Ids of the variants built for less aligned tensors that calls
        # fell back to, with the variant each replaced.
        self._fallbacks = {}
        # The variant and softmax scale of each call served so far
        # (_QuickCall keys).
        self._served = _Served()

    def _find(self, query):
        """The index of the variant serving ``query``, or None."""
        if query not in self._found:
            self._found[query] = _native(self._native.find, *query)
        return self._found[query]

    @property
    def variants(self):
        """One dict per kernel variant: target, dtype, group, head dims,
        causal, LSE, decode, tiles, shared bytes, registers. (Every
        variant takes any softmax scale.)"""
        return _native(getattr, self._native, "variants")

    @property
    def fallbacks(self):
        """The fallbacks calls took so far: one dict per variant that ran
        tensors less aligned than the variant their query found assumes
        (``variant``, its ``alignment``, and the id it ``replaced``)."""
        return [dict(v) for v in self._fallbacks.values()]

    def attention(self, q, k, v, *, causal=False, mask=None, scale=None,
                  return_lse=False, layout="bhnd", simulate=False, chip=None,
                  splits=0, out=None, lse=None, stream=None):
        """Runs the bundle's variant for this call: on the CUDA device for
        CUDA tensors, in the simulator for numpy arrays with
        ``simulate=True``. ``layout``, ``causal`` and ``mask`` as for
        ``flashc.attention``."""
        mask = _mask_of(causal, mask)
        layout = _layout(layout)
        scale = _scale(scale)
        return_lse = _boolean(return_lse, "return_lse") or lse is not None
        simulate = _boolean(simulate, "simulate")
        if chip is not None and _string(chip, "chip") not in _CHIPS[1:]:
            raise FlashcError(f"unknown chip {chip!r}; expected sm_80 or "
                              "sm_90a")
        splits = _integer(splits, "splits", minimum=0)
        stream = _stream(stream)
        quick = _QuickCall.of((q, k, v, out, lse), layout)
        key = None if quick is None else quick.key + (mask, scale, return_lse,
                                                      simulate, chip)
        found = self._served.get(key)
        if found is not None:
            index, effective_scale = found
            result = quick.run(
                lambda *descs: self._launch(index, simulate, splits,
                                            effective_scale, *descs),
                return_lse, stream, return_lse)
            if result is not None:
                return result
        call = _prepare(q, k, v, mask, scale, return_lse, layout)
        spec = call.spec
        if call.on_device == simulate:
            raise FlashcError(
                "simulate=True takes numpy arrays (host memory), a CUDA "
                "device takes CUDA tensors" if simulate else
                "numpy arrays run in the simulator: pass simulate=True")
        if chip is None:
            chip = "sm_80" if simulate else _native(_runtime.cuda_chip)
        query = (chip, spec.dtype, spec.heads // spec.kv_heads, spec.head_dim,
                 spec.value_dim, spec.mask, spec.with_lse,
                 spec.seq_q <= 16)
        index = self._find(query)
        if index is None and query[7]:
            # A decode-shaped call runs on the prefill variant too.
            index = self._find(query[:7] + (False,))
        if index is None:
            raise FlashcError(
                f"the bundle at {self.path} has no kernel for {chip}, "
                f"{spec.dtype}, group {query[2]}, head dims "
                f"{spec.head_dim}/{spec.value_dim}, "
                f"mask {spec.mask}, "
                f"{'with' if spec.with_lse else 'without'} LSE, "
                f"{'decode' if query[7] else 'prefill'}: "
                f"{_native(_runtime.explain_miss, self._native, *query)}")
        effective_scale = spec.effective_scale
        result = call.run(
            lambda *descs: self._launch(index, simulate, splits,
                                        effective_scale, *descs),
            q, out, lse, stream, return_lse)
        self._served.put(key, (index, effective_scale))
        return result

    def _launch(self, index, simulate, splits, scale, qd, kd, vd, od, ld,
                stream):
        """Launches variant ``index`` on described tensors with softmax
        scale ``scale``, and notes the fallback the runtime took, if
        any."""
        ran = self._native.launch(index, "sim" if simulate else "cuda", qd,
                                  kd, vd, od, ld, stream, splits, scale)
        if ran != index and ran not in self._fallbacks:
            variants = self.variants
            self._fallbacks[ran] = {
                "variant": variants[ran]["id"],
                "alignment": variants[ran]["alignment"],
                "replaced": variants[index]["id"]}
            _log.info("%s: the tensors are not aligned as %s needs; ran %s",
                      self.path, variants[index]["id"], variants[ran]["id"])

    def __repr__(self):
        return f"Bundle({self.path!r}, {len(self.variants)} variants)"


def load_bundle(path):
    """Loads a bundle directory (its manifest.json and kernels). ``path`` is
    a str, bytes or os.PathLike. Anything that is not a bundle raises
    FlashcError."""
    raw = _path(path)
    if not raw:
        raise FlashcError("path is empty; expected a bundle directory")
    shown = os.fsdecode(raw)
    # The runtime checks every file (a regular file, within its size limit,
    # the manifest against its kernels) and names the one at fault.
    return Bundle(_native(_runtime.Bundle.load, raw), shown)
