//===- CudaDriverApiCheck.cpp - The driver declarations against cuda.h ----===//
//
// Compiled (not run) where the CUDA toolkit's cuda.h is at hand: the
// runtime's own declarations of the driver API (lib/Runtime/CudaDriverApi.h)
// must agree with it. For every entry point the runtime resolves, the
// exported symbol is the one cuda.h's macros select, and the function has
// as many parameters, each of the same size, as cuda.h's; every constant
// has cuda.h's value; the handles and device pointers have cuda.h's sizes,
// and the structures cuda.h's size and field offsets.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include "CudaDriverApi.h"

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace fc = flashc::cuda;

namespace {

/// Whether two function types have the same arity and the same sizes of
/// result and parameters (the driver ABI on the platforms flashc builds
/// for: every parameter is an integer, an enum or a pointer).
template <typename A, typename B> struct SameShape : std::false_type {};
template <typename RA, typename... A, typename RB, typename... B>
struct SameShape<RA(A...), RB(B...)> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A) != sizeof...(B))
      return false;
    else
      return sizeof(RA) == sizeof(RB) && ((sizeof(A) == sizeof(B)) && ...);
  }();
};

#define FLASHC_STRINGIFY_EXPANDED(x) FLASHC_STRINGIFY(x)
#define FLASHC_STRINGIFY(x) #x

