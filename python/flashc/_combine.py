"""Merging partial attention results by their log-sum-exp.

Attention over keys split into disjoint chunks can be computed one chunk at
a time (``flashc.attention(..., return_lse=True)`` on each) and merged
exactly: with ``O_i`` and ``L_i`` the output and log-sum-exp of chunk i,

    L = log(sum_i exp(L_i))
    O = sum_i exp(L_i - L) O_i

is the output and log-sum-exp of attention over all the keys. This is how
split-KV decoding and ring attention (a sequence spread over processes)
put their pieces together.

The merge runs in the arrays' own library: numpy functions for numpy
arrays, torch functions for torch tensors (on their device, CPU or CUDA,
with no copy to the host; torch is never imported here, a tensor brings
it).
"""

import math

import numpy as np

from ._runtime import FlashcError, FlashcTypeError
from ._tensors import got as _got

# The dtypes of partial outputs: flashc's (float32, float16, bfloat16).
_OUTPUT_DTYPES = ("float32", "float16", "bfloat16")


def _is_torch(x):
    """Whether ``x`` is a torch tensor (duck typing: torch's module, with
    shape, dtype and device)."""
    module = type(x).__module__ or ""
    return (module == "torch" or module.startswith("torch.")) and all(
        hasattr(x, name) for name in ("shape", "dtype", "device"))


def _dtype_name(x):
    """The dtype's short name: "float32" for numpy's float32 and for
    torch.float32."""
    return str(x.dtype).rsplit(".", 1)[-1]


class _Numpy:
    """The operations of the merge on numpy arrays."""

    @staticmethod
    def f32(x):
        return x.astype(np.float32)

    @staticmethod
    def cast(x, like):
        return x.astype(like.dtype)

    @staticmethod
    def zeros(shape, like):
        del like
        return np.zeros(shape, np.float32)

    @staticmethod
    def full(shape, value, like):
        del like
        return np.full(shape, value, np.float32)

    maximum = staticmethod(np.maximum)
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    where = staticmethod(np.where)


class _Torch:
    """The same on torch tensors, on their device."""

    def __init__(self):
        import torch  # pylint: disable=import-outside-toplevel
        self.torch = torch

    def f32(self, x):
        return x.to(self.torch.float32)

    @staticmethod
    def cast(x, like):
        return x.to(like.dtype)

    def zeros(self, shape, like):
        return self.torch.zeros(shape, dtype=self.torch.float32,
                                device=like.device)

    def full(self, shape, value, like):
        return self.torch.full(shape, value, dtype=self.torch.float32,
                               device=like.device)

    def maximum(self, a, b):
        return self.torch.maximum(a, b)

    def exp(self, x):
        return self.torch.exp(x)

    def log(self, x):
        return self.torch.log(x)

    def where(self, condition, a, b):
        return self.torch.where(condition, a, b)


def _sequence(value, name):
    """``value`` as a list, when it is a non-empty list or tuple."""
    if not isinstance(value, (list, tuple)):
        raise FlashcTypeError(f"{name} must be a list or tuple of arrays, "
                              f"got {_got(value)}")
    if not value:
        raise FlashcError(f"{name} is empty; combine needs at least one "
                          "partial result")
    return list(value)


