// RUN: flashc-opt %s --split-input-file --flash-tile-pipeline | FileCheck %s
// RUN: flashc-opt %s --split-input-file --flash-tile-pipeline=stages=3 \
// RUN:   | FileCheck %s --check-prefix=THREE
// RUN: flashc-opt %s --split-input-file --flash-tile-pipeline=stages=4 \
// RUN:   | FileCheck %s --check-prefix=FOUR

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#b = #flash_tile.operand<b, #mma>
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>

// One KV loop as flash-to-tile writes it: block j's copies into stage 0,
// the wait for them, the block's reads of stage 0, the wait that ends the
// iteration.

// Two stages (the buffers'): the first block's copies join Q's before its
// wait; each iteration copies the next block into the other stage first,
// reads its own stage, and waits with nothing left in flight.
// CHECK-LABEL: func.func @one_loop
// CHECK-DAG: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16
// CHECK-DAG: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16
// CHECK: %[[NONE:.+]] = arith.constant -1 : index
// CHECK: %[[NONEMPTY:.+]] = arith.cmpi slt, %[[LB:.+]], %[[UB:.+]] : index
// CHECK: %[[FIRST:.+]] = arith.select %[[NONEMPTY]], %[[LB]], %[[NONE]] : index
// CHECK: %[[S0:.+]] = arith.constant 0 : index
// CHECK: flash_tile.async_copy %{{.+}}[%{{.+}}], %[[QS:.+]][%{{.+}}]
// CHECK: %[[OK0:.+]] = arith.cmpi sge, %[[FIRST]]
// CHECK: scf.if %[[OK0]] {
// CHECK: flash_tile.async_copy %{{.+}}[%[[FIRST]]], %[[KS]][%[[S0]]]
// CHECK: flash_tile.async_copy %{{.+}}[%[[FIRST]]], %[[VS]][%[[S0]]]
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: flash_tile.async_wait pending 0
// CHECK: scf.for %[[J:[^ ]+]] = %[[LB]] to %[[UB]] step %[[STEP:[^ ]+]] iter_args(%[[ACC:.+]] = %{{.+}}, %[[S:.+]] = %[[S0]]) -> (!flash_tile.tile<64x64xf32, #mma>, index) {
// CHECK: %[[JN:.+]] = arith.addi %[[J]], %[[STEP]] : index
// CHECK: %[[BELOW:.+]] = arith.cmpi slt, %[[JN]], %[[UB]] : index
// CHECK: %[[NEXT:.+]] = arith.select %[[BELOW]], %[[JN]], %[[NONE]] : index
// CHECK: %[[OTHER:.+]] = arith.subi %{{.+}}, %[[S]] : index
// CHECK: arith.cmpi sge, %[[NEXT]]
// CHECK: flash_tile.async_copy %{{.+}}[%[[NEXT]]], %[[KS]][%[[OTHER]]]
// CHECK: flash_tile.async_copy %{{.+}}[%[[NEXT]]], %[[VS]][%[[OTHER]]]
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NOT: flash_tile.async_wait
// CHECK: flash_tile.local_load %[[KS]][%[[S]]] transpose
// CHECK: flash_tile.local_load %[[VS]][%[[S]]]
// CHECK-NEXT: flash_tile.async_wait pending 0
// CHECK-NEXT: scf.yield %{{.+}}, %[[OTHER]] : !flash_tile.tile<64x64xf32, #mma>, index
// CHECK-NEXT: } {flash.kv_loop}

