//===- Npy.cpp - Reading and writing .npy files ---------------------------===//
//
// The driver's side of flashc/Support/Npy.h: converts between the .npy
// arrays it reads and writes and HostTensor's element types.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstring>

using namespace mlir::flash;
using flashc::NpyArray;

llvm::Expected<NpyArray> flashc::readNpyInput(llvm::StringRef path) {
  NpyArray array;
  std::string error;
  if (!readNpy(path.str(), array, error))
    return llvm::createStringError(error);
  if (array.descr != "<f4" && array.descr != "<f2")
    return llvm::createStringError(path.str() + ": unsupported dtype '" +
                                   array.descr + "'; expected '<f4' or '<f2'");
  return array;
}

ElementType flashc::getNpyDType(const NpyArray &array) {
  return array.descr == "<f2" ? ElementType::F16 : ElementType::F32;
}

std::string flashc::formatNpyShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

llvm::Error flashc::copyNpy(llvm::StringRef path, const NpyArray &array,
                            HostTensor &tensor) {
  if (array.shape != tensor.getSizes())
    return llvm::createStringError(path.str() + ": has shape " +
                                   formatNpyShape(array.shape) + ", expected " +
                                   formatNpyShape(tensor.getSizes()));
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
  bool half = tensor.getDType() == ElementType::F16;
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
