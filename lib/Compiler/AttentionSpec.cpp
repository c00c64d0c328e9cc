//===- AttentionSpec.cpp - The checks and derived forms of a spec ---------===//
//
// The checks of an AttentionSpec and of a softmax scale, the problem in the
// models' terms, and the spec of one KV head group that a kernel is compiled
// from.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"

using namespace mlir;
using namespace mlir::flash;

llvm::Error AttentionSpec::validate() const {
  if (flashc::Status status = check())
    return llvm::createStringError(status.message());
  return llvm::Error::success();
}

llvm::Error mlir::flash::checkScale(double scale) {
  if (flashc::Status status = flashc::checkScale(scale))
    return llvm::createStringError(status.message());
  return llvm::Error::success();
}

::flashc::AttentionProblem AttentionSpec::shape() const {
  ::flashc::AttentionProblem s = *this;
  s.headDimV = valueDim();
  return s;
}

AttentionSpec mlir::flash::detail::groupKernelSpec(const AttentionSpec &spec) {
  AttentionSpec k = spec;
  k.heads = spec.heads / spec.kvHeads;
  k.kvHeads = 1;
  return k;
}
