//===- Npy.h - Reading and writing .npy files -------------------*- C++ -*-===//
//
// The subset of NumPy's .npy format the flashc driver exchanges tensors in:
// little-endian f4 and f2 arrays in C order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_NPY_H
#define FLASHC_TOOLS_FLASHC_NPY_H

#include "flashc/Compiler/Reference.h"

#include "llvm/Support/Error.h"

namespace flashc {

/// Reads `path` into `tensor`, whose shape it must have; f4 and f2 files are
/// converted to the tensor's element type.
llvm::Error readNpy(llvm::StringRef path, mlir::flash::HostTensor &tensor);

/// Writes `tensor` to `path`: f32 as f4, f16 as f2, bf16 as f4 (NumPy has no
/// bfloat16).
llvm::Error writeNpy(llvm::StringRef path,
                     const mlir::flash::HostTensor &tensor);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_NPY_H
