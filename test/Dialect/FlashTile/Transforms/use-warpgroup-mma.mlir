// RUN: flashc-opt %s --split-input-file --flash-tile-use-warpgroup-mma | FileCheck %s

// The attention step as flash-to-tile writes it: S = Q K^T with both
// operands loaded from shared memory, O += P V with P in registers. Both
// become warpgroup MMAs that read the buffers: Q and K (transposed, so
// K-major) by descriptors, V as stored; P stays in registers. The loads
// go.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:.+]]: !flash_tile.shared<1x128x64xf16>, %[[K:.+]]: !flash_tile.shared<2x64x64xf16>, %[[V:.+]]: !flash_tile.shared<2x64x64xf16>, %[[S:.+]]: index,
// CHECK-NOT: flash_tile.local_load
// CHECK: %[[SC:.+]] = flash_tile.warpgroup_mma %[[Q]][%c0], %[[K]][%[[S]]] transpose, %{{.+}} : !flash_tile.shared<1x128x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<128x64xf32>
// CHECK: %[[P:.+]] = flash_tile.map %[[SC]]
// CHECK: flash_tile.warpgroup_mma %[[P]], %[[V]][%[[S]]], %{{.+}} : !flash_tile.tile<128x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<128x64xf32>
// CHECK-NOT: flash_tile.local_load
// CHECK-NOT: flash_tile.mma
func.func @step(%qs: !flash_tile.shared<1x128x64xf16>, %ks: !flash_tile.shared<2x64x64xf16>,
                %vs: !flash_tile.shared<2x64x64xf16>, %s: index,
                %zero: !flash_tile.tile<128x64xf32>, %o: !flash_tile.tile<128x64xf32>)
    -> !flash_tile.tile<128x64xf32> {
  %c0 = arith.constant 0 : index
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x128x64xf16> -> !flash_tile.tile<128x64xf16>
  %kt = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
  %sc = flash_tile.mma %q, %kt, %zero : !flash_tile.tile<128x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<128x64xf32>
  %p = flash_tile.map %sc : !flash_tile.tile<128x64xf32> -> !flash_tile.tile<128x64xf16> {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to f16
    flash_tile.yield %h : f16
  }
  %v = flash_tile.local_load %vs[%s] : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
  %o2 = flash_tile.mma %p, %v, %o : !flash_tile.tile<128x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<128x64xf32>
  return %o2 : !flash_tile.tile<128x64xf32>
}

// -----

// Q read by two multiplies (a causal kernel's two loops): both take it
// from shared memory, and its load goes once neither needs it.
// CHECK-LABEL: func.func @shared_q
// CHECK-NOT: flash_tile.local_load
// CHECK-COUNT-2: flash_tile.warpgroup_mma %arg0[%c0], %arg1[%arg2] transpose
func.func @shared_q(%qs: !flash_tile.shared<1x64x64xbf16>, %ks: !flash_tile.shared<2x64x64xbf16>,
                    %s: index, %zero: !flash_tile.tile<64x64xf32>)
    -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xbf16> -> !flash_tile.tile<64x64xbf16>
  %kt = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x64x64xbf16> -> !flash_tile.tile<64x64xbf16>
  %a = flash_tile.mma %q, %kt, %zero : !flash_tile.tile<64x64xbf16>, !flash_tile.tile<64x64xbf16>, !flash_tile.tile<64x64xf32>
  %b = flash_tile.mma %q, %kt, %zero : !flash_tile.tile<64x64xbf16>, !flash_tile.tile<64x64xbf16>, !flash_tile.tile<64x64xf32>
  return %a, %b : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>
}

// -----

