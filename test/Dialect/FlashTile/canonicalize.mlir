// RUN: flashc-opt %s --canonicalize | FileCheck %s

// A conversion to the layout a tile has is the tile; so is converting back
// what was just converted. A conversion that changes the layout stays.

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>

// CHECK-LABEL: func.func @fold
// CHECK-SAME: (%[[T:.*]]: !flash_tile.tile<64x64xf16, #mma>)
func.func @fold(%t: !flash_tile.tile<64x64xf16, #mma>)
    -> (!flash_tile.tile<64x64xf16, #mma>, !flash_tile.tile<64x64xf16, #mma>,
        !flash_tile.tile<64x64xf16, #a>) {
  %same = flash_tile.convert_layout %t
      : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #mma>
  // CHECK: %[[A:.*]] = flash_tile.convert_layout %[[T]] : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #mma_a>
  %there = flash_tile.convert_layout %t
      : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #a>
  %back = flash_tile.convert_layout %there
      : !flash_tile.tile<64x64xf16, #a> -> !flash_tile.tile<64x64xf16, #mma>
  // CHECK-NOT: flash_tile.convert_layout
  // CHECK: return %[[T]], %[[T]], %[[A]]
  return %same, %back, %there : !flash_tile.tile<64x64xf16, #mma>,
      !flash_tile.tile<64x64xf16, #mma>, !flash_tile.tile<64x64xf16, #a>
}
