"""Tensor descriptions for the extension modules.

Turns numpy arrays, DLPack tensors and ``__cuda_array_interface__`` objects
into ``(data pointer, dtype, sizes, strides in elements, on_device)`` tuples,
checks that outputs do not overlap inputs, and allocates outputs next to the
inputs. Nothing here copies data. A tensor whose protocol misbehaves (raises,
or gives values of the wrong type or range) is a FlashcError naming it.
"""

import ctypes
import operator
import sys

import numpy as np

from ._runtime import FlashcError, FlashcTypeError

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


def got(value):
    """What an error message says a wrong argument was: its type, and its
    value when it is a short scalar."""
    if value is None:
        return "None"
    name = type(value).__name__
    if isinstance(value, (bool, int, float, str, bytes, np.generic)):
        text = repr(value)
        if len(text) > 40:
            text = text[:37] + "..."
        return f"{name} {text}"
    return name


# Bytes per element of flashc's dtypes.
ITEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


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


# DLPack device types of host memory and of CUDA device memory; any other
# (ROCm, Vulkan, Metal, oneAPI, ...) is refused.
_DL_HOST = (_DL_CPU, 3)  # kDLCPU, kDLCUDAHost
_DL_DEVICE = (_DL_CUDA, _DL_CUDA_MANAGED)


def _protocol_error(what, e):
    return FlashcError(f"{what}: cannot read the tensor ({type(e).__name__}: "
                       f"{e})")


def _attribute(x, name, what):
    """Whether ``x`` has attribute ``name``; a property that raises is a
    FlashcError naming ``what``."""
    try:
        return hasattr(x, name)
    except Exception as e:  # pylint: disable=broad-except
        raise _protocol_error(what, e) from e


def _is_torch_tensor(x):
    """Whether ``x`` is a torch.Tensor (torch already imported by whoever
    made it)."""
    torch = sys.modules.get("torch") if is_torch(x) else None
    tensor = getattr(torch, "Tensor", None)
    return tensor is not None and isinstance(x, tensor)


def _torch_on_cuda(x, what):
    """Whether torch tensor ``x`` is on the CUDA device flashc launches on
    (False: the CPU); FlashcError for any other device, as for DLPack."""
    device = x.device
    if device.type == "cpu":
        return False
    if device.type != "cuda":
        raise FlashcError(
            f"{what} is on torch device '{device}'; flashc runs on host "
            "memory (CPU) and CUDA devices")
    if (device.index or 0) != 0:
        raise FlashcError(
            f"{what} is on CUDA device {device.index}; flashc launches on "
            "CUDA device 0 only")
    return True


def is_cuda(x, what="tensor"):
    """True for a tensor in CUDA device memory (DLPack or CUDA array
    interface), False for host memory; FlashcError for other devices."""
    if isinstance(x, np.ndarray):
        return False
    if _is_torch_tensor(x):
        return _torch_on_cuda(x, what)
    if _attribute(x, "__dlpack_device__", what):
        try:
            device_type, device_id = x.__dlpack_device__()
            device_type, device_id = int(device_type), int(device_id)
        except Exception as e:  # pylint: disable=broad-except
            raise _protocol_error(what, e) from e
        if device_type in _DL_HOST:
            return False
        if device_type not in _DL_DEVICE:
            raise FlashcError(
                f"{what} is on DLPack device type {device_type}; flashc runs "
                "on host memory (CPU) and CUDA devices")
        if device_id != 0:
            raise FlashcError(
                f"{what} is on CUDA device {device_id}; flashc launches "
                "on CUDA device 0 only")
        return True
    return _attribute(x, "__cuda_array_interface__", what)


_EXPECTED = ("a numpy array, a DLPack tensor or an object with "
             "__cuda_array_interface__")


def describe(x, what, output=False):
    """The description of tensor ``x`` (named ``what`` in errors) and an
    object to keep alive until the kernel has run (a DLPack capsule, whose
    deleter may free the data). Outputs must be writable and must not
    alias themselves (no stride 0 over a dimension of more than one)."""
    try:
        if isinstance(x, np.ndarray):
            desc, keep = _describe_numpy(x, what, output), x
        elif _is_torch_tensor(x):
            desc, keep = _describe_torch(x, what), x
        elif _attribute(x, "__dlpack__", what):
            desc, keep = _describe_dlpack(x, what)
        elif _attribute(x, "__cuda_array_interface__", what):
            desc, keep = _describe_cai(x, what, output), x
        else:
            raise FlashcTypeError(f"{what} must be {_EXPECTED}, got {got(x)}")
    except FlashcError:
        raise
    except Exception as e:  # pylint: disable=broad-except
        raise _protocol_error(what, e) from e
    _check_ranges(desc, what)
    for n, stride in zip(desc[2], desc[3]):
        if n > 1 and stride < 0:
            raise FlashcError(
                f"{what} has a negative stride (strides {list(desc[3])} "
                "elements); flashc takes non-negative strides")
    if output:
        for n, stride in zip(desc[2], desc[3]):
            if n > 1 and stride == 0:
                raise FlashcError(
                    f"{what} has stride 0 over a dimension of {n}: its "
                    "elements would overlap")
    return desc, keep


