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
(dtype, head dims, causal, scale, GQA group, target) and cached: other
batch sizes and sequence lengths reuse them.

The explicit form: ``flashc.AttentionSpec``, ``flashc.compile(spec,
target)`` (a callable ``Kernel`` with ``ir(stage)``, ``ptx`` and
``metadata``), ``flashc.cost(spec, ...)`` and ``flashc.load_bundle(path)``
for precompiled GPU kernels, which works without the compiler module.

Every error is a ``flashc.FlashcError`` (a ``ValueError``) carrying the C++
layer's message.
"""

import math
import threading

import numpy as np

from . import _runtime
from . import _tensors
from ._runtime import FlashcError

__all__ = [
    "AttentionSpec", "Bundle", "FlashcError", "Kernel", "attention",
    "cache_size", "compile", "cost", "load_bundle",
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
        self.batch = int(batch)
        self.heads = int(heads)
        self.kv_heads = int(heads if kv_heads is None else kv_heads)
        self.seq_q = int(seq_q)
        self.seq_kv = int(seq_kv)
        self.head_dim = int(head_dim)
        self.head_dim_v = int(head_dim_v)
        if dtype not in ("f32", "f16", "bf16"):
            dtype = _tensors.numpy_dtype_name(dtype)
        self.dtype = dtype
        self.causal = bool(causal)
        self.scale = None if scale is None else float(scale)
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


def _spec_of(q, k, v, causal, scale, with_lse):
    """The spec of a call, after the checks a shape mismatch needs."""
    descs = [_tensors.describe(t, name) for t, name in ((q, "q"), (k, "k"),
                                                        (v, "v"))]
    for (_, _, sizes, strides, _), name in zip(descs, "qkv"):
        if len(sizes) != 4:
            raise FlashcError(
                f"{name} has rank {len(sizes)} (shape {tuple(sizes)}); "
                f"expected [B, H, N, D]")
        if sizes[3] > 1 and strides[3] != 1:
            raise FlashcError(
                f"{name} is not contiguous in its last dimension (stride "
                f"{strides[3]} elements); the head dimension must be dense")
    (qd, qt, qs, _, qdev), (_, kt, ks, _, kdev), (_, vt, vs, _, vdev) = descs
    if len({qdev, kdev, vdev}) != 1:
        raise FlashcError("q, k and v are on different devices (host and "
                          "CUDA); move them to one")
    if len({qt, kt, vt}) != 1:
        raise FlashcError(f"q, k and v have different dtypes ({qt}, {kt}, "
                          f"{vt})")
    b, hq, nq, d = qs
    if ks[0] != b or vs[0] != b:
        raise FlashcError(f"batch sizes differ: q {b}, k {ks[0]}, v {vs[0]}")
    if ks[1] != vs[1]:
        raise FlashcError(f"k has {ks[1]} heads but v has {vs[1]}")
    if ks[1] == 0 or hq % ks[1]:
        raise FlashcError(f"the {hq} query heads are not a multiple of the "
                          f"{ks[1]} KV heads")
    if ks[3] != d:
        raise FlashcError(f"head dims differ: q has {d}, k has {ks[3]}")
    if ks[2] != vs[2]:
        raise FlashcError(f"k has {ks[2]} keys but v has {vs[2]}")
    return AttentionSpec(batch=b, heads=hq, kv_heads=ks[1], seq_q=nq,
                         seq_kv=ks[2], head_dim=d,
                         head_dim_v=vs[3] if vs[3] != d else 0, dtype=qt,
                         causal=causal, scale=scale, with_lse=with_lse), qdev


def _outputs(q, spec, on_device, out, lse):
    """The output tensors of a call: given, or allocated beside ``q``."""
    shape = (spec.batch, spec.heads, spec.seq_q, spec.value_dim)
    if out is None:
        if on_device:
            out = _tensors.empty_like_device(q, shape, spec.dtype)
        else:
            out = np.empty(shape, dtype=_tensors.numpy_dtype(spec.dtype))
    if spec.with_lse and lse is None:
        lse_shape = shape[:3]
        if on_device:
            lse = _tensors.empty_like_device(q, lse_shape, "f32")
        else:
            lse = np.empty(lse_shape, dtype=np.float32)
    return out, lse


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
    head dims and head counts; the batch and sequence lengths may differ
    from the spec's."""

    def __init__(self, native, spec, target, simulate):
        self._native = native
        self.spec = spec
        self.target = target
        self.simulate = simulate

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
        block, shared bytes and registers, as a dict."""
        return self._native.metadata

    def __call__(self, q, k, v, *, return_lse=False, splits=0, out=None,
                 lse=None, stream=None):
        spec, on_device = _spec_of(q, k, v, self.spec.causal, self.spec.scale,
                                   return_lse or self.spec.with_lse)
        out, lse = _outputs(q, spec, on_device, out, lse)
        if stream is None:
            stream = _tensors.cuda_stream(q) if on_device else 0
        # Descriptions are taken while q, k, v, out and lse are alive here.
        self._native.run(
            _tensors.describe(q, "q"), _tensors.describe(k, "k"),
            _tensors.describe(v, "v"), _tensors.describe(out, "out"),
            None if lse is None else _tensors.describe(lse, "lse"),
            self.simulate, int(splits), int(stream))
        return (out, lse) if return_lse else out

    def __repr__(self):
        return f"Kernel({self._native.spec}, target={self.target!r})"


def compile(spec, target="cpu", **options):  # pylint: disable=redefined-builtin
    """Compiles ``spec`` for ``target`` ("cpu", "sm_80", "sm_90a", or
    "sm_80-sim" / "sm_90a-sim" to run the GPU kernel in the simulator).
    Options: loop_order, block_q, block_kv, sram_bytes, splits, threads,
    vector_lanes. Returns a cached kernel when one exists."""
    if not isinstance(spec, AttentionSpec):
        raise FlashcError(f"spec is a {type(spec).__name__}; expected a "
                          "flashc.AttentionSpec")
    simulate = target.endswith("-sim")
    chip = target[:-4] if simulate else target
    native = _compiler_api().compile(spec.to_dict(), chip, options)
    return Kernel(native, spec, chip, simulate)


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              target=None, out=None, lse=None):
    """softmax(scale q k^T) v for [B, H, N, D] tensors; returns ``o`` or
    ``(o, lse)``. See the module's documentation for targets."""
    spec, on_device = _spec_of(q, k, v, causal, scale, return_lse)
    chip, simulate = _parse_target(target, on_device)
    kernel = compile(spec, chip + ("-sim" if simulate else ""))
    return kernel(q, k, v, return_lse=return_lse, out=out, lse=lse)


