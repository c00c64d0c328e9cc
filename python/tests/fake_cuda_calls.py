"""The Python runtime module's CUDA path on the stand-in driver
(unittests/Runtime/FakeCudaDriver.cpp): run by test_fake_cuda.py in a
process of its own whose LD_LIBRARY_PATH finds that libcuda.so.1, which
runs kernels in the PTX simulator over simulated device memory. The
tensors are ``__cuda_array_interface__`` objects over that memory, filled
and read back through the driver's copies.

    fake_cuda_calls.py BUNDLE SEED

Then flashc.attention (the compiler's kernel for the device's chip) on
the same kind of tensors. Exits 0 when every call matched float64 and every refusal named its
problem; the assertion's message otherwise."""

import ctypes
import sys

import numpy as np

import flashc

from conftest import check, make_inputs

cuda = ctypes.CDLL("libcuda.so.1")


def _ok(result, what):
    assert result == 0, f"{what} failed ({result})"


_ok(cuda.cuInit(0), "cuInit")
_device, _context = ctypes.c_int(), ctypes.c_void_p()
_ok(cuda.cuDeviceGet(ctypes.byref(_device), 0), "cuDeviceGet")
_ok(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(_context), _device),
    "cuDevicePrimaryCtxRetain")
_ok(cuda.cuCtxSetCurrent(_context), "cuCtxSetCurrent")


class DeviceArray:
    """A dense f16 or f32 array in the driver's memory, described by the
    CUDA array interface (version 3, with the stream the caller names)."""

    def __init__(self, host, stream=None):
        host = np.ascontiguousarray(host)
        self.shape, self.dtype = host.shape, host.dtype
        pointer = ctypes.c_uint64()
        _ok(cuda.cuMemAllocAsync(ctypes.byref(pointer),
                                 ctypes.c_size_t(host.nbytes), None),
            "cuMemAllocAsync")
        self.pointer = pointer.value
        _ok(cuda.cuMemcpyHtoDAsync_v2(
            ctypes.c_uint64(self.pointer), ctypes.c_void_p(host.ctypes.data),
            ctypes.c_size_t(host.nbytes), None), "cuMemcpyHtoDAsync")
        self.__cuda_array_interface__ = {
            "shape": host.shape, "typestr": host.dtype.str,
            "data": (self.pointer, False), "version": 3, "strides": None,
            "stream": stream}

    def host(self):
        """The array's contents, copied back."""
        out = np.empty(self.shape, dtype=self.dtype)
        _ok(cuda.cuMemcpyDtoHAsync_v2(
            ctypes.c_void_p(out.ctypes.data), ctypes.c_uint64(self.pointer),
            ctypes.c_size_t(out.nbytes), None), "cuMemcpyDtoHAsync")
        _ok(cuda.cuStreamSynchronize(None), "cuStreamSynchronize")
        return out


def main():
    bundle = flashc.load_bundle(sys.argv[1])
    seed = int(sys.argv[2])
    rng = np.random.default_rng(seed)
    chip = flashc._runtime.cuda_chip()  # pylint: disable=protected-access
    print(f"chip {chip}, {len(bundle.variants)} variants")
    decode = any(v["decode"] for v in bundle.variants)
    calls = 0
    for nq, nk, causal, splits in ((1, 70, False, 0), (1, 70, False, 3),
                                   (3, 50, True, 0), (40, 90, True, 0),
                                   (40, 90, False, 0)):
        if (nq <= 16) != decode:
            continue
        q, k, v = make_inputs(rng, 2, 4, 2, nq, nk, 64, dtype=np.float16)
        # Twice each: the second call takes the module's full path again
        # (these tensors have no short path), on new data.
        for _ in range(2):
            q, k, v = make_inputs(rng, 2, 4, 2, nq, nk, 64,
                                  dtype=np.float16)
            out = DeviceArray(np.zeros(q.shape, np.float16), stream=1)
            result = bundle.attention(DeviceArray(q, stream=1), DeviceArray(k),
                                      DeviceArray(v), causal=causal,
                                      splits=splits, out=out)
            assert result is out
            check(out.host(), None, q, k, v, causal, seed)
            calls += 1
    try:
        bundle.attention(DeviceArray(q), DeviceArray(k), DeviceArray(v),
                         causal=True)
    except flashc.FlashcError as e:
        assert "pass out=" in str(e), e
    else:
        raise AssertionError("an output next to CUDA array interface "
                             "objects was allocated")
    try:
        bundle.attention(DeviceArray(q), k, v, out=DeviceArray(q))
    except flashc.FlashcError as e:
        assert "different devices" in str(e), e
    else:
        raise AssertionError("host and device tensors were mixed")
    # The compiler's kernels for the device's chip, through
    # flashc.attention and a compiled Kernel (the JIT compiles once).
    nq = 1 if decode else 33
    for causal in (False, True):
        q, k, v = make_inputs(rng, 1, 4, 2, nq, 45, 64, dtype=np.float16)
        out = DeviceArray(np.zeros(q.shape, np.float16))
        lse = DeviceArray(np.zeros(q.shape[:3], np.float32))
        o, l = flashc.attention(DeviceArray(q), DeviceArray(k),
                                DeviceArray(v), causal=causal, out=out,
                                lse=lse)
        assert o is out and l is lse
        check(out.host(), lse.host(), q, k, v, causal, seed)
        calls += 1
    print(f"{calls} calls on the stand-in driver matched float64")


if __name__ == "__main__":
    main()
