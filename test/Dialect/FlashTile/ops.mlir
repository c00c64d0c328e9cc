// RUN: flashc-opt %s --split-input-file | flashc-opt --split-input-file | FileCheck %s
// RUN: flashc-opt %s --split-input-file --mlir-print-op-generic | flashc-opt --split-input-file | FileCheck %s

// One KV block of an FA2-style forward step, as tiles: copy K and V into
// their stages, read Q K^T's operands, multiply, reduce the row maxima,
// exponentiate with the maxima broadcast, repack P as an A operand,
// multiply by V, and store.

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#b = #flash_tile.operand<b, #mma>
#row = #flash_tile.slice<1, #mma>
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>

// The layouts print as aliases.
// CHECK-DAG: #blocked = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
// CHECK-DAG: #mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// CHECK-DAG: #swizzled = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-DAG: #mma_a = #flash_tile.operand<a, #mma>
// CHECK-DAG: #mma_b = #flash_tile.operand<b, #mma>
// CHECK-DAG: #slice = #flash_tile.slice<1, #mma>
// CHECK-LABEL: func.func @step
func.func @step(%k: memref<?x64xf16>, %v: memref<?x64xf16>,
                %out: memref<?x64xf16>, %j: index, %n: index, %stage: index,
                %q: !flash_tile.tile<64x64xf16, #a>,
                %acc: !flash_tile.tile<64x64xf32, #mma>,
                %zero: !flash_tile.tile<64x64xf32, #mma>) {
  // CHECK: flash_tile.alloc {offset = 0 : i64} : !flash_tile.shared<2x64x64xf16, #swizzled>
  %kbuf = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  // CHECK: flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #swizzled>
  %vbuf = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #smem>
  // CHECK: flash_tile.async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] valid %{{.*}} {layout = #blocked} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #swizzled>
  flash_tile.async_copy %k[%j], %kbuf[%stage] valid %n {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_copy %v[%j], %vbuf[%stage] valid %n {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #smem>
  // CHECK: flash_tile.async_commit
  flash_tile.async_commit
  // CHECK: flash_tile.async_wait pending 1
  flash_tile.async_wait pending 1
  // CHECK: flash_tile.local_load %{{.*}}[%{{.*}}] transpose : !flash_tile.shared<2x64x64xf16, #swizzled> -> !flash_tile.tile<64x64xf16, #mma_b>
  %kt = flash_tile.local_load %kbuf[%stage] transpose
      : !flash_tile.shared<2x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #b>
  // CHECK: flash_tile.mma %{{.*}}, %{{.*}}, %{{.*}} : !flash_tile.tile<64x64xf16, #mma_a>, !flash_tile.tile<64x64xf16, #mma_b>, !flash_tile.tile<64x64xf32, #mma>
  %s = flash_tile.mma %q, %kt, %zero
      : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>,
        !flash_tile.tile<64x64xf32, #mma>
  // CHECK: flash_tile.reduce max %{{.*}} : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64xf32, #slice>
  %m = flash_tile.reduce max %s
      : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64xf32, #row>
  // CHECK: flash_tile.fold sum %{{.*}} : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64x8xf32, #mma>
  %part = flash_tile.fold sum %s
      : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64x8xf32, #mma>
  // CHECK: flash_tile.map %{{.*}}, %{{.*}} : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #slice> -> !flash_tile.tile<64x64xf16, #mma> {
  // CHECK: math.exp2
  // CHECK: flash_tile.yield %{{.*}} : f16
  %p = flash_tile.map %s, %m : !flash_tile.tile<64x64xf32, #mma>,
      !flash_tile.tile<64xf32, #row> -> !flash_tile.tile<64x64xf16, #mma> {
  ^bb0(%x: f32, %mx: f32):
    %d = arith.subf %x, %mx : f32
    %e = math.exp2 %d : f32
    %h = arith.truncf %e : f32 to f16
    flash_tile.yield %h : f16
  }
  // CHECK: flash_tile.convert_layout %{{.*}} : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #mma_a>
  %pa = flash_tile.convert_layout %p
      : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #a>
  %vt = flash_tile.local_load %vbuf[%stage]
      : !flash_tile.shared<2x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #b>
  %o = flash_tile.mma %pa, %vt, %acc
      : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>,
        !flash_tile.tile<64x64xf32, #mma>
  // The causal mask of a diagonal block: the element's row and column come
  // first.
  // CHECK: flash_tile.map indices %{{.*}} : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64x64xf32, #mma> {
  // CHECK: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: f32):
  %masked = flash_tile.map indices %o : !flash_tile.tile<64x64xf32, #mma>
      -> !flash_tile.tile<64x64xf32, #mma> {
  ^bb0(%i: index, %jj: index, %x: f32):
    %ninf = arith.constant 0xFF800000 : f32
    %keep = arith.cmpi ule, %jj, %i : index
    %y = arith.select %keep, %x, %ninf : f32
    flash_tile.yield %y : f32
  }
  %oc = flash_tile.map %masked : !flash_tile.tile<64x64xf32, #mma>
      -> !flash_tile.tile<64x64xf16, #mma> {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to f16
    flash_tile.yield %h : f16
  }
  // CHECK: flash_tile.store %{{.*}}, %{{.*}}[%{{.*}}] valid %{{.*}} : !flash_tile.tile<64x64xf16, #mma>, memref<?x64xf16>
  flash_tile.store %oc, %out[%j] valid %n
      : !flash_tile.tile<64x64xf16, #mma>, memref<?x64xf16>
  return
}

