//===- Npy.h - Reading and writing .npy files -------------------*- C++ -*-===//
//
// The subset of NumPy's .npy format the flashc driver exchanges tensors in:
// little-endian f4 and f2 arrays in C order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_NPY_H
#define FLASHC_TOOLS_FLASHC_NPY_H

#include "flashc/Compiler/Reference.h"
#include "flashc/Support/Npy.h"

#include "llvm/Support/Error.h"

namespace flashc {

/// Reads an input array from `path`: any shape, f4 or f2 elements.
llvm::Expected<NpyArray> readNpyInput(llvm::StringRef path);

/// The element type of an array `readNpyInput` accepted: f4 is f32, f2 is
/// f16.
mlir::flash::ElementType getNpyDType(const NpyArray &array);

/// `shape` as NumPy prints it: "(1, 4, 33, 32)".
std::string formatNpyShape(llvm::ArrayRef<int64_t> shape);

/// Copies `array` (read from `path` by `readNpyInput`) into `tensor`, whose
/// shape it must have, converting its elements to the tensor's type.
llvm::Error copyNpy(llvm::StringRef path, const NpyArray &array,
                    mlir::flash::HostTensor &tensor);

/// Writes `tensor` to `path`: f32 as f4, f16 as f2, bf16 as f4 (NumPy has no
/// bfloat16).
llvm::Error writeNpy(llvm::StringRef path,
                     const mlir::flash::HostTensor &tensor);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_NPY_H
