//===- Npy.cpp - Reading and writing .npy files ---------------------------===//
//
// The driver's side of flashc/Support/Npy.h: converts between the .npy
// arrays it reads and writes and HostTensor's element types.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "flashc/Support/Npy.h"

#include <cstring>

using namespace mlir::flash;

llvm::Error flashc::readNpy(llvm::StringRef path, HostTensor &tensor) {
  NpyArray array;
  std::string error;
  if (!readNpy(path.str(), array, error, &tensor.getSizes()))
    return llvm::createStringError(error);
  if (array.descr != "<f4" && array.descr != "<f2")
    return llvm::createStringError(path.str() + ": unsupported dtype '" +
                                   array.descr + "'; expected '<f4' or '<f2'");
  bool half = array.descr == "<f2";
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    if (half) {
      uint16_t bits;
      std::memcpy(&bits, array.data.data() + 2 * i, 2);
      tensor.set(i, halfToFloat(bits));
    } else {
      float f;
      std::memcpy(&f, array.data.data() + 4 * i, 4);
      tensor.set(i, f);
    }
  }
  return llvm::Error::success();
}

llvm::Error flashc::writeNpy(llvm::StringRef path, const HostTensor &tensor) {
  bool half = tensor.getDType() == DType::F16;
  NpyArray array;
  array.descr = half ? "<f2" : "<f4";
  array.shape = tensor.getSizes();
  array.data.resize(static_cast<size_t>(tensor.getNumElements()) *
                    (half ? 2 : 4));
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    if (half) {
      uint16_t bits = floatToHalf(static_cast<float>(tensor.get(i)));
      std::memcpy(array.data.data() + 2 * i, &bits, 2);
    } else {
      float f = static_cast<float>(tensor.get(i));
      std::memcpy(array.data.data() + 4 * i, &f, 4);
    }
  }
  std::string error;
  if (!writeNpy(path.str(), array, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}