// Three stages: blocks 0 and 1 before the loop, one group each, the wait
// for the first; each iteration copies block j + 2 into the stage the
// previous block used and waits for block j + 1 with one group in flight.
// THREE-LABEL: func.func @one_loop
// THREE-DAG: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<3x64x64xf16
// THREE-DAG: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<3x64x64xf16
// THREE: %[[NONE:.+]] = arith.constant -1 : index
// THREE: %[[B0:.+]] = arith.addi %[[LB:.+]], %{{.+}} : index
// THREE: %[[OK0:.+]] = arith.cmpi slt, %[[B0]], %[[UB:.+]] : index
// THREE: %[[F0:.+]] = arith.select %[[OK0]], %[[B0]], %[[NONE]] : index
// THREE: %[[C64:.+]] = arith.constant 64 : index
// THREE: %[[B1:.+]] = arith.addi %[[LB]], %[[C64]] : index
// THREE: %[[OK1:.+]] = arith.cmpi slt, %[[B1]], %[[UB]] : index
// THREE: %[[F1:.+]] = arith.select %[[OK1]], %[[B1]], %[[NONE]] : index
// THREE: %[[S0:.+]] = arith.constant 0 : index
// THREE: %[[S1:.+]] = arith.constant 1 : index
// THREE: flash_tile.async_copy %{{.+}}[%{{.+}}], %[[QS:.+]][%{{.+}}]
// THREE: flash_tile.async_copy %{{.+}}[%[[F0]]], %[[KS]][%[[S0]]]
// THREE: flash_tile.async_commit
// THREE: flash_tile.async_copy %{{.+}}[%[[F1]]], %[[KS]][%[[S1]]]
// THREE: %[[W0:.+]] = arith.constant 2 : index
// THREE: flash_tile.async_wait pending 1
// The loop carries its block's stage and the stage the block before it
// used, where the copies go.
// THREE: scf.for %[[J:[^ ]+]] = {{.+}} iter_args(%{{.+}} = %{{.+}}, %[[S:.+]] = %[[S0]], %[[W:.+]] = %[[W0]]) -> (!flash_tile.tile<64x64xf32, #mma>, index, index) {
// THREE: %[[AHEAD:.+]] = arith.addi %[[J]], %c128{{.*}} : index
// THREE: %[[BELOW:.+]] = arith.cmpi slt, %[[AHEAD]], %[[UB]] : index
// THREE: %[[NEXT:.+]] = arith.select %[[BELOW]], %[[AHEAD]], %{{.+}} : index
// THREE: %[[UP:.+]] = arith.addi %[[S]], %{{.+}} : index
// THREE: %[[WRAPS:.+]] = arith.cmpi eq, %[[UP]], %c3{{.*}} : index
// THREE: %[[SN:.+]] = arith.select %[[WRAPS]], %{{.+}}, %[[UP]] : index
// THREE: flash_tile.async_copy %{{.+}}[%[[NEXT]]], %[[KS]][%[[W]]]
// THREE: flash_tile.local_load %[[KS]][%[[S]]] transpose
// THREE: flash_tile.async_wait pending 1
// THREE-NEXT: scf.yield %{{.+}}, %[[SN]], %[[S]] : !flash_tile.tile<64x64xf32, #mma>, index, index