// -----

// Row tiles combine among themselves: the online softmax's rescale factor.
// CHECK-LABEL: func.func @rows
func.func @rows(%old: !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>,
                %new: !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>)
    -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>> {
  // CHECK: flash_tile.map %{{.*}}, %{{.*}} : !flash_tile.tile<64xf32, #slice>, !flash_tile.tile<64xf32, #slice> -> !flash_tile.tile<64xf32, #slice> {
  %r = flash_tile.map %old, %new
      : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>,
        !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
      -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp2 %d : f32
    flash_tile.yield %e : f32
  }
  return %r : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
}

// -----

// A tile of one value: the running maxima's start.
// CHECK-LABEL: func.func @splat
// CHECK: flash_tile.splat %{{.*}} : !flash_tile.tile<64xf32, #slice>
func.func @splat() -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>> {
  %ninf = arith.constant 0xFF800000 : f32
  %m = flash_tile.splat %ninf : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return %m : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
}

// -----

// A flash-decoding block: Q broadcast to a batch of 4 kv warps, each warp's
// share of K and V read from its block of the stage's rows, batched
// multiplies and row reductions, and the warps' states combined after the
// loop through a scratch buffer.

#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>

// CHECK-LABEL: func.func @decode
func.func @decode(%q: !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>,
                  %stage: index) -> !flash_tile.tile<16x64xf32, #flat> {
  %kbuf = flash_tile.alloc : !flash_tile.shared<2x128x64xf16, #smem>
  // CHECK: flash_tile.broadcast %{{.*}} : !flash_tile.tile<16x64xf16, #{{.*}}> -> !flash_tile.tile<4x16x64xf16, #{{.*}}>
  %qb = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>
      -> !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #mma>>
  // CHECK: flash_tile.local_load %{{.*}}[%{{.*}}] transpose : !flash_tile.shared<2x128x64xf16, #swizzled> -> !flash_tile.tile<4x64x32xf16, #{{.*}}>
  %kt = flash_tile.local_load %kbuf[%stage] transpose : !flash_tile.shared<2x128x64xf16, #smem>
      -> !flash_tile.tile<4x64x32xf16, #flash_tile.operand<b, #mma>>
  %zero = arith.constant 0.0 : f32
  %s0 = flash_tile.splat %zero : !flash_tile.tile<4x16x32xf32, #mma>
  // CHECK: flash_tile.mma {{.*}} : !flash_tile.tile<4x16x64xf16, {{.*}}>, !flash_tile.tile<4x64x32xf16, {{.*}}>, !flash_tile.tile<4x16x32xf32, #{{.*}}>
  %s = flash_tile.mma %qb, %kt, %s0 : !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #mma>>,
      !flash_tile.tile<4x64x32xf16, #flash_tile.operand<b, #mma>>, !flash_tile.tile<4x16x32xf32, #mma>
  // CHECK: flash_tile.reduce max %{{.*}} : !flash_tile.tile<4x16x32xf32, #{{.*}}> -> !flash_tile.tile<4x16xf32, #{{.*}}>
  %m = flash_tile.reduce max %s : !flash_tile.tile<4x16x32xf32, #mma>
      -> !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>
  // CHECK: flash_tile.fold sum %{{.*}} : !flash_tile.tile<4x16x32xf32, #{{.*}}> -> !flash_tile.tile<4x16x8xf32, #{{.*}}>
  %l = flash_tile.fold sum %s : !flash_tile.tile<4x16x32xf32, #mma> -> !flash_tile.tile<4x16x8xf32, #mma>
  %p = flash_tile.map indices %s, %m : !flash_tile.tile<4x16x32xf32, #mma>,
      !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>> -> !flash_tile.tile<4x16x32xf32, #mma> {
  ^bb0(%b: index, %r: index, %c: index, %x: f32, %y: f32):
    %d = arith.subf %x, %y : f32
    flash_tile.yield %d : f32
  }
  %v = flash_tile.alloc : !flash_tile.shared<2x128x64xf16, #smem>
  // CHECK: flash_tile.local_load %{{.*}}[%{{.*}}] : !flash_tile.shared<2x128x64xf16, #swizzled> -> !flash_tile.tile<4x32x64xf16, #{{.*}}>
  %vb = flash_tile.local_load %v[%stage] : !flash_tile.shared<2x128x64xf16, #smem>
      -> !flash_tile.tile<4x32x64xf16, #flash_tile.operand<b, #mma>>
  // CHECK: flash_tile.batch_reduce max %{{.*}}, %{{.*}} : !flash_tile.tile<4x16xf32, #{{.*}}>, !flash_tile.shared<2x128x64xf16, #swizzled> -> !flash_tile.tile<16xf32, #{{.*}}>
  %mAll = flash_tile.batch_reduce max %m, %kbuf : !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>,
      !flash_tile.shared<2x128x64xf16, #smem> -> !flash_tile.tile<16xf32, #flash_tile.slice<1, #flat>>
  %o0 = flash_tile.splat %zero : !flash_tile.tile<4x16x64xf32, #mma>
  // CHECK: flash_tile.batch_reduce sum
  %o = flash_tile.batch_reduce sum %o0, %kbuf : !flash_tile.tile<4x16x64xf32, #mma>,
      !flash_tile.shared<2x128x64xf16, #smem> -> !flash_tile.tile<16x64xf32, #flat>
  return %o : !flash_tile.tile<16x64xf32, #flat>
}

