//===- Passes.td - flash_tile passes -----------------------*- tablegen -*-===//
//
// Declares the passes over flash_tile IR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD
#define FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashTileAllocateShared : Pass<"flash-tile-allocate-shared"> {
  let summary = "Place a kernel's shared buffers and check the budget";
  let description = [{
    Gives every `flash_tile.alloc` of a function (a `func.func` or a
    `gpu.func`) its byte offset in the CTA's dynamic shared memory, in the
    order the allocations appear, each aligned to 128 bytes (so that a
    swizzled buffer's rows start on the bank pattern the swizzle assumes),
    and records the total on the function as `flash.shared_bytes`. Every
    buffer lives until the kernel ends: no two share memory.

    The total must fit the budget: `shared-bytes`, or, when it is 0, the
    opt-in maximum per CTA of the `chip` (163 KiB on sm_80, 227 KiB on
    sm_90a). A function over the budget is an error that lists its
    buffers and their sizes.

    Example:

    ```mlir
    %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #swizzled>
    %k = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #swizzled>
    ```

    becomes

    ```mlir
    %q = flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x64x64xf16, #swizzled>
    %k = flash_tile.alloc {offset = 8192 : i64} : !flash_tile.shared<2x64x64xf16, #swizzled>
    // and on the function: flash.shared_bytes = 24576 : i64
    ```
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "The GPU chip whose shared memory per CTA is the budget "
           "(sm_80 or sm_90a)">,
    Option<"sharedBytes", "shared-bytes", "int64_t", /*default=*/"0",
           "The budget in bytes (0: the chip's opt-in maximum per CTA)">,
  ];
  let statistics = [
    Statistic<"numBuffers", "num-buffers", "Shared buffers placed">,
    Statistic<"numBytes", "num-bytes",
              "Bytes of shared memory placed, alignment included">,
  ];
}

#endif // FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD
