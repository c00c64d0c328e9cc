// RUN: flashc-opt %s --split-input-file --flash-tile-assign-layouts \
// RUN:   | FileCheck %s
// The rows per warp as an option: 16 where the schedule would take 32.
// RUN: flashc-opt %s --split-input-file \
// RUN:   --flash-tile-assign-layouts=rows-per-warp=16 | FileCheck %s --check-prefix=R16
// The pass's output is what it would choose again.
// RUN: flashc-opt %s --split-input-file --flash-tile-assign-layouts \
// RUN:   | flashc-opt --split-input-file --flash-tile-assign-layouts \
// RUN:   | FileCheck %s

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// A prefill step of 64 query rows and 64 keys (as flash-to-tile writes it,
// without layouts): 4 warps of 16 rows. The MMAs' tiles take the MMA
// layout and its operand layouts, the reductions its row slice, the fold
// and the maps their inputs', the loop-carried state what its yields
// have; P, rounded to f16 in the accumulator layout, is converted to the
// A operand right after it is made.
// CHECK-DAG: #[[MMA:.+]] = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// CHECK-DAG: #[[A:.+]] = #flash_tile.operand<a, #[[MMA]]>
// CHECK-DAG: #[[B:.+]] = #flash_tile.operand<b, #[[MMA]]>
// CHECK-DAG: #[[ROW:.+]] = #flash_tile.slice<1, #[[MMA]]>
// CHECK-DAG: #[[COPY:.+]] = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
// CHECK-LABEL: func.func @step
// CHECK-SAME: attributes {flash.block = 128 : i64}
// CHECK: flash_tile.async_copy {{.+}} {layout = #[[COPY]]}
// CHECK: %[[Q:.+]] = flash_tile.local_load {{.+}} -> !flash_tile.tile<64x64xf16, #[[A]]>
// CHECK: flash_tile.splat {{.+}} : !flash_tile.tile<64x64xf32, #[[MMA]]>
// CHECK: flash_tile.splat {{.+}} : !flash_tile.tile<64xf32, #[[ROW]]>
// CHECK: scf.for {{.+}} -> (!flash_tile.tile<64x64xf32, #[[MMA]]>, !flash_tile.tile<64xf32, #[[ROW]]>, !flash_tile.tile<64x8xf32, #[[MMA]]>)
// CHECK: flash_tile.local_load {{.+}} transpose : {{.+}} -> !flash_tile.tile<64x64xf16, #[[B]]>
// CHECK: flash_tile.mma %[[Q]], {{.+}} : !flash_tile.tile<64x64xf16, #[[A]]>, !flash_tile.tile<64x64xf16, #[[B]]>, !flash_tile.tile<64x64xf32, #[[MMA]]>
// CHECK: flash_tile.reduce max {{.+}} -> !flash_tile.tile<64xf32, #[[ROW]]>
// CHECK: flash_tile.fold sum {{.+}} : !flash_tile.tile<64x64xf32, #[[MMA]]> -> !flash_tile.tile<64x8xf32, #[[MMA]]>
// CHECK: %[[P:.+]] = flash_tile.map {{.+}} -> !flash_tile.tile<64x64xf16, #[[MMA]]>
// CHECK: flash_tile.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[PA:.+]] = flash_tile.convert_layout %[[P]] : !flash_tile.tile<64x64xf16, #[[MMA]]> -> !flash_tile.tile<64x64xf16, #[[A]]>
// CHECK: flash_tile.rescale {{.+}} : !flash_tile.tile<64x64xf32, #[[MMA]]>, !flash_tile.tile<64xf32, #[[ROW]]>
// CHECK: flash_tile.mma %[[PA]], {{.+}} : !flash_tile.tile<64x64xf16, #[[A]]>, !flash_tile.tile<64x64xf16, #[[B]]>
// CHECK: scf.yield {{.+}} : !flash_tile.tile<64x64xf32, #[[MMA]]>, !flash_tile.tile<64xf32, #[[ROW]]>, !flash_tile.tile<64x8xf32, #[[MMA]]>
// CHECK: flash_tile.reduce sum {{.+}} -> !flash_tile.tile<64xf32, #[[ROW]]>
// CHECK: flash_tile.store {{.+}} : !flash_tile.tile<64x64xf16, #[[MMA]]>, memref<?x64xf16>
// CHECK-NOT: flash_tile.convert_layout
// R16-LABEL: func.func @step
// R16-SAME: attributes {flash.block = 128 : i64}
func.func @step(%qg: memref<?x64xf16>, %kg: memref<?x64xf16>,
                %vg: memref<?x64xf16>, %out: memref<?x64xf16>,
                %n: index, %nk: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #sw>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #sw>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #sw>
  flash_tile.async_copy %qg[%c0], %qs[%c0] valid %n
      : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #sw>
  flash_tile.async_wait pending 0
  %q = flash_tile.local_load %qs[%c0]
      : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
  %o0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  %m0 = flash_tile.splat %ninf : !flash_tile.tile<64xf32>
  %l0 = flash_tile.splat %zero : !flash_tile.tile<64x8xf32>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
  %res:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%o = %o0, %m = %m0, %l = %l0)
      -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64xf32>, !flash_tile.tile<64x8xf32>) {
    flash_tile.async_copy %kg[%j], %ks[%c0] valid %c64
        : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #sw>
    flash_tile.async_copy %vg[%j], %vs[%c0] valid %c64
        : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #sw>
    flash_tile.async_wait pending 0
    %kt = flash_tile.local_load %ks[%c0] transpose
        : !flash_tile.shared<2x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x64xf16>,
        !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
    %mx = flash_tile.reduce max %s
        : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64xf32>
    %mn = flash_tile.map %m, %mx : !flash_tile.tile<64xf32>,
        !flash_tile.tile<64xf32> -> !flash_tile.tile<64xf32> {
    ^bb0(%a: f32, %b: f32):
      %r = arith.maxnumf %a, %b : f32
      flash_tile.yield %r : f32
    }
    %p = flash_tile.map %s, %mn : !flash_tile.tile<64x64xf32>,
        !flash_tile.tile<64xf32> -> !flash_tile.tile<64x64xf32> {
    ^bb0(%x: f32, %mm: f32):
      %d = arith.subf %x, %mm : f32
      %e = math.exp2 %d : f32
      flash_tile.yield %e : f32
    }
    %ps = flash_tile.fold sum %p
        : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x8xf32>
    %ln = flash_tile.map %l, %ps : !flash_tile.tile<64x8xf32>,
        !flash_tile.tile<64x8xf32> -> !flash_tile.tile<64x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      flash_tile.yield %r : f32
    }
    %ph = flash_tile.map %p : !flash_tile.tile<64x64xf32>
        -> !flash_tile.tile<64x64xf16> {
    ^bb0(%x: f32):
      %h = arith.truncf %x : f32 to f16
      flash_tile.yield %h : f16
    }
    %v = flash_tile.local_load %vs[%c0]
        : !flash_tile.shared<2x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %os = flash_tile.rescale %o by %mn : !flash_tile.tile<64x64xf32>,
        !flash_tile.tile<64xf32>
    %on = flash_tile.mma %ph, %v, %os : !flash_tile.tile<64x64xf16>,
        !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %on, %mn, %ln : !flash_tile.tile<64x64xf32>,
        !flash_tile.tile<64xf32>, !flash_tile.tile<64x8xf32>
  } {flash.kv_loop}
  %lt = flash_tile.reduce sum %res#2
      : !flash_tile.tile<64x8xf32> -> !flash_tile.tile<64xf32>
  %oh = flash_tile.map %res#0, %lt : !flash_tile.tile<64x64xf32>,
      !flash_tile.tile<64xf32> -> !flash_tile.tile<64x64xf16> {
  ^bb0(%x: f32, %s: f32):
    %d = arith.divf %x, %s : f32
    %h = arith.truncf %d : f32 to f16
    flash_tile.yield %h : f16
  }
  flash_tile.store %oh, %out[%c0] valid %n
      : !flash_tile.tile<64x64xf16>, memref<?x64xf16>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// 128 rows whose matrices are at most 64 wide: 4 warps of 32 rows (two row
// tiles each), unless rows-per-warp says 16 (8 warps). The copies spread
// over the warps there are.
// CHECK-DAG: #[[WCOPY:.+]] = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
// CHECK-DAG: #[[WMMA:.+]] = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// CHECK-LABEL: gpu.func @wide
// CHECK-SAME: flash.block = 128 : i64
// CHECK: flash_tile.async_copy {{.+}} {layout = #[[WCOPY]]}
// CHECK: flash_tile.mma {{.+}} !flash_tile.tile<128x64xf32, #[[WMMA]]>
// R16-DAG: #[[NCOPY:.+]] = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [8, 1]>
// R16-DAG: #[[NMMA:.+]] = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
// R16-LABEL: gpu.func @wide
// R16-SAME: flash.block = 256 : i64
// R16: flash_tile.async_copy {{.+}} {layout = #[[NCOPY]]}
// R16: flash_tile.mma {{.+}} !flash_tile.tile<128x64xf32, #[[NMMA]]>
gpu.module @kernels {
  gpu.func @wide(%qg: memref<?x64xf16>, %out: memref<?x64xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %qs = flash_tile.alloc : !flash_tile.shared<1x128x64xf16, #sw>
    %ks = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #sw>
    flash_tile.async_copy %qg[%c0], %qs[%c0] valid %n
        : memref<?x64xf16>, !flash_tile.shared<1x128x64xf16, #sw>
    flash_tile.async_wait pending 0
    %q = flash_tile.local_load %qs[%c0]
        : !flash_tile.shared<1x128x64xf16, #sw> -> !flash_tile.tile<128x64xf16>
    %kt = flash_tile.local_load %ks[%c0] transpose
        : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %s0 = flash_tile.splat %zero : !flash_tile.tile<128x64xf32>
    %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<128x64xf16>,
        !flash_tile.tile<64x64xf16>, !flash_tile.tile<128x64xf32>
    flash_tile.store %s, %out[%c0] valid %n
        : !flash_tile.tile<128x64xf32>, memref<?x64xf32>
    gpu.return
  }
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// Copies from sources aligned to less than 16 bytes: runs of 8 and 4
// bytes (cp.async of that size), and of one element at 2 bytes.
// CHECK-DAG: #[[C8:.+]] = #flash_tile.blocked<size = [1, 4], threads = [2, 16], warps = [4, 1]>
// CHECK-DAG: #[[C4:.+]] = #flash_tile.blocked<size = [1, 2], threads = [1, 32], warps = [4, 1]>
// CHECK-DAG: #[[C2:.+]] = #flash_tile.blocked<size = [1, 1], threads = [1, 32], warps = [4, 1]>
// CHECK-LABEL: gpu.func @under_aligned
// CHECK: flash_tile.async_copy {{.+}} {alignment = 8 : i64, layout = #[[C8]]}
// CHECK: flash_tile.async_copy {{.+}} {alignment = 4 : i64, layout = #[[C4]]}
// CHECK: flash_tile.async_copy {{.+}} {alignment = 2 : i64, layout = #[[C2]]}
gpu.module @kernels {
  gpu.func @under_aligned(%qg: memref<?x64xf16>, %out: memref<?x64xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #sw>
    %ks = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #sw>
    flash_tile.async_copy %qg[%c0], %qs[%c0] valid %n {alignment = 8}
        : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #sw>
    flash_tile.async_copy %qg[%c0], %ks[%c0] valid %n {alignment = 4}
        : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #sw>
    flash_tile.async_copy %qg[%c0], %ks[%c0] valid %n {alignment = 2}
        : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #sw>
    flash_tile.async_wait pending 0
    %q = flash_tile.local_load %qs[%c0]
        : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %kt = flash_tile.local_load %ks[%c0] transpose
        : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
    %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x64xf16>,
        !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.store %s, %out[%c0] valid %n
        : !flash_tile.tile<64x64xf32>, memref<?x64xf32>
    gpu.return
  }
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>

// A decode tile: 16 rows, a batch of 4 kv warps, each with its own 16 keys
// of the block. Q is read once and broadcast to every kv warp; the batch's
// row maxima merge into the 2-D layout whose column warps are the kv warps,
// and come back to each kv warp by a broadcast.
// CHECK-DAG: #[[FLAT:.+]] = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
// CHECK-DAG: #[[BATCH:.+]] = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
// CHECK-DAG: #[[QA:.+]] = #flash_tile.operand<a, #[[FLAT]]>
// CHECK-DAG: #[[QB:.+]] = #flash_tile.operand<a, #[[BATCH]]>
// CHECK-DAG: #[[ROWS:.+]] = #flash_tile.slice<2, #[[BATCH]]>
// CHECK-DAG: #[[MERGED:.+]] = #flash_tile.slice<1, #[[FLAT]]>
// CHECK-LABEL: func.func @decode
// CHECK-SAME: flash.block = 128 : i64
// CHECK: flash_tile.local_load {{.+}} -> !flash_tile.tile<16x64xf16, #[[QA]]>
// CHECK: flash_tile.broadcast {{.+}} -> !flash_tile.tile<4x16x64xf16, #[[QB]]>
// CHECK: flash_tile.mma {{.+}} !flash_tile.tile<4x16x16xf32, #[[BATCH]]>
// CHECK: flash_tile.reduce max {{.+}} -> !flash_tile.tile<4x16xf32, #[[ROWS]]>
// CHECK: flash_tile.batch_reduce max {{.+}} -> !flash_tile.tile<16xf32, #[[MERGED]]>
// CHECK: flash_tile.broadcast {{.+}} -> !flash_tile.tile<4x16xf32, #[[ROWS]]>
func.func @decode(%out: memref<?x1xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %qs = flash_tile.alloc : !flash_tile.shared<1x16x64xf16, #sw>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #sw>
  %q = flash_tile.local_load %qs[%c0]
      : !flash_tile.shared<1x16x64xf16, #sw> -> !flash_tile.tile<16x64xf16>
  %qb = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16>
      -> !flash_tile.tile<4x16x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose
      : !flash_tile.shared<2x64x64xf16, #sw> -> !flash_tile.tile<4x64x16xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<4x16x16xf32>
  %s = flash_tile.mma %qb, %kt, %s0 : !flash_tile.tile<4x16x64xf16>,
      !flash_tile.tile<4x64x16xf16>, !flash_tile.tile<4x16x16xf32>
  %m = flash_tile.reduce max %s
      : !flash_tile.tile<4x16x16xf32> -> !flash_tile.tile<4x16xf32>
  %all = flash_tile.batch_reduce max %m, %ks
      : !flash_tile.tile<4x16xf32>, !flash_tile.shared<2x64x64xf16, #sw>
      -> !flash_tile.tile<16xf32>
  %each = flash_tile.broadcast %all : !flash_tile.tile<16xf32>
      -> !flash_tile.tile<4x16xf32>
  %w = flash_tile.map %m, %each : !flash_tile.tile<4x16xf32>,
      !flash_tile.tile<4x16xf32> -> !flash_tile.tile<4x16xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    flash_tile.yield %d : f32
  }
  %sum = flash_tile.batch_reduce sum %w, %ks
      : !flash_tile.tile<4x16xf32>, !flash_tile.shared<2x64x64xf16, #sw>
      -> !flash_tile.tile<16xf32>
  flash_tile.store %sum, %out[%c0] valid %n
      : !flash_tile.tile<16xf32>, memref<?x1xf32>
  return
}

// -----

// A kernel whose tiles have their layouts already (the combine kernel's)
// is left as it is, without flash.block.
// CHECK: #[[PLACED:.+]] = #flash_tile.blocked<size = [1, 4], threads = [2, 16], warps = [2, 1]>
// CHECK-LABEL: func.func @placed
// CHECK-NOT: flash.block
// CHECK: flash_tile.splat {{.+}} : !flash_tile.tile<4x64xf32, #[[PLACED]]>
func.func @placed(%out: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = flash_tile.splat %zero : !flash_tile.tile<4x64xf32, #flash_tile.blocked<size = [1, 4], threads = [2, 16], warps = [2, 1]>>
  flash_tile.store %t, %out[%c0] valid %n
      : !flash_tile.tile<4x64xf32, #flash_tile.blocked<size = [1, 4], threads = [2, 16], warps = [2, 1]>>, memref<?x64xf32>
  return
}

// -----

// A warpgroup MMA: 16 rows per warp (8 warps for 128 rows, where the
// schedule would give 32), the accumulators in the MMA layout, P (from
// the S accumulator, rounded) converted to the A operand layout in
// registers; the shared operands have no layout to take.
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK: #mma = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
// CHECK-LABEL: func.func @warpgroup
// CHECK-SAME: flash.block = 256 : i64
// CHECK: %[[S:.+]] = flash_tile.warpgroup_mma %arg0[%c0], %arg1[%arg3] transpose, %{{.+}} : {{.+}}, !flash_tile.tile<128x64xf32, #mma>
// CHECK: %[[P:.+]] = flash_tile.map %[[S]] : !flash_tile.tile<128x64xf32, #mma> -> !flash_tile.tile<128x64xf16, #mma>
// CHECK: %[[PA:.+]] = flash_tile.convert_layout %[[P]] : !flash_tile.tile<128x64xf16, #mma> -> !flash_tile.tile<128x64xf16, #mma_a>
// CHECK: flash_tile.warpgroup_mma %[[PA]], %arg2[%arg3], %{{.+}} : !flash_tile.tile<128x64xf16, #mma_a>, {{.+}}, !flash_tile.tile<128x64xf32, #mma>
func.func @warpgroup(%qs: !flash_tile.shared<1x128x64xf16, #sw>, %ks: !flash_tile.shared<2x64x64xf16, #sw>,
                     %vs: !flash_tile.shared<2x64x64xf16, #sw>, %s: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %z = flash_tile.splat %zero : !flash_tile.tile<128x64xf32>
  %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %z
      : !flash_tile.shared<1x128x64xf16, #sw>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<128x64xf32>
  %p = flash_tile.map %sc : !flash_tile.tile<128x64xf32> -> !flash_tile.tile<128x64xf16> {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to f16
    flash_tile.yield %h : f16
  }
  %o = flash_tile.warpgroup_mma %p, %vs[%s], %z
      : !flash_tile.tile<128x64xf16>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<128x64xf32>
  return
}
