"""flashc: attention kernels compiled by flashc, from Python.

One call::

    import flashc
    o = flashc.attention(q, k, v, causal=True)          # numpy: the CPU
    o, lse = flashc.attention(q, k, v, return_lse=True)

``q`` is ``[B, Hq, Nq, D]``, ``k`` is ``[B, Hkv, Nk, D]`` and ``v`` is
``[B, Hkv, Nk, Dv]``; grouped-query and multi-query attention follow from Hq
and Hkv. Where the arrays live picks the target: numpy arrays run on the
CPU, CUDA tensors (DLPack or ``__cuda_array_interface__``) on the GPU on the
tensor's current stream, and ``target="sm_80-sim"`` runs the GPU kernel in
flashc's PTX simulator on numpy arrays. Kernels are compiled once per
(dtype, head counts, head dims, causal, scale, LSE, target) and cached:
other batch sizes and sequence lengths reuse them.

The explicit form: ``flashc.AttentionSpec``, ``flashc.compile(spec,
target)`` (a callable ``Kernel`` with ``ir(stage)``, ``ptx`` and
``metadata``), ``flashc.cost(spec, ...)`` and ``flashc.load_bundle(path)``
for precompiled GPU kernels, which works without the compiler module.

Every error is a ``flashc.FlashcError`` (a ``ValueError``) whose message
names the argument or carries the C++ layer's message; an argument of the
wrong type raises ``flashc.FlashcTypeError``, a ``FlashcError`` that is also
a ``TypeError``.
"""

import math
import numbers
import os
import threading

import numpy as np

from . import _runtime
from . import _tensors
from ._runtime import FlashcError, FlashcTypeError
from ._tensors import got as _got

__all__ = [
    "AttentionSpec", "Bundle", "FlashcError", "FlashcTypeError", "Kernel",
    "attention", "cache_size", "compile", "cost", "load_bundle",
    "set_cache_directory",
]

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


