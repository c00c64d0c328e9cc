//===- FlashDialect.td - The flash dialect definition ------*- tablegen -*-===//
//
// The `flash` dialect: attention, softmax and GEMM as first-class operations
// on ranked tensors, the entry level of the flashc compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD

include "mlir/IR/OpBase.td"

def Flash_Dialect : Dialect {
  let name = "flash";
  let cppNamespace = "::mlir::flash";
  let summary = "Attention, softmax and GEMM for the flashc attention compiler";
  let description = [{
    The `flash` dialect is the entry level of flashc. It expresses attention
    either as a naive graph (`flash.matmul`, `flash.softmax` and an
    elementwise scale) or directly as one `flash.attention` operation.

    The graph level is what a framework hands over: it materialises the
    `N x N` score matrix. `flash-fuse-attention` recognises the chain
    `matmul(Q, K^T) -> scale -> softmax -> matmul(., V)` and replaces it with
    a single `flash.attention`, which later passes rewrite into the
    FlashAttention algorithm (online softmax over SRAM-sized tiles) without
    ever materialising the score matrix.

    Tensor layout follows the common `[batch, heads, sequence, head_dim]`
    convention. Accumulation is always performed in f32, whatever the
    element type of the operands.
  }];
}

class Flash_Op<string mnemonic, list<Trait> traits = []>
    : Op<Flash_Dialect, mnemonic, traits>;

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