// -----

// The combine's tiles: rows of partials in a blocked layout, a warp's lanes
// over a row's columns, and the rows' weights as its slice, in every lane
// of the row; loaded, combined and stored with their alignment.
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
#weight = #flash_tile.slice<1, #rows>
// CHECK-DAG: #[[BLOCKED:.+]] = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
// CHECK-DAG: #{{.*}} = #flash_tile.slice<1, #[[BLOCKED]]>
// CHECK-LABEL: func.func @combine
func.func @combine(%parts: memref<4x?x128xf32, strided<[?, 128, 1], offset: ?>>,
                   %lse: memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>>,
                   %out: memref<4x?x128xf16, strided<[?, ?, 1], offset: ?>>,
                   %n: index, %valid: index) {
  // CHECK: flash_tile.load %{{.*}}[%{{.*}}] valid %{{.*}} {alignment = 16 : i64} : memref<4x?x128xf32, strided<[?, 128, 1], offset: ?>> -> !flash_tile.tile<4x128xf32, #[[BLOCKED]]>
  %p = flash_tile.load %parts[%n] valid %valid {alignment = 16}
      : memref<4x?x128xf32, strided<[?, 128, 1], offset: ?>> -> !flash_tile.tile<4x128xf32, #rows>
  // CHECK: flash_tile.load %{{.*}}[%{{.*}}] valid %{{.*}} groups %{{.*}} : memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>> -> !flash_tile.tile<4xf32, #{{.*}}>
  %w = flash_tile.load %lse[%n] valid %valid groups %valid
      : memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>> -> !flash_tile.tile<4xf32, #weight>
  // CHECK: flash_tile.load %{{.*}}[%{{.*}}] valid %{{.*}} groups %{{.*}} clamp : memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>> -> !flash_tile.tile<4xf32, #{{.*}}>
  %wc = flash_tile.load %lse[%n] valid %valid groups %valid clamp
      : memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>> -> !flash_tile.tile<4xf32, #weight>
  // CHECK: flash_tile.map %{{.*}}, %{{.*}} : !flash_tile.tile<4x128xf32, #[[BLOCKED]]>, !flash_tile.tile<4xf32, #{{.*}}> -> !flash_tile.tile<4x128xf16, #[[BLOCKED]]>
  %o = flash_tile.map %p, %w : !flash_tile.tile<4x128xf32, #rows>, !flash_tile.tile<4xf32, #weight>
      -> !flash_tile.tile<4x128xf16, #rows> {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    %h = arith.truncf %m : f32 to f16
    flash_tile.yield %h : f16
  }
  // CHECK: flash_tile.store %{{.*}}, %{{.*}}[%{{.*}}] valid %{{.*}} groups %{{.*}} {alignment = 16 : i64} : !flash_tile.tile<4x128xf16, #[[BLOCKED]]>, memref<4x?x128xf16, strided<[?, ?, 1], offset: ?>>
  flash_tile.store %o, %out[%n] valid %valid groups %valid {alignment = 16}
      : !flash_tile.tile<4x128xf16, #rows>, memref<4x?x128xf16, strided<[?, ?, 1], offset: ?>>
  return
}

