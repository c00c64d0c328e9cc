"""Tensor descriptions for the extension modules.

Turns numpy arrays, DLPack tensors and ``__cuda_array_interface__`` objects
into ``(data pointer, dtype, sizes, strides in elements, on_device)`` tuples,
and allocates outputs next to the inputs. Nothing here copies data.
"""

import ctypes

import numpy as np

from ._runtime import FlashcError

try:  # bf16 arrays on the CPU, when the package is present.
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None

# DLPack's device types and dtype codes (the DLPack ABI).
_DL_CPU = 1
_DL_CUDA = 2
_DL_CUDA_MANAGED = 13
_DL_FLOAT = 2
_DL_BFLOAT = 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def numpy_dtype_name(dtype):
    """flashc's name of a numpy dtype: f32, f16 or bf16."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return "f32"
    if dtype == np.float16:
        return "f16"
    if dtype.name == "bfloat16":
        return "bf16"
    raise FlashcError(
        f"unsupported dtype {dtype}; flashc takes float32, float16 and "
        "bfloat16 (ml_dtypes.bfloat16 on the CPU)")


def numpy_dtype(name):
    """The numpy dtype of flashc's dtype name."""
    if name == "f32":
        return np.dtype(np.float32)
    if name == "f16":
        return np.dtype(np.float16)
    if _ml_dtypes is None:
        raise FlashcError("bf16 numpy arrays need the ml_dtypes package")
    return np.dtype(_ml_dtypes.bfloat16)


def is_cuda(x):
    """True for a tensor in CUDA device memory (DLPack or CUDA array
    interface), False for host memory."""
    if isinstance(x, np.ndarray):
        return False
    if hasattr(x, "__dlpack_device__"):
        device_type, _ = x.__dlpack_device__()
        return int(device_type) in (_DL_CUDA, _DL_CUDA_MANAGED)
    return hasattr(x, "__cuda_array_interface__")


def describe(x, what):
    """The description of tensor ``x`` (named ``what`` in errors)."""
    if isinstance(x, np.ndarray):
        name = numpy_dtype_name(x.dtype)
        item = x.dtype.itemsize
        if any(s % item for s in x.strides):
            raise FlashcError(
                f"{what} has strides {x.strides} bytes, not whole elements")
        return (x.ctypes.data, name, list(x.shape),
                [s // item for s in x.strides], False)
    if hasattr(x, "__cuda_array_interface__") and not hasattr(
            x, "__dlpack__"):
        return _describe_cai(x, what)
    if hasattr(x, "__dlpack__"):
        return _describe_dlpack(x, what)
    raise FlashcError(
        f"{what} is a {type(x).__name__}; expected a numpy array, a DLPack "
        "tensor or an object with __cuda_array_interface__")


def _describe_cai(x, what):
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    names = {"<f4": "f32", "<f2": "f16"}
    if typestr not in names:
        raise FlashcError(
            f"{what} has element type {typestr}; expected <f4 or <f2 (bf16 "
            "tensors come through DLPack)")
    item = 4 if typestr == "<f4" else 2
    shape = list(cai["shape"])
    strides = cai.get("strides")
    if strides is None:
        elems, strides = 1, []
        for n in reversed(shape):
            strides.insert(0, elems)
            elems *= n
    else:
        if any(s % item for s in strides):
            raise FlashcError(f"{what} has strides {strides} bytes, not "
                              "whole elements")
        strides = [s // item for s in strides]
    return (int(cai["data"][0]), names[typestr], shape, strides, True)


def _describe_dlpack(x, what):
    capsule = x.__dlpack__()
    pointer = _capsule_pointer(capsule, b"dltensor")
    # DLManagedTensor begins with its DLTensor.
    t = _DLTensor.from_address(pointer)
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    if lanes != 1 or (code, bits) not in ((_DL_FLOAT, 32), (_DL_FLOAT, 16),
                                          (_DL_BFLOAT, 16)):
        raise FlashcError(f"{what} has DLPack dtype (code {code}, {bits} "
                          "bits); expected float32, float16 or bfloat16")
    name = {(_DL_FLOAT, 32): "f32", (_DL_FLOAT, 16): "f16",
            (_DL_BFLOAT, 16): "bf16"}[(code, bits)]
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        strides = [t.strides[i] for i in range(t.ndim)]
    else:
        elems, strides = 1, []
        for n in reversed(shape):
            strides.insert(0, elems)
            elems *= n
    data = (t.data or 0) + t.byte_offset
    on_device = t.device.device_type in (_DL_CUDA, _DL_CUDA_MANAGED)
    # The capsule (and with it the producer's view) stays alive as long as
    # ``x`` does; the caller keeps ``x`` for the call.
    return (data, name, shape, strides, on_device)


def cuda_stream(x):
    """The current CUDA stream of the device ``x`` lives on, as an integer
    handle: torch's current stream for torch tensors, the CUDA array
    interface's ``stream`` when given, else the default stream (0)."""
    module = type(x).__module__ or ""
    if module.startswith("torch"):
        import torch  # pylint: disable=import-outside-toplevel
        return int(torch.cuda.current_stream(x.device).cuda_stream)
    cai = getattr(x, "__cuda_array_interface__", None)
    if isinstance(cai, dict) and cai.get("stream"):
        return int(cai["stream"])
    return 0


def empty_like_device(x, shape, dtype_name):
    """A new tensor of ``shape`` on ``x``'s device (torch, or anything with
    ``new_empty``)."""
    module = type(x).__module__ or ""
    if module.startswith("torch"):
        import torch  # pylint: disable=import-outside-toplevel
        dtype = {"f32": torch.float32, "f16": torch.float16,
                 "bf16": torch.bfloat16}[dtype_name]
        return torch.empty(shape, dtype=dtype, device=x.device)
    raise FlashcError(
        f"cannot allocate the output next to a {type(x).__name__}; pass "
        "out= (and lse= for the log-sum-exp)")
