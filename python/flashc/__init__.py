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

Every error is a ``flashc.FlashcError`` (a ``ValueError``) carrying the C++
layer's message.
"""

import math
import os
import threading

import numpy as np

from . import _runtime
from . import _tensors
from ._runtime import FlashcError

__all__ = [
    "AttentionSpec", "Bundle", "FlashcError", "Kernel", "attention",
    "cache_size", "compile", "cost", "load_bundle", "set_cache_directory",
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


def _integer(value, name):
    """``value`` as a 64-bit integer, or FlashcError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise FlashcError(f"{name} must be an integer, got {value!r}")
    result = int(value)
    if not -2**63 <= result < 2**63:
        raise FlashcError(f"{name} {result} does not fit 64 bits")
    return result


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
        self.batch = _integer(batch, "batch")
        self.heads = _integer(heads, "heads")
        self.kv_heads = _integer(heads if kv_heads is None else kv_heads,
                                 "kv_heads")
        self.seq_q = _integer(seq_q, "seq_q")
        self.seq_kv = _integer(seq_kv, "seq_kv")
        self.head_dim = _integer(head_dim, "head_dim")
        self.head_dim_v = _integer(head_dim_v, "head_dim_v")
        if not isinstance(dtype, str) or dtype not in ("f32", "f16", "bf16"):
            try:
                dtype = _tensors.numpy_dtype_name(dtype)
            except TypeError as e:
                raise FlashcError(f"dtype {dtype!r} is not a dtype") from e
        self.dtype = dtype
        self.causal = bool(causal)
        try:
            self.scale = None if scale is None else float(scale)
        except (TypeError, ValueError) as e:
            raise FlashcError(f"scale {scale!r} is not a number") from e
        self.with_lse = bool(with_lse)

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

    def run(self, native_run, q, out, lse, stream, return_lse):
        """Allocates the outputs next to ``q`` when not given, describes
        them, calls ``native_run(q, k, v, out, lse, stream)`` with the
        descriptions, and returns ``o`` or ``(o, lse)``."""
        spec = self.spec
        shape = (spec.batch, spec.heads, spec.seq_q, spec.value_dim)
        if out is None:
            out = (_tensors.empty_like_device(q, shape, spec.dtype)
                   if self.on_device else
                   np.empty(shape, dtype=_tensors.numpy_dtype(spec.dtype)))
        if spec.with_lse and lse is None:
            lse = (_tensors.empty_like_device(q, shape[:3], "f32")
                   if self.on_device else np.empty(shape[:3], np.float32))
        outputs = [_tensors.describe(out, "out", output=True)]
        if lse is not None:
            outputs.append(_tensors.describe(lse, "lse", output=True))
        for (_, _, _, _, on_device), name in zip(
                [d for d, _ in outputs], ("out", "lse")):
            if on_device != self.on_device:
                raise FlashcError(f"{name} is not on the device of q, k and v")
        if stream is None:
            stream = _tensors.cuda_stream(q) if self.on_device else 0
        descs = [d for d, _ in self.inputs + outputs]
        keep = [k for _, k in self.inputs + outputs]
        native_run(*descs[:4], descs[4] if len(descs) > 4 else None,
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


def _parse_target(target, on_device):
    """(chip or "cpu", simulate) for a target name and where the data is."""
    if target is None:
        return (_runtime.cuda_chip(), False) if on_device else ("cpu", False)
    simulate = target.endswith("-sim")
    chip = target[:-4] if simulate else target
    if chip not in _CHIPS or (simulate and chip == "cpu"):
        raise FlashcError(
            f"unknown target '{target}'; expected cpu, sm_80, sm_90a, "
            "sm_80-sim or sm_90a-sim")
    if on_device and (simulate or chip == "cpu"):
        raise FlashcError(f"target '{target}' runs on host memory, but the "
                          "tensors are in CUDA device memory")
    if not on_device and chip != "cpu" and not simulate:
        raise FlashcError(
            f"target '{target}' needs CUDA tensors; numpy arrays run on the "
            f"CPU or in the simulator (target='{chip}-sim')")
    return chip, simulate


class Kernel:
    """A compiled attention kernel. Call it with q, k, v of its spec's dtype,
    head dims and group size (query heads per KV head); the batch, head
    counts and sequence lengths may differ from the spec's."""

    def __init__(self, native, spec, target, simulate, resources=None):
        self._native = native
        self.spec = spec
        self.target = target
        self.simulate = simulate
        self._resources = resources

    def ir(self, stage):
        """The IR after pipeline stage ``stage`` (see ``metadata['stages']``)."""
        return self._native.ir(stage)

    @property
    def ptx(self):
        """The PTX of a GPU kernel; None for a CPU kernel."""
        return self._native.ptx

    @property
    def metadata(self):
        """Tiles, splits, stages and, for GPU kernels, the entry, grid,
        block, shared bytes and, once assembled (``compile(...,
        assemble=True)``), the registers and spill bytes from ptxas
        (-1 until then), as a dict."""
        meta = self._native.metadata
        if self._resources:
            meta.update(self._resources)
        return meta

    def __call__(self, q, k, v, *, return_lse=False, splits=0, out=None,
                 lse=None, stream=None):
        """Runs the kernel; ``lse=`` implies ``return_lse``."""
        return_lse = return_lse or lse is not None
        if return_lse and not self.spec.with_lse:
            raise FlashcError(
                "this kernel was compiled without the log-sum-exp; compile "
                "an AttentionSpec(with_lse=True) to get it")
        call = _prepare(q, k, v, self.spec.causal, self.spec.scale,
                        return_lse or self.spec.with_lse)
        return self._run(call, q, return_lse, splits, out, lse, stream)

    def _run(self, call, q, return_lse, splits, out, lse, stream):
        def native_run(qd, kd, vd, od, ld, stream_handle):
            self._native.run(qd, kd, vd, od, ld, self.simulate, int(splits),
                             stream_handle)
        return call.run(native_run, q, out, lse, stream, return_lse)

    def __repr__(self):
        return f"Kernel({self._native.spec}, target={self.target!r})"


def _check_spec(spec):
    if not isinstance(spec, AttentionSpec):
        raise FlashcError(f"spec is a {type(spec).__name__}; expected a "
                          "flashc.AttentionSpec")


def compile(spec, target="cpu", **options):  # pylint: disable=redefined-builtin
    """Compiles ``spec`` for ``target`` ("cpu", "sm_80", "sm_90a", or
    "sm_80-sim" / "sm_90a-sim" to run the GPU kernel in the simulator).
    Options: loop_order, block_q, block_kv, sram_bytes, splits, threads,
    vector_lanes; assemble=True (GPU targets) also runs the toolkit's ptxas
    for the registers and spills in ``metadata``. Returns a cached kernel
    when one exists."""
    _check_spec(spec)
    if not isinstance(target, str):
        raise FlashcError(f"target must be a string, got {target!r}")
    simulate = target.endswith("-sim")
    chip = target[:-4] if simulate else target
    assemble = options.pop("assemble", False)
    checked = {}
    for name, value in options.items():
        if name == "loop_order":
            if not isinstance(value, str):
                raise FlashcError(f"loop_order must be a string, got {value!r}")
            checked[name] = value
        else:
            checked[name] = _integer(value, name)
    native = _compiler_api().compile(spec.to_dict(), chip, checked)
    resources = None
    if assemble:
        if chip == "cpu":
            raise FlashcError("assemble=True is for GPU targets (ptxas)")
        resources = native.assemble()
    return Kernel(native, spec, chip, simulate, resources)


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              target=None, out=None, lse=None):
    """softmax(scale q k^T) v for [B, H, N, D] tensors; returns ``o`` or
    ``(o, lse)`` (``lse=`` implies ``return_lse``). Causal masks are aligned
    at the bottom right: query i sees keys j <= i + Nk - Nq (SDPA's
    ``is_causal`` aligns at the top left when Nq != Nk). See the module's
    documentation for targets."""
    return_lse = return_lse or lse is not None
    call = _prepare(q, k, v, causal, scale, return_lse)
    chip, simulate = _parse_target(target, call.on_device)
    kernel = compile(call.spec, chip + ("-sim" if simulate else ""))
    return kernel._run(call, q, return_lse, 0, out, lse, None)  # pylint: disable=protected-access