// Kept as warp-level MMAs: rows of 24 f16 (48 bytes, not whole rows of
// the 128-, 64- or 32-byte swizzle), 32 accumulator rows (less than a
// warpgroup's 64), a batch (a decode tile's kv warps), and B computed in
// registers.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: flash_tile.warpgroup_mma
// CHECK-COUNT-4: flash_tile.mma
// CHECK-NOT: flash_tile.warpgroup_mma
func.func @kept(%narrow: !flash_tile.shared<2x64x24xf16>, %ks: !flash_tile.shared<2x64x64xf16>,
                %p: !flash_tile.tile<64x64xf16>, %q32: !flash_tile.tile<32x64xf16>,
                %qb: !flash_tile.tile<4x16x64xf16>, %b: !flash_tile.tile<64x64xf16>,
                %z64: !flash_tile.tile<64x64xf32>, %z24: !flash_tile.tile<64x24xf32>,
                %z32: !flash_tile.tile<32x64xf32>,
                %zb: !flash_tile.tile<4x16x16xf32>, %s: index) {
  %vn = flash_tile.local_load %narrow[%s] : !flash_tile.shared<2x64x24xf16> -> !flash_tile.tile<64x24xf16>
  %0 = flash_tile.mma %p, %vn, %z24 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x24xf16>, !flash_tile.tile<64x24xf32>
  %kt = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
  %1 = flash_tile.mma %q32, %kt, %z32 : !flash_tile.tile<32x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<32x64xf32>
  %kb = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<4x64x16xf16>
  %2 = flash_tile.mma %qb, %kb, %zb : !flash_tile.tile<4x16x64xf16>, !flash_tile.tile<4x64x16xf16>, !flash_tile.tile<4x16x16xf32>
  %3 = flash_tile.mma %b, %b, %z64 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// Rows of 96 f16 (192 bytes: three rows of the 64-byte swizzle) and of 80
// (160 bytes: five of the 32-byte swizzle) are read as they are too.
// CHECK-LABEL: func.func @narrow_swizzles
// CHECK-NOT: flash_tile.local_load
// CHECK: flash_tile.warpgroup_mma %arg0[%c0], %arg1[%arg3] transpose
// CHECK: flash_tile.warpgroup_mma %{{.+}}, %arg2[%arg3], %{{.+}} : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x80xf16>, !flash_tile.tile<64x80xf32>
func.func @narrow_swizzles(%qs: !flash_tile.shared<1x64x96xf16>, %ks: !flash_tile.shared<2x64x96xf16>,
                           %vs: !flash_tile.shared<2x64x80xf16>, %s: index,
                           %zero: !flash_tile.tile<64x64xf32>, %o: !flash_tile.tile<64x80xf32>) -> !flash_tile.tile<64x80xf32> {
  %c0 = arith.constant 0 : index
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x96xf16> -> !flash_tile.tile<64x96xf16>
  %kt = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x64x96xf16> -> !flash_tile.tile<96x64xf16>
  %sc = flash_tile.mma %q, %kt, %zero : !flash_tile.tile<64x96xf16>, !flash_tile.tile<96x64xf16>, !flash_tile.tile<64x64xf32>
  %p = flash_tile.map %sc : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16> {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to f16
    flash_tile.yield %h : f16
  }
  %v = flash_tile.local_load %vs[%s] : !flash_tile.shared<2x64x80xf16> -> !flash_tile.tile<64x80xf16>
  %out = flash_tile.mma %p, %v, %o : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x80xf16>, !flash_tile.tile<64x80xf32>
  return %out : !flash_tile.tile<64x80xf32>
}

// -----

// Rows of 256 f16 (512 bytes: four panels of the 128-byte swizzle).
// CHECK-LABEL: func.func @panels
// CHECK: flash_tile.warpgroup_mma %arg0[%c0], %arg1[%arg2] transpose
func.func @panels(%qs: !flash_tile.shared<1x64x256xf16>, %ks: !flash_tile.shared<2x16x256xf16>,
                  %s: index, %zero: !flash_tile.tile<64x16xf32>) -> !flash_tile.tile<64x16xf32> {
  %c0 = arith.constant 0 : index
  %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x256xf16> -> !flash_tile.tile<64x256xf16>
  %kt = flash_tile.local_load %ks[%s] transpose : !flash_tile.shared<2x16x256xf16> -> !flash_tile.tile<256x16xf16>
  %a = flash_tile.mma %q, %kt, %zero : !flash_tile.tile<64x256xf16>, !flash_tile.tile<256x16xf16>, !flash_tile.tile<64x16xf32>
  return %a : !flash_tile.tile<64x16xf32>
}