// -----

// A padded shared buffer: rows of 12 chunks stored in 13. No padding is
// the default, and prints as none.
// CHECK-DAG: #[[PADDED:.+]] = #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
// CHECK-DAG: #[[SWIZZLED:.+]] = #flash_tile.swizzled<vector = 8, phases = 8>{{$}}
// CHECK-LABEL: func.func @padded
// CHECK: flash_tile.alloc : !flash_tile.shared<2x64x96xf16, #[[PADDED]]>
// CHECK: flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #[[SWIZZLED]]>
func.func @padded() {
  %k = flash_tile.alloc : !flash_tile.shared<2x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>>
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8, padding = 0>>
  return
}

// -----

// A Q tile of 3 heads laid out for 4: the fourth group's rows are zeros.
// CHECK-LABEL: func.func @padded_groups
func.func @padded_groups(%q: memref<4x?x64xf16, strided<[?, ?, 1], offset: ?>>,
                         %row: index, %n: index, %g: index) {
  %buf = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // CHECK: flash_tile.async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] valid %{{.*}} groups %{{.*}} {layout =
  flash_tile.async_copy %q[%row], %buf[%row] valid %n groups %g
      {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>}
      : memref<4x?x64xf16, strided<[?, ?, 1], offset: ?>>, !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// Tiles and copies without layouts, as flash-to-tile writes a kernel for
// flash-tile-assign-layouts: a decode step's batch of 4 kv warps.
// CHECK-LABEL: func.func @unassigned
// CHECK: flash_tile.alloc : !flash_tile.shared<1x16x64xf16>
// CHECK: flash_tile.async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] valid %{{.*}} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #swizzled>
// CHECK: flash_tile.broadcast %{{.*}} : !flash_tile.tile<16x64xf16> -> !flash_tile.tile<4x16x64xf16>
// CHECK: flash_tile.mma %{{.*}}, %{{.*}}, %{{.*}} : !flash_tile.tile<4x16x64xf16>, !flash_tile.tile<4x64x16xf16>, !flash_tile.tile<4x16x16xf32>
// CHECK: flash_tile.reduce max %{{.*}} : !flash_tile.tile<4x16x16xf32> -> !flash_tile.tile<4x16xf32>
// CHECK: flash_tile.map %{{.*}}, %{{.*}} : !flash_tile.tile<4x16x16xf32>, !flash_tile.tile<4x16xf32> -> !flash_tile.tile<4x16x16xf32>
// CHECK: flash_tile.batch_reduce sum %{{.*}}, %{{.*}} : !flash_tile.tile<4x16x16xf32>, !flash_tile.shared<2x64x64xf16, #swizzled> -> !flash_tile.tile<16x16xf32>
func.func @unassigned(%k: memref<?x64xf16>, %n: index,
                      %q: !flash_tile.tile<16x64xf16>) -> !flash_tile.tile<16x16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %qs = flash_tile.alloc : !flash_tile.shared<1x16x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  flash_tile.async_copy %k[%c0], %ks[%c0] valid %n
      : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  %qb = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16> -> !flash_tile.tile<4x16x64xf16>
  %kt = flash_tile.local_load %ks[%c0] transpose
      : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<4x64x16xf16>
  %s0 = flash_tile.splat %zero : !flash_tile.tile<4x16x16xf32>
  %s = flash_tile.mma %qb, %kt, %s0 : !flash_tile.tile<4x16x64xf16>, !flash_tile.tile<4x64x16xf16>, !flash_tile.tile<4x16x16xf32>
  %m = flash_tile.reduce max %s : !flash_tile.tile<4x16x16xf32> -> !flash_tile.tile<4x16xf32>
  %p = flash_tile.map %s, %m : !flash_tile.tile<4x16x16xf32>, !flash_tile.tile<4x16xf32> -> !flash_tile.tile<4x16x16xf32> {
  ^bb0(%x: f32, %y: f32):
    %d = arith.subf %x, %y : f32
    flash_tile.yield %d : f32
  }
  %o = flash_tile.batch_reduce sum %p, %ks : !flash_tile.tile<4x16x16xf32>,
      !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<16x16xf32>
  return %o : !flash_tile.tile<16x16xf32>
}

