// RUN: flashc-opt %s --split-input-file --flash-tile-overlap-softmax | FileCheck %s

// A warp-specialised kernel's KV loop: S = Q K^T, a softmax (here a map
// for P and its scale), O's rescale, O += P V, each stage waited for and
// released. When the loop has a block, it becomes three parts, each
// block's own work (S, the softmax, P) a step ahead of its deferred work
// (the rescale, V's wait, P V, V's release), in one branch whose other
// side yields the loop's initial values:
// - the first block's own work;
// - a loop over the blocks after it that rescales the previous block's O
//   and waits for its V from what that iteration carried (P, the scale,
//   its stage and parity), starts S and the previous block's P V back to
//   back (async), waits for S with P V still running (pending 1),
//   releases K, computes the softmax, waits for P V (pending 0) and
//   releases the previous block's V stage, and only then converts the
//   softmax to P (the map that only truncates), whose registers the next
//   P V reads;
// - the last block's deferred work.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: %[[ACC:[^:]+]]: !flash_tile.tile<64x64xf32>, %[[M0:[^:]+]]: !flash_tile.tile<64x64xf32>, %{{[^:]+}}: !flash_tile.tile<64x64xf32>, %[[S0:[^:]+]]: index)
// CHECK: %[[PHASES0:.+]] = arith.constant 0 : i32
// CHECK: flash_tile.warp_specialize
// CHECK: consumers(threads 256, registers 240) {
// CHECK: %[[ANY:.+]] = arith.cmpi slt, %[[LB:.+]], %[[UB:.+]] : index
// CHECK: %[[R:.+]]:4 = scf.if %[[ANY]] -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>, index, i32) {
// CHECK: flash_tile.stage_wait %[[KS:.+]][%[[S0]]], %{{.+}}
// CHECK-NEXT: %[[S0MMA:.+]] = flash_tile.warpgroup_mma %{{.+}}, %[[KS]][%[[S0]]] transpose, %{{.+}} :
// CHECK-NEXT: flash_tile.stage_release %[[KS]]
// CHECK: %[[M1:.+]] = flash_tile.map %[[S0MMA]], %[[M0]]
// CHECK: %[[SCALE0:.+]] = flash_tile.reduce max %[[M1]]
// CHECK: %[[P0:.+]] = flash_tile.map %[[S0MMA]] : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16>
// CHECK-NOT: flash_tile.warpgroup_mma
// CHECK: %[[SECOND:.+]] = arith.addi %[[LB]], %[[STEP:.+]] : index
// CHECK: %[[LOOP:.+]]:8 = scf.for %{{.+}} = %[[SECOND]] to %[[UB]] step %[[STEP]] iter_args(%{{.+}} = %[[M1]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[O:.+]] = %[[ACC]], %[[SCALE:.+]] = %[[SCALE0]], %[[VSTAGE:.+]] = %[[S0]], %[[VPARITY:.+]] = %{{.+}}, %[[P:.+]] = %[[P0]])
// CHECK: flash_tile.stage_wait %[[KS]]
// CHECK-NEXT: %[[RS:.+]] = flash_tile.rescale %[[O]] by %[[SCALE]]
// CHECK-NEXT: flash_tile.stage_wait %[[VS:.+]][%[[VSTAGE]]], %[[VPARITY]]
// CHECK-NEXT: %[[SSTART:.+]] = flash_tile.warpgroup_mma %{{.+}}, %[[KS]][%{{.+}}] transpose, %{{.+}} async :
// CHECK-NEXT: %[[PVSTART:.+]] = flash_tile.warpgroup_mma %[[P]], %[[VS]][%[[VSTAGE]]], %[[RS]] async :
// CHECK-NEXT: %[[S:.+]] = flash_tile.warpgroup_wait %[[SSTART]] pending 1
// CHECK-NEXT: flash_tile.stage_release %[[KS]]
// CHECK: flash_tile.map %[[S]]
// CHECK: flash_tile.reduce max
// CHECK-NEXT: %[[PV:.+]] = flash_tile.warpgroup_wait %[[PVSTART]] pending 0
// CHECK-NEXT: flash_tile.stage_release %[[VS]][%[[VSTAGE]]]
// CHECK-NEXT: %[[NEXTP:.+]] = flash_tile.map %[[S]] : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16>
// CHECK: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %[[PV]], %{{.+}}, %{{.+}}, %{{.+}}, %[[NEXTP]] :
// CHECK: } {flash.kv_loop}
// The loop's results in their order, O (the second) from the last block's
// P V; without a block, the loop's initial values.
// CHECK-NEXT: %[[RL:.+]] = flash_tile.rescale %[[LOOP]]#3 by %[[LOOP]]#4
// CHECK-NEXT: flash_tile.stage_wait %[[VS]][%[[LOOP]]#5], %[[LOOP]]#6
// CHECK-NEXT: %[[PVL:.+]] = flash_tile.warpgroup_mma %[[LOOP]]#7, %[[VS]][%[[LOOP]]#5], %[[RL]] :
// CHECK-NEXT: flash_tile.stage_release %[[VS]][%[[LOOP]]#5]
// CHECK-NEXT: scf.yield %[[LOOP]]#0, %[[PVL]], %[[LOOP]]#1, %[[LOOP]]#2
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[M0]], %[[ACC]], %[[S0]], %[[PHASES0]] :
// CHECK-NEXT: }
// CHECK-NEXT: flash_tile.map %[[R]]#1, %[[R]]#0
func.func @kernel(%qs: !flash_tile.shared<1x64x64xf16>,
                  %ks: !flash_tile.shared<2x64x64xf16>,
                  %vs: !flash_tile.shared<2x64x64xf16>,
                  %n: index, %acc: !flash_tile.tile<64x64xf32>,
                  %m0: !flash_tile.tile<64x64xf32>,
                  %z: !flash_tile.tile<64x64xf32>, %s0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %phases0 = arith.constant 0 : i32
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    %r:4 = scf.for %j = %c0 to %n step %c64 iter_args(%m = %m0, %o = %acc, %s = %s0, %phases = %phases0) -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>, index, i32) {
      %c1_i32 = arith.constant 1 : i32
      %c0_i32 = arith.constant 0 : i32
      %s32 = arith.index_cast %s : index to i32
      %bit = arith.shli %c1_i32, %s32 : i32
      %and = arith.andi %phases, %bit : i32
      %parity = arith.cmpi ne, %and, %c0_i32 : i32
      %w = arith.subi %c1, %s : index
      flash_tile.stage_wait %ks[%s], %parity : !flash_tile.shared<2x64x64xf16>
      %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %z : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      flash_tile.stage_release %ks[%s] : !flash_tile.shared<2x64x64xf16>
      %m1 = flash_tile.map %sc, %m : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf32> {
      ^bb0(%x: f32, %y: f32):
        %mx = arith.maximumf %x, %y : f32
        flash_tile.yield %mx : f32
      }
      %scale = flash_tile.reduce max %m1 : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64xf32>
      %p = flash_tile.map %sc : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16> {
      ^bb0(%x: f32):
        %h = arith.truncf %x : f32 to f16
        flash_tile.yield %h : f16
      }
      %ro = flash_tile.rescale %o by %scale : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64xf32>
      flash_tile.stage_wait %vs[%s], %parity : !flash_tile.shared<2x64x64xf16>
      %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %ro : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      flash_tile.stage_release %vs[%s] : !flash_tile.shared<2x64x64xf16>
      %flipped = arith.xori %phases, %bit : i32
      scf.yield %m1, %o2, %w, %flipped : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>, index, i32
    } {flash.kv_loop}
    %fin = flash_tile.map %r#1, %r#0 : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16> {
    ^bb0(%x: f32, %y: f32):
      %d = arith.divf %x, %y : f32
      %h = arith.truncf %d : f32 to f16
      flash_tile.yield %h : f16
    }
    flash_tile.local_store %fin, %qs[%c0] : !flash_tile.tile<64x64xf16>, !flash_tile.shared<1x64x64xf16>
  }
  return
}