// Four stages: three blocks before the loop, the loop waits with two groups
// in flight.
// FOUR-LABEL: func.func @one_loop
// FOUR: flash_tile.alloc : !flash_tile.shared<4x64x64xf16
// FOUR-COUNT-2: flash_tile.async_commit
// FOUR-NOT: flash_tile.async_commit
// FOUR: flash_tile.async_wait pending 2
// FOUR: scf.for
// FOUR: arith.addi %{{.+}}, %c192{{.*}} : index
// FOUR: flash_tile.async_wait pending 2
// FOUR-NEXT: scf.yield
func.func @one_loop(%q: memref<?x64xf16>, %k: memref<?x64xf16>,
                    %v: memref<?x64xf16>, %lb: index, %ub: index,
                    %qa: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>)
    -> !flash_tile.tile<64x64xf32, #mma> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #smem>
  %ks = flash_tile.alloc : !buf
  %vs = flash_tile.alloc : !buf
  %f0 = arith.constant 0.0 : f32
  %zero = flash_tile.splat %f0 : !flash_tile.tile<64x64xf32, #mma>
  flash_tile.async_copy %q[%c0], %qs[%c0] valid %c64 {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.async_wait pending 0
  %r = scf.for %j = %lb to %ub step %c64 iter_args(%acc = %zero)
      -> (!flash_tile.tile<64x64xf32, #mma>) {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
      flash_tile.async_copy %v[%j], %vs[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    %kt = flash_tile.local_load %ks[%c0] transpose
        : !buf -> !flash_tile.tile<64x64xf16, #b>
    %s = flash_tile.mma %qa, %kt, %acc
        : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>,
          !flash_tile.tile<64x64xf16, #b>, !flash_tile.tile<64x64xf32, #mma>
    %vt = flash_tile.local_load %vs[%c0]
        : !buf -> !flash_tile.tile<64x64xf16, #b>
    flash_tile.async_wait pending 0
    scf.yield %s : !flash_tile.tile<64x64xf32, #mma>
  } {flash.kv_loop}
  return %r : !flash_tile.tile<64x64xf32, #mma>
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>

// Two loops that continue one another (a causal kernel's unmasked and
// diagonal blocks). With two stages the first loop's last iteration copies
// the second loop's first block (or -1 where it is empty), and the second
// loop starts from the stage the first ended on. Without a wait before
// the loops, the pass makes one.
// CHECK-LABEL: func.func @two_loops
// CHECK: %[[NONE:.+]] = arith.constant -1 : index
// CHECK: %[[NE1:.+]] = arith.cmpi slt, %[[MID:[^ ]+]], %[[END:[^ ]+]] : index
// CHECK: %[[START1:.+]] = arith.select %[[NE1]], %[[MID]], %[[NONE]] : index
// CHECK: %[[NE0:.+]] = arith.cmpi slt, %[[LB:[^ ]+]], %[[MID]] : index
// CHECK: %[[FIRST:.+]] = arith.select %[[NE0]], %[[LB]], %[[START1]] : index
// CHECK: flash_tile.async_copy %{{.+}}[%[[FIRST]]]
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: flash_tile.async_wait pending 0
// CHECK: %[[R0:.+]] = scf.for %[[J0:[^ ]+]] = %[[LB]] to %[[MID]]
// CHECK: %[[JN0:.+]] = arith.addi %[[J0]]
// CHECK: %[[B0:.+]] = arith.cmpi slt, %[[JN0]], %[[MID]] : index
// CHECK: arith.select %[[B0]], %[[JN0]], %[[START1]] : index
// CHECK: } {flash.kv_loop}
// CHECK: scf.for %{{.+}} = %[[MID]] to %[[END]] step %{{.+}} iter_args(%{{.+}} = %[[R0]])
// CHECK: arith.select %{{.+}}, %{{.+}}, %[[NONE]] : index
// CHECK: } {flash.kv_loop}

// Three stages: the blocks two on run across the loops' boundary up to the
// last loop's end.
// THREE-LABEL: func.func @two_loops
// THREE: %[[NONE:.+]] = arith.constant -1 : index
// THREE: arith.cmpi slt, %{{.+}}, %[[END:[^ ]+]] : index
// THREE: flash_tile.async_commit
// THREE: flash_tile.async_wait pending 1
// THREE: scf.for
// THREE: %[[A0:.+]] = arith.addi %{{.+}}, %c128{{.*}} : index
// THREE: arith.cmpi slt, %[[A0]], %[[END]] : index
// THREE: } {flash.kv_loop}
// THREE: scf.for
// THREE: %[[A1:.+]] = arith.addi %{{.+}}, %c128{{.*}} : index
// THREE: arith.cmpi slt, %[[A1]], %[[END]] : index
// THREE: } {flash.kv_loop}
func.func @two_loops(%k: memref<?x64xf16>, %lb: index, %mid: index,
                     %end: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  scf.for %j = %lb to %mid step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  scf.for %j = %mid to %end step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

// A function without KV loops is left alone.
// CHECK-LABEL: func.func @no_loops
// CHECK-NEXT: flash_tile.async_wait pending 0
// CHECK-NEXT: return
func.func @no_loops() {
  flash_tile.async_wait pending 0
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>

// Warpgroup MMAs read the stages themselves: their stage operands of the
// copied buffers (K's and V's, not Q's) follow the block's stage, as a
// local_load's does.
// CHECK-LABEL: func.func @warpgroup
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[S:.+]] = %{{.+}}) -> (!flash_tile.tile<64x64xf32, #mma>, index) {
// CHECK: %[[SC:.+]] = flash_tile.warpgroup_mma %[[QS:.+]][%c0], %[[KS:.+]][%[[S]]] transpose
// CHECK: flash_tile.warpgroup_mma %{{.+}}, %[[VS:.+]][%[[S]]], %[[SC]]
// CHECK-NEXT: flash_tile.async_wait pending 0
func.func @warpgroup(%q: memref<?x64xf16>, %k: memref<?x64xf16>,
                     %v: memref<?x64xf16>, %lb: index, %ub: index,
                     %p: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>)
    -> !flash_tile.tile<64x64xf32, #mma> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #smem>
  %ks = flash_tile.alloc : !buf
  %vs = flash_tile.alloc : !buf
  %f0 = arith.constant 0.0 : f32
  %zero = flash_tile.splat %f0 : !flash_tile.tile<64x64xf32, #mma>
  flash_tile.async_copy %q[%c0], %qs[%c0] valid %c64 {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.async_wait pending 0
  %r = scf.for %j = %lb to %ub step %c64 iter_args(%acc = %zero)
      -> (!flash_tile.tile<64x64xf32, #mma>) {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
      flash_tile.async_copy %v[%j], %vs[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    %s = flash_tile.warpgroup_mma %qs[%c0], %ks[%c0] transpose, %acc
        : !flash_tile.shared<1x64x64xf16, #smem>, !buf, !flash_tile.tile<64x64xf32, #mma>
    %o = flash_tile.warpgroup_mma %p, %vs[%c0], %s
        : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>, !buf, !flash_tile.tile<64x64xf32, #mma>
    flash_tile.async_wait pending 0
    scf.yield %o : !flash_tile.tile<64x64xf32, #mma>
  } {flash.kv_loop}
  return %r : !flash_tile.tile<64x64xf32, #mma>
}
