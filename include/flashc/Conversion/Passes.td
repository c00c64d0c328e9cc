//===- Passes.td - flashc conversion passes ------------------*- tablegen -*-===//
//
// Declares the passes that lower the flash dialect to a backend.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_TD
#define FLASHC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashExpandToCPU : Pass<"flash-expand-to-cpu"> {
  let summary = "Expand the block-level flash ops into register-blocked vector code";
  let description = [{
    The CPU backend's expansion of the online-level ops, on memrefs (after
    bufferization):

    - `flash.attention_step` on a `[G, Br, D]` Q tile: K is transposed into
      an f32 scratch `Kt [D, Bc]` (padded to 16 columns) once per step; for
      each group of 4 query rows, `S = Q . Kt` is computed with 4 x 4
      `vector<16xf32>` accumulators carried through the D loop (broadcast +
      `vector.fma`); the online softmax then runs one row at a time on
      `vector<16xf32>` (scale, mask, max, `exp`, sum), writing P over S; and
      `acc = alpha * acc + P . V` is accumulated with the rescale folded into
      the accumulator load. The f32 scratch (`Kt` and a 4-row S) is stack
      memory between `llvm.intr.stacksave` and `llvm.intr.stackrestore`, so
      it is released after every step.
    - `flash.finalize` and `flash.combine` on any rank: loops over the rows
      with the head dimension vectorised.

    Masked and padded columns are excluded with selects, so fully masked
    rows keep `m = -inf`, `l = 0`, never NaN. The output uses the vector,
    scf, arith, math and memref dialects only. Fails on a step whose Q is not
    rank 3 (run flash-tile first).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def FlashCPUTransposeKeys : Pass<"flash-cpu-transpose-keys"> {
  let summary = "Keep one transposed copy of K for the CPU kernels";
  let description = [{
    The CPU kernel computes `S = Q . K^T` with K's columns in vector lanes,
    so it wants K as `[D, Bc]`. Rather than transposing every K block for
    every Q tile that visits it, this pass transposes each key tensor once
    (`linalg.transpose` to `[B, Hkv, D, Nk]`, where the key tensor is
    defined), slices the blocks from the copy and marks the steps
    `key_transposed`. Runs on tiled tensor IR, before bufferization. Steps
    whose key block is not a slice of a function-level tensor, and steps
    whose Q tile holds the whole query (decode: each key block is read by one
    tile only), are left as they are; the expansion then transposes per
    step.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def FlashApproximateMath : Pass<"flash-approximate-math"> {
  let summary = "Rewrite vector exp/log into polynomial approximations";
  let description = [{
    Applies MLIR's polynomial approximations to `math.exp` and `math.log`
    (and the f32 expansions they rely on) so that LLVM does not scalarise a
    `vector<16xf32>` exponential into sixteen `expf` calls.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // FLASHC_CONVERSION_PASSES_TD