def _check_ranges(desc, what):
    """The description's numbers are integers that the extension modules
    take (a 64-bit address, sizes and strides that fit int64) and its data
    is aligned to its element size."""
    data, dtype, sizes, strides, _ = desc
    if len(sizes) != len(strides):
        raise FlashcError(f"{what} has {len(sizes)} sizes but {len(strides)} "
                          "strides")
    if not 0 <= data < 2**64:
        raise FlashcError(f"{what}: data pointer {data} is not an address")
    if len(sizes) > 16:
        raise FlashcError(f"{what} has rank {len(sizes)}; expected 4")
    for n in sizes:
        if not 0 <= n < 2**63:
            raise FlashcError(f"{what} has size {n}; sizes must be "
                              "non-negative and fit 64 bits")
    for s in strides:
        if not -2**63 <= s < 2**63:
            raise FlashcError(f"{what} has stride {s}; strides must fit 64 "
                              "bits")
    if data % ITEM_BYTES[dtype]:
        raise FlashcError(f"{what} is not aligned to its element size "
                          f"({ITEM_BYTES[dtype]} bytes)")


def _extent(desc):
    """The byte range [first, end) that a description's elements span, or
    None when it has none."""
    data, dtype, sizes, strides, _ = desc
    if not sizes or 0 in sizes:
        return None if sizes else (data, data + ITEM_BYTES[dtype])
    low = high = 0
    for n, s in zip(sizes, strides):
        if s >= 0:
            high += (n - 1) * s
        else:
            low += (n - 1) * s
    item = ITEM_BYTES[dtype]
    return data + low * item, data + (high + 1) * item


def overlaps(a, b):
    """Whether two described tensors ``(desc, keep)`` on the same device
    share memory: the byte ranges their elements span intersect (the rule
    of the C++ runtime, so two interleaved views of one buffer overlap)."""
    (da, _), (db, _) = a, b
    if da[4] != db[4]:
        return False
    ea, eb = _extent(da), _extent(db)
    return not (ea is None or eb is None or ea[1] <= eb[0] or eb[1] <= ea[0])


