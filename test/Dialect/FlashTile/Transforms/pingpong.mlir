// RUN: flashc-opt %s --split-input-file --flash-tile-pingpong | FileCheck %s
// Twice: a kernel whose warpgroups take turns already is left as it is.
// RUN: flashc-opt %s --split-input-file --flash-tile-pingpong \
// RUN:   --flash-tile-pingpong | FileCheck %s

// Two consumer warpgroups: every run of warpgroup MMAs becomes a turn.
// - S, which waited for itself, is started in its turn and waited for
//   right after it (pending 0), before the release of K's stage.
// - Two MMAs one after the other (a constant between them has no memory
//   effect) are one turn: the first, made async, is waited for with the
//   second still pending (pending 1); the second was async already and
//   keeps its wait where it was.
// - An MMA in a loop is a turn of the loop's block; a stage wait before it
//   stays before the turn.
// CHECK-LABEL: func.func @kernel
// CHECK: consumers(threads 256, registers 240) {
// CHECK-NEXT: flash_tile.stage_wait %[[K:.+]][%{{.+}}], %{{.+}}
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[S0:.+]] = flash_tile.warpgroup_mma %{{.+}}, %[[K]][%{{.+}}] transpose, %{{.+}} async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: %[[S:.+]] = flash_tile.warpgroup_wait %[[S0]] pending 0
// CHECK-NEXT: flash_tile.stage_release %[[K]]
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[A0:.+]] = flash_tile.warpgroup_mma %{{.+}}, %[[K]][%{{.+}}] transpose, %[[S]] async :
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[B0:.+]] = flash_tile.warpgroup_mma %{{.+}}, %[[K]][%{{.+}}] transpose, %[[S]] async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: %[[A:.+]] = flash_tile.warpgroup_wait %[[A0]] pending 1
// CHECK-NEXT: %[[B:.+]] = flash_tile.warpgroup_wait %[[B0]] pending 0
// CHECK-NEXT: flash_tile.stage_release %[[K]]
// CHECK: scf.for
// CHECK-NEXT: flash_tile.stage_wait
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[L0:.+]] = flash_tile.warpgroup_mma {{.+}} async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: %[[L:.+]] = flash_tile.warpgroup_wait %[[L0]] pending 0
// CHECK-NEXT: scf.yield %[[L]]
func.func @kernel(%q: !flash_tile.shared<1x64x64xf16>,
                  %k: !flash_tile.shared<2x64x64xf16>,
                  %acc: !flash_tile.tile<64x64xf32>, %s: index, %p: i1,
                  %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    flash_tile.stage_wait %k[%s], %p : !flash_tile.shared<2x64x64xf16>
    %s0 = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %acc
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.stage_release %k[%s] : !flash_tile.shared<2x64x64xf16>
    %a = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %s0
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %c2 = arith.constant 2 : index
    %b0 = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %s0 async
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %b = flash_tile.warpgroup_wait %b0 pending 0 : !flash_tile.tile<64x64xf32>
    flash_tile.stage_release %k[%s] : !flash_tile.shared<2x64x64xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%o = %b) -> (!flash_tile.tile<64x64xf32>) {
      flash_tile.stage_wait %k[%i], %p : !flash_tile.shared<2x64x64xf16>
      %l = flash_tile.warpgroup_mma %q[%c0], %k[%i] transpose, %o
          : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
      scf.yield %l : !flash_tile.tile<64x64xf32>
    }
  }
  return
}

// -----

// One consumer warpgroup has no one to take turns with: left as it is.
// CHECK-LABEL: func.func @one_warpgroup
// CHECK-NOT: flash_tile.turn_wait
// CHECK: flash_tile.warpgroup_mma
// CHECK-NOT: async
// CHECK-NOT: flash_tile.turn_pass
// CHECK: return
func.func @one_warpgroup(%q: !flash_tile.shared<1x64x64xf16>,
                         %k: !flash_tile.shared<2x64x64xf16>,
                         %acc: !flash_tile.tile<64x64xf32>) {
  %c0 = arith.constant 0 : index
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 128, registers 240) {
    %s0 = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %acc
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  }
  return
}

// -----

// Outside a flash_tile.warp_specialize there are no consumer warpgroups.
// CHECK-LABEL: func.func @not_specialized
// CHECK-NOT: flash_tile.turn_wait
// CHECK: return
func.func @not_specialized(%q: !flash_tile.shared<1x64x64xf16>,
                           %k: !flash_tile.shared<2x64x64xf16>,
                           %acc: !flash_tile.tile<64x64xf32>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %s0 = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %acc
      : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  return %s0 : !flash_tile.tile<64x64xf32>
}

// -----

// An MMA that accumulates into the one before it, or an op that reads an
// MMA's result, ends the run: that result is only there after its turn.
// CHECK-LABEL: func.func @dependent
// CHECK: flash_tile.turn_wait
// CHECK-NEXT: %[[A0:.+]] = flash_tile.warpgroup_mma {{.+}} async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: %[[A:.+]] = flash_tile.warpgroup_wait %[[A0]] pending 0
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[B0:.+]] = flash_tile.warpgroup_mma %{{.+}}, %{{.+}}, %[[A]] async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: %[[B:.+]] = flash_tile.warpgroup_wait %[[B0]] pending 0
// CHECK-NEXT: %[[R:.+]] = flash_tile.rescale %[[B]]
// CHECK-NEXT: flash_tile.turn_wait
// CHECK-NEXT: %[[C0:.+]] = flash_tile.warpgroup_mma %{{.+}}, %{{.+}}, %[[R]] async :
// CHECK-NEXT: flash_tile.turn_pass
// CHECK-NEXT: flash_tile.warpgroup_wait %[[C0]] pending 0
func.func @dependent(%q: !flash_tile.shared<1x64x64xf16>,
                     %k: !flash_tile.shared<2x64x64xf16>,
                     %acc: !flash_tile.tile<64x64xf32>,
                     %scale: !flash_tile.tile<64xf32>) {
  %c0 = arith.constant 0 : index
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    %a = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %acc
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %b = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %a
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %r = flash_tile.rescale %b by %scale : !flash_tile.tile<64x64xf32>, !flash_tile.tile<64xf32>
    %c = flash_tile.warpgroup_mma %q[%c0], %k[%c0] transpose, %r
        : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  }
  return
}
