//===- TensorMap.cpp - TMA tensor maps in the simulator's format ----------===//
//
// Encoding and checking of tiled tensor maps (TensorMap.h). The rules are
// those cuda.h documents for cuTensorMapEncodeTiled; each error names the
// argument and the rule it breaks.
//
//===----------------------------------------------------------------------===//

#include "flashc/Simulator/TensorMap.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

using namespace flashc;
using namespace flashc::sim;

unsigned sim::tensorMapElementBytes(uint32_t type) {
  switch (static_cast<TensorMapDataType>(type)) {
  case TensorMapDataType::UInt8:
    return 1;
  case TensorMapDataType::UInt16:
  case TensorMapDataType::Float16:
  case TensorMapDataType::BFloat16:
    return 2;
  case TensorMapDataType::UInt32:
  case TensorMapDataType::Int32:
  case TensorMapDataType::Float32:
  case TensorMapDataType::Float32Ftz:
  case TensorMapDataType::TFloat32:
  case TensorMapDataType::TFloat32Ftz:
    return 4;
  case TensorMapDataType::UInt64:
  case TensorMapDataType::Int64:
  case TensorMapDataType::Float64:
    return 8;
  }
  return 0;
}

static bool isFloatType(uint32_t type) {
  switch (static_cast<TensorMapDataType>(type)) {
  case TensorMapDataType::Float16:
  case TensorMapDataType::Float32:
  case TensorMapDataType::Float64:
  case TensorMapDataType::BFloat16:
  case TensorMapDataType::Float32Ftz:
  case TensorMapDataType::TFloat32:
  case TensorMapDataType::TFloat32Ftz:
    return true;
  default:
    return false;
  }
}

uint32_t TensorMap::boxCount(unsigned dim) const {
  if (dim >= rank)
    return 1;
  uint32_t step = dim == 0 ? 1 : elementStrides[dim];
  return (boxDim[dim] + step - 1) / step;
}

uint64_t TensorMap::boxBytes() const {
  uint64_t bytes = elementBytes;
  for (unsigned d = 0; d < rank; ++d)
    bytes *= boxCount(d);
  return bytes;
}

namespace {

/// The checks shared by encoding (from the driver call's arguments) and
/// decoding (from a map in simulated memory): `map` is complete but for
/// the magic number.
Status check(const TensorMap &map, uint32_t interleave) {
  auto invalid = [](const std::string &what) {
    return Status::invalidArgument("tensor map: " + what);
  };
  auto unsupported = [](const std::string &what) {
    return Status::make(ErrorCode::Unsupported,
                        "tensor map: " + what +
                            " is not implemented by the simulator");
  };
  if (map.dataType >= 13 && map.dataType <= 15)
    return unsupported("the packed data type " + std::to_string(map.dataType));
  if (tensorMapElementBytes(map.dataType) == 0)
    return invalid("data type " + std::to_string(map.dataType) +
                   " is not a CUtensorMapDataType");
  if (map.rank < 1 || map.rank > kTensorMapMaxRank)
    return invalid("rank " + std::to_string(map.rank) +
                   " is not between 1 and 5");
  if (interleave > 2)
    return invalid("interleave " + std::to_string(interleave) +
                   " is not a CUtensorMapInterleave");
  if (interleave != 0)
    return unsupported("an interleaved layout");
  if (map.globalAddress % 16) {
    char address[32];
    std::snprintf(address, sizeof address, "0x%llx",
                  static_cast<unsigned long long>(map.globalAddress));
    return invalid("the global address " + std::string(address) +
                   " is not 16-byte aligned");
  }
  for (unsigned d = 0; d < map.rank; ++d) {
    std::string dim = "dimension " + std::to_string(d);
    if (map.globalDim[d] < 1 || map.globalDim[d] > (uint64_t(1) << 32))
      return invalid("globalDim of " + dim + " (" +
                     std::to_string(map.globalDim[d]) +
                     ") is not between 1 and 2^32");
    if (d > 0 && (map.globalStride[d] % 16 ||
                  map.globalStride[d] >= (uint64_t(1) << 40)))
      return invalid("globalStrides of " + dim + " (" +
                     std::to_string(map.globalStride[d]) +
                     " bytes) is not a multiple of 16 below 2^40");
    if (map.boxDim[d] < 1 || map.boxDim[d] > 256)
      return invalid("boxDim of " + dim + " (" + std::to_string(map.boxDim[d]) +
                     ") is not between 1 and 256");
    if (map.elementStrides[d] < 1 || map.elementStrides[d] > 8)
      return invalid("elementStrides of " + dim + " (" +
                     std::to_string(map.elementStrides[d]) +
                     ") is not between 1 and 8");
  }
  uint32_t innerBytes = map.boxRowBytes();
  if (innerBytes % 16)
    return invalid("the box's inner dimension (" + std::to_string(innerBytes) +
                   " bytes) is not a multiple of 16 bytes");
  if (map.swizzle >= 4 && map.swizzle <= 6)
    return unsupported("swizzle " + std::to_string(map.swizzle) +
                       " (a 128-byte swizzle of 32- or 64-byte atoms)");
  if (map.swizzle > 6)
    return invalid("swizzle " + std::to_string(map.swizzle) +
                   " is not a CUtensorMapSwizzle");
  if (map.swizzle != 0) {
    uint32_t span = 16u << map.swizzle; // 32, 64, 128
    if (innerBytes > span)
      return invalid("the box's inner dimension (" +
                     std::to_string(innerBytes) + " bytes) exceeds the " +
                     std::to_string(span) + "-byte swizzle span");
  }
  if (map.l2Promotion > 3)
    return invalid("l2Promotion " + std::to_string(map.l2Promotion) +
                   " is not a CUtensorMapL2promotion");
  if (map.oobFill > 1)
    return invalid("oobFill " + std::to_string(map.oobFill) +
                   " is not a CUtensorMapFloatOOBfill");
  if (map.oobFill == 1 && !isFloatType(map.dataType))
    return invalid("the NaN out-of-bounds fill needs a floating-point type");
  return Status::success();
}

} // namespace

