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

    - `flash.attention_step` on a `[G, Br, D]` Q tile: unless the step is
      `key_transposed`, the K block is transposed into an f32 scratch
      `Kt [D, Bc]` (16 x 16 blocks through `vector.transpose`). The G x Br
      rows are processed four at a time (the heads of a GQA group share the
      blocks): `S = Q . Kt` with 4 x 4 `vector<16xf32>` accumulators carried
      through the D loop (broadcast + `vector.fma`), scaled, masked and
      reduced to row maxima as it is stored; then, one row at a time, `exp`
      and the row sum write P over S; and `acc = alpha * acc + P . V` is
      accumulated with the rescale folded into the accumulator load. Under
      a causal mask, columns no row of the block sees are skipped. The f32
      scratch (`Kt` and a 4-row S) is stack memory between
      `llvm.intr.stacksave` and `llvm.intr.stackrestore`, released after
      every step.
    - The `[B, H, N, D] -> [B, H, D, N]` `linalg.transpose` that
      `flash-cpu-transpose-keys` creates: a parallel loop over (batch, head)
      of the same 16 x 16 block transposes.
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
