//===- CudaDriverApi.h - The part of the CUDA driver API flashc uses ------===//
//
// The CUDA driver's types, constants and entry points that the runtime
// calls (CudaDevice.cpp, through dlopen of libcuda.so.1) and that the
// tests' stand-in driver defines (unittests/Runtime/FakeCudaDriver.cpp),
// declared here with the values of the driver ABI so that neither needs
// the CUDA toolkit's cuda.h to build. The driver ABI is stable: these
// values and signatures are those of cuda.h since CUDA 11.2 (the first
// with cuMemAllocAsync). Where the toolkit is at hand, the build checks
// them against its cuda.h (unittests/Runtime/CudaDriverApiCheck.cpp).
//
// Private to the runtime and its tests; not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_RUNTIME_CUDADRIVERAPI_H
#define FLASHC_LIB_RUNTIME_CUDADRIVERAPI_H

#include <cstddef>

namespace flashc::cuda {

/// Status of every driver call (cuda.h's `enum cudaError_enum`): the
/// values flashc and its stand-in driver use.
enum CUresult : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

/// Device attributes (cuDeviceGetAttribute).
enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/// Function attributes (cuFuncSetAttribute).
enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/// Stream-ordered memory pools (cuMemPoolCreate, cuMemPoolSetAttribute):
/// the values flashc sets.
enum CUmemPool_attribute : int {
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
};
enum CUmemAllocationType : int {
  CU_MEM_ALLOCATION_TYPE_PINNED = 1,
};
enum CUmemAllocationHandleType : int {
  CU_MEM_HANDLE_TYPE_NONE = 0,
};
enum CUmemLocationType : int {
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
};
struct CUmemLocation {
  CUmemLocationType type;
  int id;
};
/// A pool's properties (cuda.h's CUmemPoolProps_v1; CUDA 11.2 had 64
/// reserved bytes where maxSize, usage and reserved are now: zeroed, the
/// two layouts mean the same).
struct CUmemPoolProps {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};

/// Options of the driver's PTX JIT (cuModuleLoadDataEx).
enum CUjit_option : int {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/// Tensor maps (cuTensorMapEncodeTiled, CUDA 12.0+): 128 opaque bytes
/// that a TMA copy reads, and the values of the enums flashc passes.
struct alignas(64) CUtensorMap {
  unsigned long long opaque[16];
};
enum CUtensorMapDataType : int {
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};
enum CUtensorMapInterleave : int {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
};
enum CUtensorMapSwizzle : int {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B = 1,
  CU_TENSOR_MAP_SWIZZLE_64B = 2,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
};
enum CUtensorMapL2promotion : int {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
};
enum CUtensorMapFloatOOBfill : int {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
};

/// cuLaunchKernelEx's attributes: programmatic stream serialization only
/// (value.programmaticStreamSerializationAllowed, an int at the start of
/// the 64-byte union).
enum CUlaunchAttributeID : int {
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
};
union CUlaunchAttributeValue {
  char pad[64];
  int programmaticStreamSerializationAllowed;
};
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
};

/// A device ordinal's handle, and device addresses (64 bits on every
/// platform flashc builds for).
using CUdevice = int;
using CUdeviceptr = unsigned long long;

/// Opaque handles: pointers to driver-owned structures.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUmemPoolHandle_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUmemoryPool = CUmemPoolHandle_st *;

struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};

/// The entry points flashc calls: X(name, exported symbol, function type).
/// The exported symbol is the one cuda.h's macros select for `name` (the
/// _v2 copies take 64-bit sizes and device pointers).
#define FLASHC_CUDA_DRIVER_FUNCTIONS(X)                                        \
  X(cuInit, "cuInit", CUresult(unsigned))                                      \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int *))                 \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                     \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                     \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute",                              \
    CUresult(int *, CUdevice_attribute, CUdevice))                             \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char *, int, CUdevice))       \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    CUresult(CUcontext *, CUdevice))                                           \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult(CUcontext *))                 \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                   \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                  \
    CUresult(CUmodule *, const void *, unsigned, CUjit_option *, void **))     \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    CUresult(CUfunction *, CUmodule, const char *))                            \
  X(cuFuncSetAttribute, "cuFuncSetAttribute",                                  \
    CUresult(CUfunction, CUfunction_attribute, int))                           \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,     \
             unsigned, unsigned, CUstream, void **, void **))                  \
  X(cuMemAllocAsync, "cuMemAllocAsync",                                        \
    CUresult(CUdeviceptr *, size_t, CUstream))                                 \
  X(cuMemFreeAsync, "cuMemFreeAsync", CUresult(CUdeviceptr, CUstream))         \
  X(cuMemPoolCreate, "cuMemPoolCreate",                                        \
    CUresult(CUmemoryPool *, const CUmemPoolProps *))                          \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute",                            \
    CUresult(CUmemoryPool, CUmemPool_attribute, void *))                       \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync",                        \
    CUresult(CUdeviceptr *, size_t, CUmemoryPool, CUstream))                   \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char **))   \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                 \
    CUresult(CUdeviceptr, const void *, size_t, CUstream))                     \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                 \
    CUresult(void *, CUdeviceptr, size_t, CUstream))                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))            \
  X(cuStreamQuery, "cuStreamQuery", CUresult(CUstream))

/// Entry points that only some drivers have, resolved when present: the
/// runtime checks for null before a call that needs one (tensor maps need
/// a CUDA 12 driver; a programmatic dependent launch cuLaunchKernelEx, of
/// CUDA 11.8, without which such kernels launch as any other; everything
/// else works with CUDA 11.2).
#define FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X)                               \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                          \
    CUresult(CUtensorMap *, CUtensorMapDataType, unsigned, void *,             \
             const unsigned long long *, const unsigned long long *,           \
             const unsigned *, const unsigned *, CUtensorMapInterleave,        \
             CUtensorMapSwizzle, CUtensorMapL2promotion,                       \
             CUtensorMapFloatOOBfill))                                         \
  X(cuLaunchKernelEx, "cuLaunchKernelEx",                                      \
    CUresult(const CUlaunchConfig *, CUfunction, void **, void **))

/// `cuInitFn` and so on: the function type of each entry point.
#define FLASHC_CUDA_DECLARE_FUNCTION_TYPE(name, symbol, type)                  \
  using name##Fn = type;
FLASHC_CUDA_DRIVER_FUNCTIONS(FLASHC_CUDA_DECLARE_FUNCTION_TYPE)
FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FLASHC_CUDA_DECLARE_FUNCTION_TYPE)
#undef FLASHC_CUDA_DECLARE_FUNCTION_TYPE

} // namespace flashc::cuda

#endif // FLASHC_LIB_RUNTIME_CUDADRIVERAPI_H