// `name` expands to the symbol cuda.h's macros select (the _v2 copies).
#define FLASHC_CHECK_FUNCTION(name, symbol, type)                              \
  static_assert(std::string_view(FLASHC_STRINGIFY_EXPANDED(name)) == symbol,   \
                "cuda.h calls another symbol for " #name);                     \
  static_assert(SameShape<decltype(::name), fc::name##Fn>::value,              \
                "cuda.h declares " #name " with other parameters");
FLASHC_CUDA_DRIVER_FUNCTIONS(FLASHC_CHECK_FUNCTION)
FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FLASHC_CHECK_FUNCTION)
#undef FLASHC_CHECK_FUNCTION

#define FLASHC_CHECK_VALUE(name)                                               \
  static_assert(static_cast<long long>(fc::name) ==                            \
                    static_cast<long long>(::name),                            \
                #name " differs from cuda.h");
FLASHC_CHECK_VALUE(CUDA_SUCCESS)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_VALUE)
FLASHC_CHECK_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
FLASHC_CHECK_VALUE(CUDA_ERROR_NOT_INITIALIZED)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_DEVICE)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_CONTEXT)
FLASHC_CHECK_VALUE(CUDA_ERROR_NO_BINARY_FOR_GPU)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_PTX)
FLASHC_CHECK_VALUE(CUDA_ERROR_NOT_FOUND)
FLASHC_CHECK_VALUE(CUDA_ERROR_NOT_READY)
FLASHC_CHECK_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS)
FLASHC_CHECK_VALUE(CUDA_ERROR_LAUNCH_TIMEOUT)
FLASHC_CHECK_VALUE(CUDA_ERROR_ASSERT)
FLASHC_CHECK_VALUE(CUDA_ERROR_HARDWARE_STACK_ERROR)
FLASHC_CHECK_VALUE(CUDA_ERROR_ILLEGAL_INSTRUCTION)
FLASHC_CHECK_VALUE(CUDA_ERROR_MISALIGNED_ADDRESS)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_ADDRESS_SPACE)
FLASHC_CHECK_VALUE(CUDA_ERROR_INVALID_PC)
FLASHC_CHECK_VALUE(CUDA_ERROR_LAUNCH_FAILED)
FLASHC_CHECK_VALUE(CUDA_ERROR_NOT_SUPPORTED)
FLASHC_CHECK_VALUE(CUDA_ERROR_UNKNOWN)
FLASHC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
FLASHC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
FLASHC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
FLASHC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
FLASHC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
FLASHC_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER)
FLASHC_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
FLASHC_CHECK_VALUE(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
FLASHC_CHECK_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED)
FLASHC_CHECK_VALUE(CU_MEM_HANDLE_TYPE_NONE)
FLASHC_CHECK_VALUE(CU_MEM_LOCATION_TYPE_DEVICE)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_INTERLEAVE_NONE)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_SWIZZLE_NONE)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_SWIZZLE_32B)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_SWIZZLE_64B)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_SWIZZLE_128B)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_L2_PROMOTION_NONE)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_L2_PROMOTION_L2_128B)
FLASHC_CHECK_VALUE(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
FLASHC_CHECK_VALUE(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
#undef FLASHC_CHECK_VALUE

#define FLASHC_CHECK_SIZE(type)                                                \
  static_assert(sizeof(fc::type) == sizeof(::type),                            \
                "the size of " #type " differs from cuda.h's");
FLASHC_CHECK_SIZE(CUresult)
FLASHC_CHECK_SIZE(CUdevice_attribute)
FLASHC_CHECK_SIZE(CUfunction_attribute)
FLASHC_CHECK_SIZE(CUjit_option)
FLASHC_CHECK_SIZE(CUdevice)
FLASHC_CHECK_SIZE(CUdeviceptr)
FLASHC_CHECK_SIZE(CUcontext)
FLASHC_CHECK_SIZE(CUmodule)
FLASHC_CHECK_SIZE(CUfunction)
FLASHC_CHECK_SIZE(CUstream)
FLASHC_CHECK_SIZE(CUmemoryPool)
FLASHC_CHECK_SIZE(CUmemPool_attribute)
FLASHC_CHECK_SIZE(CUmemLocation)
FLASHC_CHECK_SIZE(CUmemPoolProps)
FLASHC_CHECK_SIZE(CUtensorMap)
FLASHC_CHECK_SIZE(CUtensorMapDataType)
FLASHC_CHECK_SIZE(CUtensorMapSwizzle)
FLASHC_CHECK_SIZE(CUlaunchAttributeID)
FLASHC_CHECK_SIZE(CUlaunchAttributeValue)
FLASHC_CHECK_SIZE(CUlaunchAttribute)
FLASHC_CHECK_SIZE(CUlaunchConfig)
static_assert(alignof(fc::CUtensorMap) >= 64,
              "a CUtensorMap must be 64-byte aligned");
#undef FLASHC_CHECK_SIZE

// The fields flashc sets, where cuda.h has them.
#define FLASHC_CHECK_FIELD(type, field)                                        \
  static_assert(offsetof(fc::type, field) == offsetof(::type, field),          \
                #type "::" #field " is elsewhere in cuda.h's " #type);
FLASHC_CHECK_FIELD(CUmemLocation, type)
FLASHC_CHECK_FIELD(CUmemLocation, id)
FLASHC_CHECK_FIELD(CUmemPoolProps, allocType)
FLASHC_CHECK_FIELD(CUmemPoolProps, handleTypes)
FLASHC_CHECK_FIELD(CUmemPoolProps, location)
FLASHC_CHECK_FIELD(CUmemPoolProps, win32SecurityAttributes)
FLASHC_CHECK_FIELD(CUmemPoolProps, maxSize)
FLASHC_CHECK_FIELD(CUmemPoolProps, usage)
FLASHC_CHECK_FIELD(CUmemPoolProps, reserved)
FLASHC_CHECK_FIELD(CUlaunchAttribute, id)
FLASHC_CHECK_FIELD(CUlaunchAttribute, value)
FLASHC_CHECK_FIELD(CUlaunchAttributeValue,
                   programmaticStreamSerializationAllowed)
FLASHC_CHECK_FIELD(CUlaunchConfig, gridDimX)
FLASHC_CHECK_FIELD(CUlaunchConfig, gridDimY)
FLASHC_CHECK_FIELD(CUlaunchConfig, gridDimZ)
FLASHC_CHECK_FIELD(CUlaunchConfig, blockDimX)
FLASHC_CHECK_FIELD(CUlaunchConfig, blockDimY)
FLASHC_CHECK_FIELD(CUlaunchConfig, blockDimZ)
FLASHC_CHECK_FIELD(CUlaunchConfig, sharedMemBytes)
FLASHC_CHECK_FIELD(CUlaunchConfig, hStream)
FLASHC_CHECK_FIELD(CUlaunchConfig, attrs)
FLASHC_CHECK_FIELD(CUlaunchConfig, numAttrs)
#undef FLASHC_CHECK_FIELD

} // namespace