def cost(spec, target="cpu", sram_bytes=None, loop_order="fa2"):
    """The IO cost report of ``spec`` on ``target`` as a dict: FLOPs, HBM
    traffic of the standard, algorithm-1 and FA2 loop orders, the chosen
    schedule and, on GPU targets, the CTA x wave prediction."""
    _check_spec(spec)
    for name, value in (("target", target), ("loop_order", loop_order)):
        if not isinstance(value, str):
            raise FlashcError(f"{name} must be a string, got {value!r}")
    sram = 0 if sram_bytes is None else _integer(sram_bytes, "sram_bytes")
    return _compiler_api().cost(spec.to_dict(), target, sram, loop_order)


def cache_size():
    """Kernels compiled so far in this process."""
    return _compiler_api().cache_size()


def set_cache_directory(path):
    """Keeps the GPU kernels this process compiles in the bundle directory
    ``path`` (created when missing), and takes kernels from there instead of
    compiling them, in this process and later ones; ``load_bundle(path)``
    reads it with the runtime alone. ``None`` or ``""`` turns it off."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise FlashcError(f"path must be a string or a path, got {path!r}")
    _compiler_api().set_cache_directory("" if path is None else os.fspath(path))


class Bundle:
    """Precompiled GPU kernels (``flashc bundle -o DIR``), run by the
    LLVM-free runtime: no compiler needed."""

    def __init__(self, native, path):
        self._native = native
        self.path = path

    @property
    def variants(self):
        """One dict per kernel variant: target, dtype, group, head dims,
        causal, LSE, scale, decode, tiles, shared bytes, registers."""
        return self._native.variants

    def attention(self, q, k, v, *, causal=False, scale=None,
                  return_lse=False, simulate=False, chip=None, splits=0,
                  out=None, lse=None, stream=None):
        """Runs the bundle's variant for this call: on the CUDA device for
        CUDA tensors, in the simulator for numpy arrays with
        ``simulate=True``."""
        return_lse = return_lse or lse is not None
        call = _prepare(q, k, v, causal, scale, return_lse)
        spec = call.spec
        if call.on_device == simulate:
            raise FlashcError(
                "simulate=True takes numpy arrays (host memory), a CUDA "
                "device takes CUDA tensors" if simulate else
                "numpy arrays run in the simulator: pass simulate=True")
        if chip is None:
            chip = "sm_80" if simulate else _runtime.cuda_chip()
        query = (chip, spec.dtype, spec.heads // spec.kv_heads, spec.head_dim,
                 spec.value_dim, spec.causal, spec.with_lse,
                 spec.effective_scale, spec.seq_q <= 16)
        index = self._native.find(*query)
        if index is None:
            raise FlashcError(
                f"the bundle at {self.path} has no kernel for {chip}, "
                f"{spec.dtype}, group {query[2]}, head dims "
                f"{spec.head_dim}/{spec.value_dim}, "
                f"{'causal' if spec.causal else 'not causal'}, "
                f"{'with' if spec.with_lse else 'without'} LSE, scale "
                f"{spec.effective_scale}, "
                f"{'decode' if query[8] else 'prefill'}")

        def native_run(qd, kd, vd, od, ld, stream_handle):
            self._native.launch(index, "sim" if simulate else "cuda", qd, kd,
                                vd, od, ld, stream_handle, int(splits))
        return call.run(native_run, q, out, lse, stream, return_lse)


def load_bundle(path):
    """Loads a bundle directory (its manifest.json and kernels)."""
    return Bundle(_runtime.Bundle.load(str(path)), str(path))