def _describe_numpy(x, what, output):
    if not x.dtype.isnative:
        raise FlashcError(f"{what} is not in the machine's byte order")
    try:
        name = numpy_dtype_name(x.dtype)
    except FlashcError as e:
        raise FlashcError(f"{what}: {e}") from e
    if output and not x.flags.writeable:
        raise FlashcError(f"{what} is read-only")
    item = x.dtype.itemsize
    if any(s % item for s in x.strides):
        raise FlashcError(
            f"{what} has strides {x.strides} bytes, not whole elements")
    return (x.ctypes.data, name, list(x.shape),
            [s // item for s in x.strides], False)


def _describe_cai(x, what, output):
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    names = {"<f4": "f32", "<f2": "f16"}
    if typestr not in names:
        raise FlashcError(
            f"{what} has element type {typestr}; expected <f4 or <f2 (bf16 "
            "tensors come through DLPack)")
    pointer, readonly = cai["data"]
    if output and readonly:
        raise FlashcError(f"{what} is read-only")
    item = 4 if typestr == "<f4" else 2
    # Integers only: operator.index refuses floats and strings.
    shape = [operator.index(n) for n in cai["shape"]]
    strides = cai.get("strides")
    if strides is None:
        strides = _dense_strides(shape)
    else:
        strides = [operator.index(s) for s in strides]
        if any(s % item for s in strides):
            raise FlashcError(f"{what} has strides {strides} bytes, not "
                              "whole elements")
        strides = [s // item for s in strides]
    return (operator.index(pointer), names[typestr], shape, strides, True)


def _dense_strides(shape):
    elems, strides = 1, []
    for n in reversed(shape):
        strides.insert(0, elems)
        elems *= n
    return strides


def _describe_torch(x, what):
    """A torch tensor's description from its own attributes: what DLPack
    would give, without making a capsule. (torch's ``__dlpack__`` also
    orders the default stream after the current one at every call, which
    flashc does not need: it launches on the current stream.)"""
    names = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
    dtype = str(x.dtype).rpartition(".")[2]
    if dtype not in names:
        raise FlashcError(f"{what} has dtype {x.dtype}; expected float32, "
                          "float16 or bfloat16")
    if x.is_conj() or x.is_neg():
        raise FlashcError(f"{what} has a lazy conjugate or negation bit; "
                          "call resolve_conj() / resolve_neg() first")
    on_device = _torch_on_cuda(x, what)
    return (int(x.data_ptr()), names[dtype], list(x.shape), list(x.stride()),
            on_device)


def _describe_dlpack(x, what):
    capsule = x.__dlpack__()
    pointer = _capsule_pointer(capsule, b"dltensor")
    # DLManagedTensor begins with its DLTensor.
    t = _DLTensor.from_address(pointer)
    device_type = t.device.device_type
    if device_type not in _DL_HOST + _DL_DEVICE:
        raise FlashcError(
            f"{what} is on DLPack device type {device_type}; flashc runs on "
            "host memory (CPU) and CUDA devices")
    if not 0 <= t.ndim <= 16 or (t.ndim and not t.shape):
        raise FlashcError(f"{what} is a DLPack tensor of rank {t.ndim} with "
                          f"{'a' if t.shape else 'no'} shape")
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
        strides = _dense_strides(shape)
    data = (t.data or 0) + t.byte_offset
    # The data is valid until the capsule's deleter runs: the caller keeps
    # the capsule until the kernel has run.
    return (data, name, shape, strides, device_type in _DL_DEVICE), capsule


def torch_tensor_type():
    """torch.Tensor when torch is imported, else None (never imports it)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


_QUICK_NUMPY = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
if _ml_dtypes is not None:
    _QUICK_NUMPY[np.dtype(_ml_dtypes.bfloat16)] = "bf16"
_QUICK_TORCH = []


def _torch_quick():
    """flashc's names of torch's dtypes, and torch's strided layout (torch
    imported already)."""
    if not _QUICK_TORCH:
        torch = sys.modules["torch"]
        _QUICK_TORCH.extend(({torch.float32: "f32", torch.float16: "f16",
                              torch.bfloat16: "bf16"}, torch.strided))
    return _QUICK_TORCH


def quick(x, torch_tensor=None):
    """``(kind, data, dtype, sizes, strides, on_device, writeable)`` of a
    numpy array or torch tensor (of those exact types) whose description
    needs no check beyond what the caller makes of these numbers: a dtype
    flashc takes in the machine's byte order, strides of whole elements,
    no lazy conjugate or negation, on the CPU or CUDA device 0. None for
    anything else, which ``describe`` then describes (or refuses, naming
    why). Sizes and strides (in elements) are tuples. ``torch_tensor``:
    torch.Tensor, where the caller looked it up (``torch_tensor_type``)."""
    kind = type(x)
    if kind is np.ndarray:
        name = _QUICK_NUMPY.get(x.dtype)
        if name is None:
            return None
        item = x.itemsize
        strides = []
        # Every stride, of a dimension of one element too (numpy's aligned
        # flag ignores those), in whole elements.
        for s in x.strides:
            if s % item:
                return None
            strides.append(s // item)
        return (kind, x.ctypes.data, name, x.shape, tuple(strides), False,
                x.flags.writeable)
    if kind is not (torch_tensor or torch_tensor_type()):
        return None
    try:
        names, strided = _torch_quick()
        name = names.get(x.dtype)
        # Dense tensors only: sparse and mkldnn ones have no strides or
        # data pointer to read.
        if (name is None or x.layout is not strided or
                x.is_conj() or x.is_neg()):
            return None
        if x.is_cuda:
            if x.get_device() != 0:
                return None
            on_device = True
        elif x.device.type == "cpu":
            on_device = False
        else:
            return None
        return (kind, x.data_ptr(), name, tuple(x.shape), tuple(x.stride()),
                on_device, True)
    except Exception:  # pylint: disable=broad-except
        return None  # describe's path says what the tensor does wrong.


def cuda_stream(x):
    """The current CUDA stream of the device ``x`` lives on, as an integer
    handle: torch's current stream for torch tensors, the CUDA array
    interface's ``stream`` when given, else the default stream (0)."""
    module = type(x).__module__ or ""
    if module.startswith("torch"):
        import torch  # pylint: disable=import-outside-toplevel
        # The handle alone, without the Stream object current_stream
        # builds (a few microseconds a call), where torch has it.
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # pylint: disable=protected-access
        if raw is not None:
            return int(raw(x.get_device()))
        return int(torch.cuda.current_stream(x.device).cuda_stream)
    try:
        cai = getattr(x, "__cuda_array_interface__", None)
        if isinstance(cai, dict) and cai.get("stream"):
            stream = int(cai["stream"])
            if 0 <= stream < 2**64:
                return stream
            raise ValueError(f"stream {stream} does not fit 64 bits")
    except Exception as e:  # pylint: disable=broad-except
        raise _protocol_error("q", e) from e
    return 0


def is_torch(x):
    """True for a torch tensor (without importing torch)."""
    return (type(x).__module__ or "").startswith("torch")


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