Status sim::encodeTensorMapTiled(void *out, const TensorMapTiledArgs &args) {
  if (!out)
    return Status::invalidArgument("tensor map: the map pointer is null");
  if (reinterpret_cast<uintptr_t>(out) % kTensorMapAlign)
    return Status::invalidArgument(
        "tensor map: the map is not 64-byte aligned");
  if (args.rank < 1 || args.rank > kTensorMapMaxRank)
    return Status::invalidArgument("tensor map: rank " +
                                   std::to_string(args.rank) +
                                   " is not between 1 and 5");
  if (!args.globalDim || !args.boxDim || !args.elementStrides ||
      (args.rank > 1 && !args.globalStrides))
    return Status::invalidArgument("tensor map: a null size array");
  TensorMap map;
  map.magic = TensorMap::kMagic;
  map.rank = static_cast<uint8_t>(args.rank);
  map.dataType = static_cast<uint8_t>(std::min<uint32_t>(args.dataType, 255));
  map.elementBytes = static_cast<uint8_t>(tensorMapElementBytes(args.dataType));
  map.swizzle = static_cast<uint8_t>(std::min<uint32_t>(args.swizzle, 255));
  map.oobFill = static_cast<uint8_t>(std::min<uint32_t>(args.oobFill, 255));
  map.l2Promotion =
      static_cast<uint8_t>(std::min<uint32_t>(args.l2Promotion, 255));
  map.globalAddress = args.globalAddress;
  for (unsigned d = 0; d < args.rank; ++d) {
    map.globalDim[d] = args.globalDim[d];
    map.globalStride[d] = d == 0 ? map.elementBytes : args.globalStrides[d - 1];
    if (args.boxDim[d] > 0xffff || args.elementStrides[d] > 0xff)
      return Status::invalidArgument(
          "tensor map: boxDim or elementStrides of dimension " +
          std::to_string(d) + " is out of range");
    map.boxDim[d] = static_cast<uint16_t>(args.boxDim[d]);
    map.elementStrides[d] = static_cast<uint8_t>(args.elementStrides[d]);
  }
  if (args.dataType > 255)
    return Status::invalidArgument("tensor map: data type " +
                                   std::to_string(args.dataType) +
                                   " is not a CUtensorMapDataType");
  if (args.swizzle > 255 || args.oobFill > 255 || args.l2Promotion > 255)
    return Status::invalidArgument(
        "tensor map: swizzle, l2Promotion or oobFill is out of range");
  if (Status e = check(map, args.interleave))
    return e;
  std::memset(out, 0, kTensorMapBytes);
  std::memcpy(out, &map, sizeof map);
  return Status::success();
}

Result<TensorMap> sim::decodeTensorMap(const void *bytes) {
  TensorMap map;
  std::memcpy(&map, bytes, sizeof map);
  if (map.magic != TensorMap::kMagic)
    return Status::invalidArgument(
        "tensor map: the 128 bytes do not hold a map that "
        "cuTensorMapEncodeTiled wrote (no simulator map signature)");
  if (map.elementBytes != tensorMapElementBytes(map.dataType))
    return Status::invalidArgument(
        "tensor map: the element size does not match the data type");
  if (map.rank >= 1 && map.rank <= kTensorMapMaxRank &&
      map.globalStride[0] != map.elementBytes)
    return Status::invalidArgument(
        "tensor map: the stride of dimension 0 is not the element size");
  if (Status e = check(map, /*interleave=*/0))
    return e;
  return map;
}
