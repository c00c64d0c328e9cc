// RUN: flashc-opt %s --split-input-file --verify-diagnostics \
// RUN:   --flash-tile-allocate-shared | FileCheck %s
// RUN: not flashc-opt %s --split-input-file \
// RUN:   --flash-tile-allocate-shared=shared-bytes=65536 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=SMALL
// A budget comes from a GPU chip, or is positive.
// RUN: not flashc-opt %s --split-input-file \
// RUN:   --flash-tile-allocate-shared=chip=cpu 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: error: flash-tile-allocate-shared: target 'cpu' is not a GPU
// RUN: not flashc-opt %s --split-input-file \
// RUN:   --flash-tile-allocate-shared=chip=sm_70 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: flash-tile-allocate-shared: {{.*}}sm_70{{.*}}cpu, sm_80, sm_90a
// RUN: not flashc-opt %s --split-input-file \
// RUN:   --flash-tile-allocate-shared=shared-bytes=-1 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: flash-tile-allocate-shared: shared-bytes is -1; give a positive budget, or 0 for the chip's
// sm_90a's budget is 227 KiB.
// RUN: not flashc-opt %s --split-input-file --flash-tile-allocate-shared=chip=sm_90a \
// RUN:   2>&1 | FileCheck %s --check-prefix=SM90
// SM90: error: the shared buffers of @too_big need 262144 bytes, more than the 232448 bytes per CTA that sm_90a allows

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
#plain = #flash_tile.swizzled<vector = 8, phases = 1>