def _check(outputs, lses):
    """The merge's operations for the arguments, after checking them: the
    same number of outputs and LSEs, all numpy arrays or all torch tensors
    on one device, outputs [..., Dv] of one shape and one flashc dtype,
    LSEs float32 of the outputs' shape less the last dimension."""
    outputs = _sequence(outputs, "outputs")
    lses = _sequence(lses, "lses")
    if len(outputs) != len(lses):
        raise FlashcError(f"{len(outputs)} outputs but {len(lses)} lses; "
                          "each partial output needs its log-sum-exp")
    kinds = set()
    for values, name in ((outputs, "outputs"), (lses, "lses")):
        for i, x in enumerate(values):
            if isinstance(x, np.ndarray):
                kinds.add("numpy")
            elif _is_torch(x):
                kinds.add("torch")
            else:
                raise FlashcTypeError(
                    f"{name}[{i}] must be a numpy array or a torch tensor, "
                    f"got {_got(x)}")
    if len(kinds) > 1:
        raise FlashcError("outputs and lses mix numpy arrays and torch "
                          "tensors; pass one kind")
    if "torch" in kinds:
        devices = [str(x.device) for x in outputs + lses]
        if len(set(devices)) > 1:
            raise FlashcError(
                "outputs and lses are on different devices ("
                f"{', '.join(sorted(set(devices)))}); move them to one")

    first = outputs[0]
    shape = tuple(first.shape)
    if not shape:
        raise FlashcError("outputs[0] is a scalar; expected [B, H, N, Dv]")
    dtype = _dtype_name(first)
    if dtype not in _OUTPUT_DTYPES:
        raise FlashcError(f"outputs[0] has dtype {dtype}; expected "
                          f"{', '.join(_OUTPUT_DTYPES)}")
    for i, o in enumerate(outputs):
        if tuple(o.shape) != shape:
            raise FlashcError(f"outputs[{i}] has shape {tuple(o.shape)} but "
                              f"outputs[0] has {shape}")
        if _dtype_name(o) != dtype:
            raise FlashcError(f"outputs[{i}] has dtype {_dtype_name(o)} but "
                              f"outputs[0] has {dtype}")
    for i, lse in enumerate(lses):
        if tuple(lse.shape) != shape[:-1]:
            raise FlashcError(
                f"lses[{i}] has shape {tuple(lse.shape)}; expected "
                f"{shape[:-1]}, the outputs' shape without the last "
                "dimension")
        if _dtype_name(lse) != "float32":
            raise FlashcError(f"lses[{i}] has dtype {_dtype_name(lse)}; the "
                              "log-sum-exp must be float32")
    ops = _Torch() if "torch" in kinds else _Numpy()
    return ops, outputs, lses


def combine(outputs, lses):
    """Merges partial attention results computed over disjoint sets of keys.

    ``outputs`` is a list of partial outputs ``O_i`` of shape
    ``[B, H, N, Dv]`` (or any ``[..., Dv]``) and ``lses`` the list of
    their log-sum-exps ``L_i``, float32 of shape ``[B, H, N]`` (the
    outputs' shape less the last dimension), as ``flashc.attention(...,
    return_lse=True)`` returns them. Returns ``(O, L)`` with

        L = log(sum_i exp(L_i)),  O = sum_i exp(L_i - L) O_i,

    the output and log-sum-exp of attention over all the keys, up to f32
    rounding. The merge is computed in f32 (shifted by the largest L_i, so
    it cannot overflow); ``O`` has the outputs' dtype and ``L`` is float32.

    A partial whose row saw no key has ``L_i = -inf`` there (and ``O_i =
    0``, as flashc's kernels give) and contributes nothing to that row,
    whatever its ``O_i`` holds. A row that no partial saw a key for comes
    out as flashc's kernels give a fully masked row: ``O = 0`` and ``L =
    -inf``. NaN (or +inf) in an ``L_i`` gives NaN in that row.

    All arrays are numpy arrays, or all are torch tensors on one device
    (CPU or CUDA); the merge runs there with the arrays' own library, and
    the results are new arrays of the same kind. Wrong arguments raise
    ``FlashcTypeError`` (not a list, not an array) or ``FlashcError``
    (empty, mixed kinds or devices, shapes or dtypes that do not match, an
    LSE that is not float32).
    """
    ops, outputs, lses = _check(outputs, lses)
    like = outputs[0]
    rows = tuple(like.shape[:-1])
    # The largest L_i of each row: the shift that keeps exp() at most 1.
    top = ops.f32(lses[0])
    for lse in lses[1:]:
        top = ops.maximum(top, lse)
    seen = top != -math.inf  # rows where some partial saw a key
    shift = ops.where(seen, top, ops.zeros(rows, like))
    total = ops.zeros(rows, like)
    acc = ops.zeros(tuple(like.shape), like)
    zero = ops.zeros(tuple(like.shape), like)
    for o, lse in zip(outputs, lses):
        weight = ops.exp(lse - shift)  # 0 where L_i = -inf
        total = total + weight
        # A partial without keys adds nothing, even where its O_i is not
        # finite (an unwritten buffer): such rows are zeroed first.
        acc = acc + weight[..., None] * ops.where((weight > 0)[..., None],
                                                  ops.f32(o), zero)
    # total >= 1 where a row was seen (its largest term is exp(0)).
    safe = ops.where(seen, total, ops.full(rows, 1.0, like))
    lse = ops.where(seen, shift + ops.log(safe),
                    ops.full(rows, -math.inf, like))
    out = acc / safe[..., None]
    return ops.cast(out, like), lse