// -----

// The online softmax's rescale of O by a factor per row.
// CHECK-LABEL: func.func @rescale
// CHECK: flash_tile.rescale %{{.*}} by %{{.*}} : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #slice>
// CHECK: flash_tile.rescale %{{.*}} by %{{.*}} : !flash_tile.tile<4x16x64xf32>, !flash_tile.tile<4x16xf32>
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @rescale(%o: !flash_tile.tile<64x64xf32, #mma>,
                   %alpha: !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>,
                   %ob: !flash_tile.tile<4x16x64xf32>, %ab: !flash_tile.tile<4x16xf32>) {
  %r = flash_tile.rescale %o by %alpha : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
  %rb = flash_tile.rescale %ob by %ab : !flash_tile.tile<4x16x64xf32>, !flash_tile.tile<4x16xf32>
  return
}

// -----

// A warpgroup MMA: A and B from shared memory (K transposed: K-major), and
// A from registers with B as it is stored (N-major).
#mma = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-LABEL: func.func @warpgroup_mma
// CHECK: flash_tile.warpgroup_mma %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}] transpose, %{{.+}} : !flash_tile.shared<1x128x64xf16, #swizzled>, !flash_tile.shared<2x64x64xf16, #swizzled>, !flash_tile.tile<128x64xf32, #mma>
// CHECK: flash_tile.warpgroup_mma %{{.+}}, %{{.+}}[%{{.+}}], %{{.+}} : !flash_tile.tile<128x64xf16, #mma_a>, !flash_tile.shared<2x64x64xf16, #swizzled>, !flash_tile.tile<128x64xf32, #mma>
func.func @warpgroup_mma(%q: !flash_tile.shared<1x128x64xf16, #sw>,
                         %k: !flash_tile.shared<2x64x64xf16, #sw>,
                         %p: !flash_tile.tile<128x64xf16, #a>,
                         %acc: !flash_tile.tile<128x64xf32, #mma>,
                         %s: index) -> !flash_tile.tile<128x64xf32, #mma> {
  %c0 = arith.constant 0 : index
  %0 = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %acc
      : !flash_tile.shared<1x128x64xf16, #sw>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<128x64xf32, #mma>
  %1 = flash_tile.warpgroup_mma %p, %k[%s], %0
      : !flash_tile.tile<128x64xf16, #a>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<128x64xf32, #mma>
  return %1 : !flash_tile.tile<128x64xf32, #mma>
}

// -----

// Without layouts (flash-to-tile's tiles, flash-tile-use-warpgroup-mma's
// output before flash-tile-assign-layouts).
// CHECK-LABEL: func.func @warpgroup_mma_unplaced
// CHECK: flash_tile.warpgroup_mma %{{.+}}, %{{.+}}[%{{.+}}], %{{.+}} : !flash_tile.tile<64x64xbf16>, !flash_tile.shared<2x64x64xbf16>, !flash_tile.tile<64x64xf32>
func.func @warpgroup_mma_unplaced(%p: !flash_tile.tile<64x64xbf16>,
                                  %v: !flash_tile.shared<2x64x64xbf16>,
                                  %acc: !flash_tile.tile<64x64xf32>,
                                  %s: index) -> !flash_tile.tile<64x64xf32> {
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xbf16>, !flash_tile.shared<2x64x64xbf16>, !flash_tile.tile<64x64xf32>
  return %0 : !flash_tile.tile<64x64xf32>
}