def cost(spec, target="cpu", sram_bytes=None, loop_order="fa2"):
    """The IO cost report of ``spec`` on ``target`` as a dict: FLOPs, HBM
    traffic of the standard, algorithm-1 and FA2 loop orders, the chosen
    schedule and, on GPU targets, the CTA x wave prediction."""
    return _compiler_api().cost(spec.to_dict(), target,
                            0 if sram_bytes is None else int(sram_bytes),
                            loop_order)


def cache_size():
    """Kernels compiled so far in this process."""
    return _compiler_api().cache_size()


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
        spec, on_device = _spec_of(q, k, v, causal, scale, return_lse)
        if on_device == simulate:
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
        out, lse = _outputs(q, spec, on_device, out, lse)
        if stream is None:
            stream = _tensors.cuda_stream(q) if on_device else 0
        self._native.launch(
            index, "sim" if simulate else "cuda", _tensors.describe(q, "q"),
            _tensors.describe(k, "k"), _tensors.describe(v, "v"),
            _tensors.describe(out, "out"),
            None if lse is None else _tensors.describe(lse, "lse"),
            int(stream), int(splits))
        return (out, lse) if return_lse else out


def load_bundle(path):
    """Loads a bundle directory (its manifest.json and kernels)."""
    return Bundle(_runtime.Bundle.load(str(path)), str(path))