class AttentionSpec:
    """One attention problem: O = softmax(scale Q K^T [+ causal mask]) V.

    Sizes default to a single query over a single key; ``scale`` None means
    1/sqrt(head_dim); ``head_dim_v`` 0 means ``head_dim``; ``dtype`` is
    "f32", "f16" or "bf16".
    """

    _FIELDS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim",
               "head_dim_v", "dtype", "causal", "scale", "with_lse")

    def __init__(self, *, batch=1, heads=1, kv_heads=None, seq_q=1, seq_kv=1,
                 head_dim=64, head_dim_v=0, dtype="f32", causal=False,
                 scale=None, with_lse=False):
        self.batch = batch
        self.heads = heads
        self.kv_heads = self.heads if kv_heads is None else kv_heads
        self.seq_q = seq_q
        self.seq_kv = seq_kv
        self.head_dim = head_dim
        self.head_dim_v = head_dim_v
        self.dtype = dtype
        self.causal = causal
        self.scale = scale
        self.with_lse = with_lse

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
        elif name == "scale":
            value = _scale(value)
        super().__setattr__(name, value)

    def to_dict(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    @property
    def value_dim(self):
        return self.head_dim_v or self.head_dim

    @property
    def effective_scale(self):
        return (self.scale if self.scale is not None else
                1.0 / math.sqrt(self.head_dim))

    def __repr__(self):
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"AttentionSpec({fields})"


class _Call:
    """One call's spec and the descriptions of its tensors (each with the
    object that keeps its data alive until the kernel has run)."""

    def __init__(self, spec, on_device, inputs):
        self.spec = spec
        self.on_device = on_device
        self.inputs = inputs

    def _allocate(self, q, shape, dtype, name):
        """A new output ``name`` next to ``q``."""
        try:
            if self.on_device:
                return _tensors.empty_like_device(q, shape, dtype)
            return np.empty(shape, dtype=_tensors.numpy_dtype(dtype))
        except FlashcError:
            raise
        except Exception as e:  # pylint: disable=broad-except
            raise FlashcError(
                f"cannot allocate {name} of shape {tuple(shape)}: "
                f"{type(e).__name__}: {e}") from e

    def run(self, native_run, q, out, lse, stream, return_lse):
        """Allocates the outputs next to ``q`` when not given, describes
        them, checks that no output overlaps an input or the other output,
        calls ``native_run(q, k, v, out, lse, stream)`` with the
        descriptions, and returns ``o`` or ``(o, lse)``."""
        spec = self.spec
        shape = (spec.batch, spec.heads, spec.seq_q, spec.value_dim)
        if out is None:
            out = self._allocate(q, shape, spec.dtype, "out")
        if spec.with_lse and lse is None:
            lse = self._allocate(q, shape[:3], "f32", "lse")
        outputs = [_tensors.describe(out, "out", output=True)]
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


def _prepare(q, k, v, causal, scale, with_lse):
    """The call's spec, after the checks a shape mismatch needs."""
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
                f"expected [B, H, N, D]")
        if 0 in sizes:
            raise FlashcError(f"{name} is empty (shape {tuple(sizes)}); every "
                              "size must be positive")
        if sizes[3] > 1 and strides[3] != 1:
            raise FlashcError(
                f"{name} is not contiguous in its last dimension (stride "
                f"{strides[3]} elements); the head dimension must be dense")
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
                          f"{ks[1]} KV heads")
    if ks[3] != d:
        raise FlashcError(f"head dims differ: q has {d}, k has {ks[3]}")
    if ks[2] != vs[2]:
        raise FlashcError(f"k has {ks[2]} keys but v has {vs[2]}")
    spec = AttentionSpec(batch=b, heads=hq, kv_heads=ks[1], seq_q=nq,
                         seq_kv=ks[2], head_dim=d,
                         head_dim_v=vs[3] if vs[3] != d else 0, dtype=qt,
                         causal=causal, scale=scale, with_lse=with_lse)
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
    head dims and group size (query heads per KV head); the batch, head
    counts and sequence lengths may differ from the spec's."""

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
        block, shared bytes and, once assembled (``compile(...,
        assemble=True)``), the registers and spill bytes from ptxas
        (-1 until then), as a dict."""
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
        call = _prepare(q, k, v, self.spec.causal, self.spec.scale,
                        return_lse or self.spec.with_lse)
        return self._run(call, q, return_lse, splits, out, lse, stream)

    def _run(self, call, q, return_lse, splits, out, lse, stream):
        def run(qd, kd, vd, od, ld, stream_handle):
            self._native.run(qd, kd, vd, od, ld, self.simulate, splits,
                             stream_handle)
        return call.run(run, q, out, lse, stream, return_lse)

    def __repr__(self):
        return f"Kernel({self._native.spec}, target={self.target!r})"


def _check_spec(spec):
    if not isinstance(spec, AttentionSpec):
        raise FlashcTypeError(f"spec must be a flashc.AttentionSpec, got "
                              f"{_got(spec)}")


_COMPILE_OPTIONS = ("loop_order", "block_q", "block_kv", "sram_bytes",
                    "splits", "threads", "vector_lanes")


def compile(spec, target="cpu", **options):  # pylint: disable=redefined-builtin
    """Compiles ``spec`` for ``target`` ("cpu", "sm_80", "sm_90a", or
    "sm_80-sim" / "sm_90a-sim" to run the GPU kernel in the simulator).
    Options: loop_order, block_q, block_kv, sram_bytes, splits, threads,
    vector_lanes; assemble=True (GPU targets) also runs the toolkit's ptxas
    for the registers and spills in ``metadata``. Returns a cached kernel
    when one exists."""
    _check_spec(spec)
    chip, simulate = _split_target(target)
    assemble = _boolean(options.pop("assemble", False), "assemble")
    checked = {}
    for name, value in options.items():
        if name not in _COMPILE_OPTIONS:
            raise FlashcError(f"unknown compile option '{name}'; expected "
                              f"{', '.join(_COMPILE_OPTIONS)} or assemble")
        checked[name] = (_string(value, name) if name == "loop_order" else
                         _integer(value, name))
    native = _native(_compiler_api().compile, spec.to_dict(), chip, checked)
    resources = None
    if assemble:
        if chip == "cpu":
            raise FlashcError("assemble=True is for GPU targets (ptxas)")
        resources = _native(native.assemble)
    return Kernel(native, spec, chip, simulate, resources)


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              target=None, out=None, lse=None):
    """softmax(scale q k^T) v for [B, H, N, D] tensors; returns ``o`` or
    ``(o, lse)`` (``lse=`` implies ``return_lse``). Causal masks are aligned
    at the bottom right: query i sees keys j <= i + Nk - Nq (SDPA's
    ``is_causal`` aligns at the top left when Nq != Nk). See the module's
    documentation for targets."""
    causal = _boolean(causal, "causal")
    scale = _scale(scale)
    return_lse = _boolean(return_lse, "return_lse") or lse is not None
    if target is not None:
        _split_target(target)
    call = _prepare(q, k, v, causal, scale, return_lse)
    chip, simulate = _parse_target(target, call.on_device)
    kernel = compile(call.spec, chip + ("-sim" if simulate else ""))
    return kernel._run(call, q, return_lse, 0, out, lse, None)  # pylint: disable=protected-access


def cost(spec, target="cpu", sram_bytes=None, loop_order="fa2"):
    """The IO cost report of ``spec`` on ``target`` as a dict: FLOPs, HBM
    traffic of the standard, algorithm-1 and FA2 loop orders, the chosen
    schedule and, on GPU targets, the CTA x wave prediction."""
    _check_spec(spec)
    _string(target, "target")
    _string(loop_order, "loop_order")
    sram = 0 if sram_bytes is None else _integer(sram_bytes, "sram_bytes")
    return _native(_compiler_api().cost, spec.to_dict(), target, sram,
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

    @property
    def variants(self):
        """One dict per kernel variant: target, dtype, group, head dims,
        causal, LSE, scale, decode, tiles, shared bytes, registers."""
        return _native(getattr, self._native, "variants")

    def attention(self, q, k, v, *, causal=False, scale=None,
                  return_lse=False, simulate=False, chip=None, splits=0,
                  out=None, lse=None, stream=None):
        """Runs the bundle's variant for this call: on the CUDA device for
        CUDA tensors, in the simulator for numpy arrays with
        ``simulate=True``."""
        causal = _boolean(causal, "causal")
        scale = _scale(scale)
        return_lse = _boolean(return_lse, "return_lse") or lse is not None
        simulate = _boolean(simulate, "simulate")
        if chip is not None and _string(chip, "chip") not in _CHIPS[1:]:
            raise FlashcError(f"unknown chip {chip!r}; expected sm_80 or "
                              "sm_90a")
        splits = _integer(splits, "splits", minimum=0)
        stream = _stream(stream)
        call = _prepare(q, k, v, causal, scale, return_lse)
        spec = call.spec
        if call.on_device == simulate:
            raise FlashcError(
                "simulate=True takes numpy arrays (host memory), a CUDA "
                "device takes CUDA tensors" if simulate else
                "numpy arrays run in the simulator: pass simulate=True")
        if chip is None:
            chip = "sm_80" if simulate else _native(_runtime.cuda_chip)
        query = (chip, spec.dtype, spec.heads // spec.kv_heads, spec.head_dim,
                 spec.value_dim, spec.causal, spec.with_lse,
                 spec.effective_scale, spec.seq_q <= 16)
        index = _native(self._native.find, *query)
        if index is None:
            raise FlashcError(
                f"the bundle at {self.path} has no kernel for {chip}, "
                f"{spec.dtype}, group {query[2]}, head dims "
                f"{spec.head_dim}/{spec.value_dim}, "
                f"{'causal' if spec.causal else 'not causal'}, "
                f"{'with' if spec.with_lse else 'without'} LSE, scale "
                f"{spec.effective_scale}, "
                f"{'decode' if query[8] else 'prefill'}")

        def run(qd, kd, vd, od, ld, stream_handle):
            self._native.launch(index, "sim" if simulate else "cuda", qd, kd,
                                vd, od, ld, stream_handle, splits)
        return call.run(run, q, out, lse, stream, return_lse)

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