// -----

// TMA copies into the stages of a buffer in panels of the 128-byte swizzle
// (one of groups that leave padding rows), waits on a stage's mbarrier, and
// the CTA barrier.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @tma
// CHECK: flash_tile.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}}[%{{.+}}] box [64, 128, 1, 1] : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #swizzled>
// CHECK: flash_tile.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}}[%{{.+}}] box [64, 32, 4, 1] : !llvm.ptr, !flash_tile.shared<1x128x64xbf16>
// CHECK: flash_tile.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}}[%{{.+}}] box [64, 42, 3, 1] : !llvm.ptr, !flash_tile.shared<1x128x64xbf16>
// CHECK: flash_tile.stage_wait %{{.+}}[%{{.+}}], %{{.+}} : !flash_tile.shared<2x128x128xf16, #swizzled>
// CHECK: flash_tile.barrier
func.func @tma(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x128xf16, #sw>,
               %q: !flash_tile.shared<1x128x64xbf16>, %j: index, %b: index,
               %s: index, %parity: i1) {
  %c0 = arith.constant 0 : index
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %k[%s] box [64, 128, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #sw>
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %q[%c0] box [64, 32, 4, 1]
      : !llvm.ptr, !flash_tile.shared<1x128x64xbf16>
  // 3 groups of 42 rows: the stage's last 2 rows are padding.
  flash_tile.tma_load %map[%c0, %j, %c0, %b], %q[%c0] box [64, 42, 3, 1]
      : !llvm.ptr, !flash_tile.shared<1x128x64xbf16>
  flash_tile.stage_wait %k[%s], %parity : !flash_tile.shared<2x128x128xf16, #sw>
  flash_tile.barrier
  return
}

// -----

// The output through shared memory: a register tile written into a stage,
// and the stage stored by TMA.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
#mma = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
// CHECK-LABEL: func.func @tma_store
// CHECK: flash_tile.local_store %{{.+}}, %{{.+}}[%{{.+}}] : !flash_tile.tile<128x128xf16, #mma>, !flash_tile.shared<1x128x128xf16, #swizzled>
// CHECK: flash_tile.tma_store %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] box [64, 128, 1, 1] : !flash_tile.shared<1x128x128xf16, #swizzled>, !llvm.ptr
func.func @tma_store(%map: !llvm.ptr, %o: !flash_tile.tile<128x128xf16, #mma>,
                     %buf: !flash_tile.shared<1x128x128xf16, #sw>, %row: index,
                     %b: index) {
  %c0 = arith.constant 0 : index
  flash_tile.local_store %o, %buf[%c0]
      : !flash_tile.tile<128x128xf16, #mma>, !flash_tile.shared<1x128x128xf16, #sw>
  flash_tile.tma_store %buf[%c0], %map[%c0, %row, %c0, %b] box [64, 128, 1, 1]
      : !flash_tile.shared<1x128x128xf16, #sw>, !llvm.ptr
  return
}

// -----

// The first panels of a wider buffer (Q's, D = 192) as the output's
// (Dv = 128), placed or not yet.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @view
// CHECK: %[[O:.+]] = flash_tile.view %{{.+}} : !flash_tile.shared<1x128x192xf16, #swizzled> to !flash_tile.shared<1x128x128xf16, #swizzled>
// CHECK: flash_tile.tma_store %[[O]][%{{.+}}], %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] box [64, 128, 1, 1] : !flash_tile.shared<1x128x128xf16, #swizzled>, !llvm.ptr
// CHECK: flash_tile.view %{{.+}} : !flash_tile.shared<1x64x96xbf16> to !flash_tile.shared<1x64x64xbf16>
func.func @view(%map: !llvm.ptr, %q: !flash_tile.shared<1x128x192xf16, #sw>,
                %unplaced: !flash_tile.shared<1x64x96xbf16>, %row: index,
                %b: index) {
  %c0 = arith.constant 0 : index
  %o = flash_tile.view %q : !flash_tile.shared<1x128x192xf16, #sw> to !flash_tile.shared<1x128x128xf16, #sw>
  flash_tile.tma_store %o[%c0], %map[%c0, %row, %c0, %b] box [64, 128, 1, 1]
      : !flash_tile.shared<1x128x128xf16, #sw>, !llvm.ptr
  %u = flash_tile.view %unplaced : !flash_tile.shared<1x64x96xbf16> to !flash_tile.shared<1x64x64xbf16>
  return
}

// -----

// A warp-specialised kernel: the producer warp waits for a released stage
// and fills it; the consumers wait for it to land, read it and release it.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @warp_specialize
// CHECK: flash_tile.warp_specialize producer(registers 24) {
// CHECK-NEXT: flash_tile.stage_acquire %{{.+}}[%{{.+}}], %{{.+}} : !flash_tile.shared<2x128x128xf16, #swizzled>
// CHECK-NEXT: flash_tile.tma_load
// CHECK-NEXT: } consumers(threads 256, registers 240) {
// CHECK-NEXT: flash_tile.stage_wait
// CHECK-NEXT: flash_tile.stage_release %{{.+}}[%{{.+}}] : !flash_tile.shared<2x128x128xf16, #swizzled>
// CHECK-NEXT: flash_tile.barrier
// CHECK-NEXT: }
func.func @warp_specialize(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x128xf16, #sw>,
                           %j: index, %b: index, %s: index, %free: i1, %full: i1) {
  %c0 = arith.constant 0 : index
  flash_tile.warp_specialize producer(registers 24) {
    flash_tile.stage_acquire %k[%s], %free : !flash_tile.shared<2x128x128xf16, #sw>
    flash_tile.tma_load %map[%c0, %j, %c0, %b], %k[%s] box [64, 128, 1, 1]
        : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #sw>
  } consumers(threads 256, registers 240) {
    flash_tile.stage_wait %k[%s], %full : !flash_tile.shared<2x128x128xf16, #sw>
    flash_tile.stage_release %k[%s] : !flash_tile.shared<2x128x128xf16, #sw>
    flash_tile.barrier
  }
  return
}

// -----

// Two warpgroup MMAs started, the first waited for with the second still
// running, then the second.
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-LABEL: func.func @async_mma
// CHECK: %[[S:.+]] = flash_tile.warpgroup_mma %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}] transpose, %{{.+}} async :
// CHECK: %[[O:.+]] = flash_tile.warpgroup_mma %{{.+}}, %{{.+}}[%{{.+}}], %{{.+}} async :
// CHECK: flash_tile.warpgroup_wait %[[S]] pending 1 : !flash_tile.tile<64x64xf32>
// CHECK: flash_tile.warpgroup_wait %[[O]] pending 0 : !flash_tile.tile<64x64xf32>
func.func @async_mma(%q: !flash_tile.shared<1x64x64xf16, #sw>, %k: !flash_tile.shared<2x64x64xf16, #sw>,
                     %p: !flash_tile.tile<64x64xf16>, %acc: !flash_tile.tile<64x64xf32>, %s: index)
    -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>) {
  %s0 = flash_tile.warpgroup_mma %q[%s], %k[%s] transpose, %acc async
      : !flash_tile.shared<1x64x64xf16, #sw>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<64x64xf32>
  %o0 = flash_tile.warpgroup_mma %p, %k[%s], %acc async
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<64x64xf32>
  %s1 = flash_tile.warpgroup_wait %s0 pending 1 : !flash_tile.tile<64x64xf32>
  %o1 = flash_tile.warpgroup_wait %o0 pending 0 : !flash_tile.tile<64x64xf32>
  return %s1, %o1 : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>
}

// -----

// The consumer warpgroups take turns at the tensor cores: a turn starts a
// multiply, and its wait follows the turn.
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-LABEL: func.func @turns
// CHECK: consumers(threads 256, registers 240) {
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[S:.+]] = flash_tile.warpgroup_mma {{.+}} async
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: flash_tile.warpgroup_wait %[[S]] pending 0
func.func @turns(%q: !flash_tile.shared<1x64x64xf16, #sw>, %k: !flash_tile.shared<2x64x64xf16, #sw>,
                 %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    flash_tile.turn_wait
    %s0 = flash_tile.warpgroup_mma %q[%s], %k[%s] transpose, %acc async
        : !flash_tile.shared<1x64x64xf16, #sw>, !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<64x64xf32>
    flash_tile.turn_pass
    %s1 = flash_tile.warpgroup_wait %s0 pending 0 : !flash_tile.tile<64x64xf32>
  }
  return
}