// Buffers follow each other in program order, each on a 128-byte boundary:
// Q (8 KiB), a 48-byte buffer, then K and V (16 KiB each, two stages).
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: flash.shared_bytes = 41088 : i64
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x64x64xf16
// CHECK: flash_tile.alloc {offset = 8192 : i64} : !flash_tile.shared<1x1x24xf16
// CHECK: flash_tile.alloc {offset = 8320 : i64} : !flash_tile.shared<2x64x64xf16
// CHECK: flash_tile.alloc {offset = 24704 : i64} : !flash_tile.shared<2x64x64xf16
func.func @prefill() {
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #sw>
  %odd = flash_tile.alloc : !flash_tile.shared<1x1x24xf16, #plain>
  %k = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #sw>
  %v = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #sw>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// Each kernel of a GPU module is placed on its own; a function without
// buffers gets no attribute. An offset already there is recomputed.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @a() kernel attributes {flash.shared_bytes = 16384 : i64}
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<2x64x64xf16
// CHECK: gpu.func @b() kernel attributes {flash.shared_bytes = 32768 : i64}
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<4x64x64xf16
// CHECK: gpu.func @none() kernel {
gpu.module @kernels {
  gpu.func @a() kernel {
    %k = flash_tile.alloc {offset = 4096} : !flash_tile.shared<2x64x64xf16, #sw>
    gpu.return
  }
  gpu.func @b() kernel {
    %k = flash_tile.alloc : !flash_tile.shared<4x64x64xf16, #sw>
    gpu.return
  }
  gpu.func @none() kernel {
    gpu.return
  }
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// 4 stages of 128 x 128 f16 K and V: 256 KiB, over sm_80's 163 KiB (and
// over the 64 KiB of shared-bytes=65536).
// SMALL-NOT: error
// SMALL: error: the shared buffers of @too_big need 262144 bytes, more than the 65536 bytes per CTA of the budget asked for (shared-bytes; sram-bytes in the pipelines and flashc)
// SMALL-NEXT: func.func @too_big
// SMALL: note: 131072 bytes at 0
// SMALL: note: 131072 bytes at 131072
func.func @too_big() {
  // expected-error @-1 {{the shared buffers of @too_big need 262144 bytes, more than the 166912 bytes per CTA that sm_80 allows}}
  // expected-note @+1 {{131072 bytes at 0}}
  %k = flash_tile.alloc : !flash_tile.shared<4x128x128xf16, #sw>
  // expected-note @+1 {{131072 bytes at 131072}}
  %v = flash_tile.alloc : !flash_tile.shared<4x128x128xf16, #sw>
  return
}

// -----

// Buffers without a placement (as flash-to-tile writes them) get theirs
// before their sizes count: 64 f16 columns are 8 chunks, swizzled over 8
// rows; 96 are 12, not a power of two, so each row is padded by a chunk
// (2 x 64 x 104 f16). Narrower rows share the 128 bytes of the banks and
// swizzle in runs of rows: 16 f32 columns (4 chunks, 2 rows to 128 bytes)
// over 4 phases of 2 rows, 16 f16 columns (2 chunks) over 2 phases of 4
// rows; 8 f16 columns (one chunk, 8 rows to 128 bytes) are not swizzled.
// CHECK-DAG: #[[SW8:.+]] = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-DAG: #[[PAD:.+]] = #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
// CHECK-DAG: #[[SW4:.+]] = #flash_tile.swizzled<vector = 4, phases = 4, rowsPerPhase = 2>
// CHECK-DAG: #[[SW2:.+]] = #flash_tile.swizzled<vector = 8, phases = 2, rowsPerPhase = 4>
// CHECK-DAG: #[[ONE:.+]] = #flash_tile.swizzled<vector = 8, phases = 1>
// CHECK-LABEL: func.func @placement
// CHECK-SAME: flash.shared_bytes = 37376 : i64
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x64x64xf16, #[[SW8]]>
// CHECK: flash_tile.alloc {offset = 8192 : i64} : !flash_tile.shared<2x64x96xf16, #[[PAD]]>
// CHECK: flash_tile.alloc {offset = 34816 : i64} : !flash_tile.shared<1x16x16xf32, #[[SW4]]>
// CHECK: flash_tile.alloc {offset = 35840 : i64} : !flash_tile.shared<1x32x16xf16, #[[SW2]]>
// CHECK: flash_tile.alloc {offset = 36864 : i64} : !flash_tile.shared<1x32x8xf16, #[[ONE]]>
func.func @placement() {
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %k = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
  %f = flash_tile.alloc : !flash_tile.shared<1x16x16xf32>
  %n = flash_tile.alloc : !flash_tile.shared<1x32x16xf16>
  %o = flash_tile.alloc : !flash_tile.shared<1x32x8xf16>
  return
}

// -----

// Rows of 12 f16 (24 bytes) are not whole 16-byte chunks.
func.func @odd_rows() {
  // expected-error @+1 {{flash-tile-allocate-shared: rows of 12 x 'f16' are not whole 16-byte chunks, which a buffer's placement swizzles or pads}}
  %q = flash_tile.alloc : !flash_tile.shared<1x16x12xf16>
  return
}

// -----

// Buffers a warpgroup MMA reads start on 1024 bytes (the 128-byte
// swizzle's period); the total holds 1024 bytes more, within which the
// lowering aligns the buffers' start at run time. The 48-byte buffer
// stays on 128.
#plain = #flash_tile.swizzled<vector = 8, phases = 1>
// CHECK-LABEL: func.func @warpgroup
// CHECK-SAME: flash.shared_bytes = 44032 : i64
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x1x24xf16
// CHECK: flash_tile.alloc {offset = 1024 : i64} : !flash_tile.shared<1x64x64xf16
// CHECK: flash_tile.alloc {offset = 9216 : i64} : !flash_tile.shared<1x1x24xf16
// CHECK: flash_tile.alloc {offset = 10240 : i64} : !flash_tile.shared<2x64x64xf16
// CHECK: flash_tile.alloc {offset = 26624 : i64} : !flash_tile.shared<2x64x64xf16
func.func @warpgroup(%p: !flash_tile.tile<64x64xf16>, %acc: !flash_tile.tile<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %odd = flash_tile.alloc : !flash_tile.shared<1x1x24xf16, #plain>
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %odd2 = flash_tile.alloc : !flash_tile.shared<1x1x24xf16, #plain>
  %k = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %v = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %s = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %acc
      : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  %o = flash_tile.warpgroup_mma %p, %v[%c0], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// Rows wider than 128 bytes that a warpgroup MMA reads are placed in panels
// of 128 bytes; the same rows read by ldmatrix only are swizzled whole.
// CHECK-DAG: #[[PANELS:.+]] = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-DAG: #[[WHOLE:.+]] = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-LABEL: func.func @panels
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<2x32x128xf16, #[[PANELS]]>
// CHECK: flash_tile.alloc {offset = 16384 : i64} : !flash_tile.shared<2x32x128xf16, #[[WHOLE]]>
func.func @panels(%p: !flash_tile.tile<64x32xf16>, %acc: !flash_tile.tile<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %v = flash_tile.alloc : !flash_tile.shared<2x32x128xf16>
  %w = flash_tile.alloc : !flash_tile.shared<2x32x128xf16>
  %o = flash_tile.warpgroup_mma %p, %v[%c0], %acc
      : !flash_tile.tile<64x32xf16>, !flash_tile.shared<2x32x128xf16>, !flash_tile.tile<64x128xf32>
  return
}

// -----

// Rows that are not whole 128-byte rows take the widest swizzle whose row
// divides them: 96 f16 (192 bytes) the 64-byte swizzle (4 phases of 2 rows)
// in 3 panels of 32 columns, 80 f16 (160 bytes) the 32-byte swizzle (2
// phases of 4 rows) in 5 panels of 16, 32 f16 (64 bytes) one row of the
// 64-byte swizzle. The same 96-column rows read by ldmatrix only are
// padded.
// CHECK-DAG: #[[SW64:.+]] = #flash_tile.swizzled<vector = 8, phases = 4, panel = 32, rowsPerPhase = 2>
// CHECK-DAG: #[[SW32:.+]] = #flash_tile.swizzled<vector = 8, phases = 2, panel = 16, rowsPerPhase = 4>
// CHECK-DAG: #[[ROW64:.+]] = #flash_tile.swizzled<vector = 8, phases = 4, rowsPerPhase = 2>
// CHECK-DAG: #[[PAD:.+]] = #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
// CHECK-LABEL: func.func @narrow_swizzles
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x64x96xf16, #[[SW64]]>
// CHECK: flash_tile.alloc {offset = 12288 : i64} : !flash_tile.shared<2x64x96xf16, #[[SW64]]>
// CHECK: flash_tile.alloc {offset = 36864 : i64} : !flash_tile.shared<2x64x80xf16, #[[SW32]]>
// CHECK: flash_tile.alloc {offset = 57344 : i64} : !flash_tile.shared<2x64x32xf16, #[[ROW64]]>
// CHECK: flash_tile.alloc {offset = 65536 : i64} : !flash_tile.shared<2x64x96xf16, #[[PAD]]>
func.func @narrow_swizzles(%p: !flash_tile.tile<64x64xf16>, %acc: !flash_tile.tile<64x64xf32>,
                           %o80: !flash_tile.tile<64x80xf32>, %o32: !flash_tile.tile<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc : !flash_tile.shared<1x64x96xf16>
  %k = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
  %v = flash_tile.alloc : !flash_tile.shared<2x64x80xf16>
  %n = flash_tile.alloc : !flash_tile.shared<2x64x32xf16>
  %w = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
  %s = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %acc
      : !flash_tile.shared<1x64x96xf16>, !flash_tile.shared<2x64x96xf16>, !flash_tile.tile<64x64xf32>
  %o = flash_tile.warpgroup_mma %p, %v[%c0], %o80
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x80xf16>, !flash_tile.tile<64x80xf32>
  %m = flash_tile.warpgroup_mma %p, %n[%c0], %o32
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x32xf16>, !flash_tile.tile<64x32xf32>
  return
}

// -----

// A buffer a TMA copy fills is placed as a warpgroup MMA's (panels of 128
// bytes, on 1024 bytes) even where only ldmatrix reads it; the total counts
// the 1024 bytes of alignment and the 8-byte mbarrier of each of its two
// stages: 16384 + 1024 + 16.
// CHECK-DAG: #[[PANELS:.+]] = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @tma
// CHECK-SAME: attributes {flash.shared_bytes = 17424 : i64}
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<2x32x128xf16, #[[PANELS]]>
func.func @tma(%map: !llvm.ptr, %j: index, %b: index) {
  %c0 = arith.constant 0 : index
  %v = flash_tile.alloc : !flash_tile.shared<2x32x128xf16>
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %v[%c0] box [64, 32, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x32x128xf16>
  return
}

// -----

// A view takes its source's placement and no memory of its own: Q's buffer
// of 192 columns (panels of 64 in the 128-byte swizzle) viewed as its
// first 128, and one of 96 columns (panels of 32 in the 64-byte swizzle)
// as its first 64: 24576 + 12288 + 1024 + 16.
// CHECK-DAG: #[[P64:.+]] = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-DAG: #[[P32:.+]] = #flash_tile.swizzled<vector = 8, phases = 4, panel = 32, rowsPerPhase = 2>
// CHECK-LABEL: func.func @view
// CHECK-SAME: attributes {flash.shared_bytes = 37904 : i64}
// CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<1x64x192xf16, #[[P64]]>
// CHECK: flash_tile.alloc {offset = 24576 : i64} : !flash_tile.shared<1x64x96xf16, #[[P32]]>
// CHECK: flash_tile.view %{{.+}} : !flash_tile.shared<1x64x192xf16, #[[P64]]> to !flash_tile.shared<1x64x128xf16, #[[P64]]>
// CHECK: flash_tile.view %{{.+}} : !flash_tile.shared<1x64x96xf16, #[[P32]]> to !flash_tile.shared<1x64x64xf16, #[[P32]]>
func.func @view(%map: !llvm.ptr, %j: index, %b: index) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc : !flash_tile.shared<1x64x192xf16>
  %n = flash_tile.alloc : !flash_tile.shared<1x64x96xf16>
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %q[%c0] box [64, 64, 1, 1]
      : !llvm.ptr, !flash_tile.shared<1x64x192xf16>
  %o = flash_tile.view %q : !flash_tile.shared<1x64x192xf16> to !flash_tile.shared<1x64x128xf16>
  %m = flash_tile.view %n : !flash_tile.shared<1x64x96xf16> to !flash_tile.shared<1x64x64xf16>
  %c = arith.constant 0 : index
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %n[%c] box [32, 64, 1, 1]
      : !llvm.ptr, !flash_tile.shared<1x64x96xf16>
  return
}

// -----

// A view that is not a whole number of its source's panels once placed.
func.func @view_not_whole_panels(%map: !llvm.ptr, %j: index, %b: index) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc : !flash_tile.shared<1x64x128xf16>
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %q[%c0] box [64, 64, 1, 1]
      : !llvm.ptr, !flash_tile.shared<1x64x128xf16>
  // expected-error @+1 {{flash-tile-allocate-shared: a view of the first 96 columns of a buffer of 128 placed as #flash_tile.swizzled<vector = 8, phases = 8, panel = 64> is not a whole number of its panels}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x128xf16> to !flash_tile.shared<1x64x96xf16>
  return
}

// -----

// Nor are the first columns of rows placed without panels (swizzled across
// the whole row, as ldmatrix reads them).
func.func @view_without_panels() {
  %k = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  // expected-error @+1 {{flash-tile-allocate-shared: a view of the first 32 columns of a buffer of 64 placed as #flash_tile.swizzled<vector = 8, phases = 8> is not a whole number of its panels}}
  %o = flash_tile.view %k : !flash_tile.shared<1x64x64xf16> to !flash_tile.shared<1x64x32xf16>
  return
}

// -----

// A warp-specialised kernel's consumers release the stages of the buffer,
// each on an mbarrier of its own: 8 bytes more a stage, 16384 + 1024 + 16
// + 16.
// CHECK-LABEL: func.func @warp_specialized
// CHECK-SAME: attributes {flash.shared_bytes = 17440 : i64}
func.func @warp_specialized(%map: !llvm.ptr, %j: index, %b: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %v = flash_tile.alloc : !flash_tile.shared<2x32x128xf16>
  flash_tile.warp_specialize producer(registers 24) {
    flash_tile.stage_acquire %v[%c0], %p : !flash_tile.shared<2x32x128xf16>
    flash_tile.tma_load %map[%c0, %j, %c0, %b], %v[%c0] box [64, 32, 1, 1]
        : !llvm.ptr, !flash_tile.shared<2x32x128xf16>
  } consumers(threads 256, registers 240) {
    flash_tile.stage_wait %v[%c0], %p : !flash_tile.shared<2x32x128xf16>
    flash_tile.stage_release %v[%c0] : !flash_tile.shared<2x32x128xf16>
  }
  return
}
