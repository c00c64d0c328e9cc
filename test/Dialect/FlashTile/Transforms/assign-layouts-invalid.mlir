// RUN: split-file %s %t
// RUN: flashc-opt %t/form.mlir --split-input-file --verify-diagnostics \
// RUN:   --flash-tile-assign-layouts
// RUN: flashc-opt %t/narrow.mlir --verify-diagnostics \
// RUN:   --flash-tile-assign-layouts=rows-per-warp=32
// RUN: flashc-opt %t/warpgroup.mlir --verify-diagnostics \
// RUN:   --flash-tile-assign-layouts=rows-per-warp=32
// RUN: not flashc-opt %t/narrow.mlir --flash-tile-assign-layouts=rows-per-warp=8 \
// RUN:   2>&1 | FileCheck %s --check-prefix=OPTION

// Kernels whose layouts flash-tile-assign-layouts cannot choose: each rule
// of Passes.td, and the option.

// OPTION: error: flash-tile-assign-layouts: rows-per-warp is 16, 32 or 0 (the schedule's choice), not 8

//--- form.mlir
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// Tiles without layouts need an MMA to take the warps from.
// expected-error@+1 {{flash-tile-assign-layouts: @no_mma has tiles without layouts and no flash_tile.mma to choose its warps from}}
func.func @no_mma(%out: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  flash_tile.store %t, %out[%c0] valid %n : !flash_tile.tile<64x64xf32>, memref<?x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// One tile of rows: two MMAs of 64 and 32 rows do not share a layout.
func.func @two_tiles(%qs: !flash_tile.shared<1x64x64xf16, #sw>,
                     %ks: !flash_tile.shared<1x64x64xf16, #sw>,
                     %rs: !flash_tile.shared<1x32x64xf16, #sw>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %r = flash_tile.local_load %rs[%c0] : !flash_tile.shared<1x32x64xf16, #sw> -> !flash_tile.tile<32x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %a0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  %b0 = flash_tile.splat %zero : !flash_tile.tile<32x64xf32>
  %a = flash_tile.mma %q, %kt, %a0 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: the kernel's MMAs accumulate 1 x 64 rows (batch x rows) and 1 x 32; one layout serves one tile of rows}}
  %b = flash_tile.mma %r, %kt, %b0 : !flash_tile.tile<32x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<32x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// 48 rows are 3 warps of 16: the copies spread over a power of two.
func.func @three_warps(%qs: !flash_tile.shared<1x48x64xf16, #sw>,
                       %ks: !flash_tile.shared<1x64x64xf16, #sw>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x48x64xf16, #sw> -> !flash_tile.tile<48x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<48x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: 3 row warps x 1 kv warps is 3 warps; a CTA takes a power of two of at most 32}}
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<48x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<48x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// A splat that only a store reads has no user to take a layout from.
func.func @unreached(%qs: !flash_tile.shared<1x64x64xf16, #sw>,
                     %ks: !flash_tile.shared<1x64x64xf16, #sw>,
                     %out: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: no layout follows for a tile of 64x64 from the kernel's MMAs}}
  %t = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  flash_tile.store %t, %out[%c0] valid %n : !flash_tile.tile<64x64xf32>, memref<?x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// 40 rows are not whole 16-row MMA tiles.
func.func @ragged_rows(%qs: !flash_tile.shared<1x40x64xf16, #sw>,
                       %ks: !flash_tile.shared<1x64x64xf16, #sw>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x40x64xf16, #sw> -> !flash_tile.tile<40x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<40x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: the MMAs accumulate 40 rows, not whole 16-row MMA tiles}}
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<40x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<40x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// K = 24 is not whole steps of 16.
func.func @short_k(%qs: !flash_tile.shared<1x64x24xf16>,
                   %ks: !flash_tile.shared<1x64x24xf16>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x24xf16> -> !flash_tile.tile<64x24xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x24xf16> -> !flash_tile.tile<24x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: an MMA of 64x24 by 24x64 does not split into m16n8k16 instructions (K a multiple of 16, N of 8)}}
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x24xf16>, !flash_tile.tile<24x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// An operand has no row slice: a reduction of Q gets no layout.
func.func @operand_rows(%qs: !flash_tile.shared<1x64x64xf16, #sw>,
                        %ks: !flash_tile.shared<1x64x64xf16, #sw>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: no layout follows for a tile of 64 from the kernel's MMAs}}
  %m = flash_tile.reduce max %q : !flash_tile.tile<64x64xf16> -> !flash_tile.tile<64xf16>
  return
}

//--- narrow.mlir
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// 32 rows per warp do not divide a tile of 16.
func.func @narrow(%qs: !flash_tile.shared<1x16x64xf16, #sw>,
                  %ks: !flash_tile.shared<1x64x64xf16, #sw>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x16x64xf16, #sw> -> !flash_tile.tile<16x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<16x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: 32 rows per warp do not divide the tile's 16 rows}}
  %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<16x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<16x64xf32>
  return
}

//--- warpgroup.mlir
// A warpgroup MMA holds each warp to 16 rows.
func.func @warpgroup(%v: !flash_tile.shared<2x64x64xf16>, %s: index) {
  %cst = arith.constant 0.0 : f32
  %h = arith.constant 0.0 : f16
  %p = flash_tile.splat %h : !flash_tile.tile<128x64xf16>
  %acc = flash_tile.splat %cst : !flash_tile.tile<128x64xf32>
  // expected-error@+1 {{flash-tile-assign-layouts: a warpgroup MMA gives each warp 16 rows, not rows-per-warp = 32}}
  %o = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<128x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<128x64xf32>
  return
}