// -----

// A loop with one multiply keeps its order.
// CHECK-LABEL: func.func @one_multiply
// CHECK-NOT: async
// CHECK-NOT: flash_tile.warpgroup_wait
func.func @one_multiply(%qs: !flash_tile.shared<1x64x64xf16>,
                        %ks: !flash_tile.shared<2x64x64xf16>, %n: index,
                        %z: !flash_tile.tile<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    %r = scf.for %j = %c0 to %n step %c64 iter_args(%o = %z) -> (!flash_tile.tile<64x64xf32>) {
      %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%c0] transpose, %o : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      scf.yield %sc : !flash_tile.tile<64x64xf32>
    } {flash.kv_loop}
  }
  return
}

// -----

// A loop whose bounds compare unsigned keeps its order (the rewrite's
// guard and loops compare signed).
// CHECK-LABEL: func.func @unsigned_bounds
// CHECK-NOT: async
// CHECK-NOT: flash_tile.warpgroup_wait
// CHECK: scf.for unsigned
func.func @unsigned_bounds(%qs: !flash_tile.shared<1x64x64xf16>,
                  %ks: !flash_tile.shared<2x64x64xf16>,
                  %vs: !flash_tile.shared<2x64x64xf16>,
                  %n: index, %acc: !flash_tile.tile<64x64xf32>,
                  %m0: !flash_tile.tile<64x64xf32>,
                  %z: !flash_tile.tile<64x64xf32>, %s0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %phases0 = arith.constant 0 : i32
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    %r:4 = scf.for unsigned %j = %c0 to %n step %c64 iter_args(%m = %m0, %o = %acc, %s = %s0, %phases = %phases0) -> (!flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>, index, i32) {
      %c1_i32 = arith.constant 1 : i32
      %c0_i32 = arith.constant 0 : i32
      %s32 = arith.index_cast %s : index to i32
      %bit = arith.shli %c1_i32, %s32 : i32
      %and = arith.andi %phases, %bit : i32
      %parity = arith.cmpi ne, %and, %c0_i32 : i32
      %w = arith.subi %c1, %s : index
      flash_tile.stage_wait %ks[%s], %parity : !flash_tile.shared<2x64x64xf16>
      %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %z : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      flash_tile.stage_release %ks[%s] : !flash_tile.shared<2x64x64xf16>
      %m1 = flash_tile.map %sc, %m : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf32> {
      ^bb0(%x: f32, %y: f32):
        %mx = arith.maximumf %x, %y : f32
        flash_tile.yield %mx : f32
      }
      %scale = flash_tile.reduce max %m1 : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64xf32>
      %p = flash_tile.map %sc : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16> {
      ^bb0(%x: f32):
        %h = arith.truncf %x : f32 to f16
        flash_tile.yield %h : f16
      }
      %ro = flash_tile.rescale %o by %scale : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64xf32>
      flash_tile.stage_wait %vs[%s], %parity : !flash_tile.shared<2x64x64xf16>
      %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %ro : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      flash_tile.stage_release %vs[%s] : !flash_tile.shared<2x64x64xf16>
      %flipped = arith.xori %phases, %bit : i32
      scf.yield %m1, %o2, %w, %flipped : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32>, index, i32
    } {flash.kv_loop}
    %fin = flash_tile.map %r#1, %r#0 : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64x64xf16> {
    ^bb0(%x: f32, %y: f32):
      %d = arith.divf %x, %y : f32
      %h = arith.truncf %d : f32 to f16
      flash_tile.yield %h : f16
    }
    flash_tile.local_store %fin, %qs[%c0] : !flash_tile.tile<64x64xf16>, !flash_tile.shared<1x64x64xf16>
  }
  return
}
