//===- FlashTileDialect.td - The flash_tile dialect --------*- tablegen -*-===//
//
// The `flash_tile` dialect: tiles whose types carry how their elements are
// spread over threads, warps and registers, or where they live in shared
// memory; the level between the tiled `flash` IR and NVGPU/NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_TD
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_TD

include "mlir/IR/OpBase.td"

def FlashTile_Dialect : Dialect {
  let name = "flash_tile";
  let cppNamespace = "::mlir::flash_tile";
  // A TMA copy takes its tensor map as an !llvm.ptr kernel parameter.
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let summary = "Tiles with layouts: the level of a CTA's schedule";
  let description = [{
    The `flash_tile` dialect describes what one CTA of an attention kernel
    does, block by block, as operations on tiles. A tile is a value: a
    small 1-D or 2-D array that the CTA's threads hold in registers
    (`!flash_tile.tile`), or a buffer of one or more stages in shared memory
    (`!flash_tile.shared`). Its type carries its layout, an attribute that
    says which thread and register holds each element:

    - `#flash_tile.mma`: the accumulator of a warp-level matrix
      multiply-accumulate, repeated over a grid of warps;
    - `#flash_tile.operand`: an A or B operand of that multiply;
    - `#flash_tile.slice`: a row (or column) vector of a 2-D layout, what a
      row reduction of it leaves;
    - `#flash_tile.blocked`: contiguous runs per thread, for copies between
      global and shared memory;
    - `#flash_tile.swizzled`: the placement of a shared-memory buffer's rows,
      with the XOR swizzle that keeps a warp's accesses free of bank
      conflicts.

    The operations' meaning is that of the tiles' elements; nothing in it is
    specific to one GPU. What is NVIDIA-specific lives in the layouts and in
    the patterns that lower the ops (an `mma` is `mma.sync` on sm_80 and
    `wgmma` on sm_90a; the shared-to-operand `local_load` is `ldmatrix`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

class FlashTile_Op<string mnemonic, list<Trait> traits = []>
    : Op<FlashTile_Dialect, mnemonic, traits>;

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_TD
