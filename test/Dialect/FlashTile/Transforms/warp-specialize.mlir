// RUN: flashc-opt %s --split-input-file --flash-tile-warp-specialize | FileCheck %s
// RUN: flashc-opt %s --split-input-file \
// RUN:   --flash-tile-warp-specialize="producer-registers=40" \
// RUN:   | FileCheck %s --check-prefix=REGS
// RUN: not flashc-opt %s --split-input-file \
// RUN:   --flash-tile-warp-specialize="producer-registers=20" 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=BADREGS

// BADREGS: flash-tile-warp-specialize: producer-registers 20 is not a multiple of 8 from 24 to 256

// A kernel as flash-tile-use-tma leaves it (two warpgroups): Q copied
// once, K and V into two stages, the KV loop copying the next block while
// it multiplies, a barrier ending each iteration, the output stored by
// TMA through Q's buffer.
//
// From Q's copy on, the kernel becomes the consumers' region, and the
// CTA gains the producer's warpgroup. The producer's region is that code
// sliced to its copies: Q's, the prologue's K and V, and the loop's, the
// loop carrying only the stage (and, new, a mask of the parities of each
// ring buffer's stages, starting at all ones). Each fill of K's or V's
// stage first waits for the consumers to release it (stage_acquire, of the
// stage's bit in the buffer's mask), then flips the bit. The consumers
// copy nothing; they release K's stage after its last read (S's MMA) and
// V's after PV's, and the barrier that ended the iteration goes.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: attributes {flash.block = 384 : i64}
// CHECK: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
// CHECK: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// CHECK: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// CHECK: flash_tile.warp_specialize producer(registers 24) {
// CHECK-NEXT: %[[ONES:.+]] = arith.constant -1 : i32
// CHECK-NEXT: flash_tile.tma_load %{{.+}}, %[[QS]][%{{.+}}] box [64, 64, 1, 1]
// CHECK-NOT: flash_tile.stage_acquire %[[QS]]
// CHECK: %[[KP:.+]] = arith.cmpi ne
// CHECK-NEXT: flash_tile.stage_acquire %[[KS]][%[[C0:.+]]], %[[KP]]
// CHECK-NEXT: flash_tile.tma_load %{{.+}}, %[[KS]][%[[C0]]]
// CHECK: %[[KM0:.+]] = arith.xori %[[ONES]]
// CHECK: flash_tile.stage_acquire %[[VS]][%[[C0]]]
// CHECK-NEXT: flash_tile.tma_load %{{.+}}, %[[VS]][%[[C0]]]
// CHECK: %[[VM0:.+]] = arith.xori %[[ONES]]
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %[[KM:.+]] = %[[KM0]], %[[VM:.+]] = %[[VM0]]) -> (index, i32, i32) {
// CHECK: %[[W:.+]] = arith.subi %{{.+}}, %[[S]] : index
// CHECK: %[[MASKS:.+]]:2 = scf.if %{{.+}} -> (i32, i32) {
// CHECK: %[[BIT:.+]] = arith.shli
// CHECK: %[[AND:.+]] = arith.andi %[[KM]], %[[BIT]]
// CHECK-NEXT: %[[P:.+]] = arith.cmpi ne, %[[AND]]
// CHECK-NEXT: flash_tile.stage_acquire %[[KS]][%[[W]]], %[[P]]
// CHECK-NEXT: flash_tile.tma_load %{{.+}}, %[[KS]][%[[W]]]
// CHECK: %[[KM1:.+]] = arith.xori %[[KM]]
// CHECK: flash_tile.stage_acquire %[[VS]][%[[W]]]
// CHECK-NEXT: flash_tile.tma_load %{{.+}}, %[[VS]][%[[W]]]
// CHECK: %[[VM1:.+]] = arith.xori %[[VM]]
// CHECK-NEXT: scf.yield %[[KM1]], %[[VM1]] : i32, i32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[KM]], %[[VM]] : i32, i32
// CHECK: scf.yield %[[W]], %[[MASKS]]#0, %[[MASKS]]#1 : index, i32, i32
// CHECK-NEXT: } {flash.kv_loop}
// CHECK-NEXT: } consumers(threads 256, registers 240) {
// CHECK-NOT: flash_tile.tma_load
// CHECK: flash_tile.stage_wait %[[QS]]
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[CS:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (!flash_tile.tile<64x64xf32>, index, i32) {
// CHECK-NOT: scf.if
// CHECK: flash_tile.stage_wait %[[KS]][%[[CS]]]
// CHECK-NEXT: flash_tile.warpgroup_mma %[[QS]][%{{.+}}], %[[KS]][%[[CS]]] transpose
// CHECK-NEXT: flash_tile.stage_release %[[KS]][%[[CS]]]
// CHECK-NEXT: flash_tile.stage_wait %[[VS]][%[[CS]]]
// CHECK-NEXT: flash_tile.warpgroup_mma %{{.+}}, %[[VS]][%[[CS]]]
// CHECK-NEXT: flash_tile.stage_release %[[VS]][%[[CS]]]
// CHECK-NOT: flash_tile.barrier
// CHECK: } {flash.kv_loop}
// CHECK: flash_tile.local_store
// CHECK-NEXT: flash_tile.tma_store
// CHECK-NEXT: }
// CHECK-NEXT: return

// A producer warpgroup of 40 registers a thread leaves 256 consumer
// threads 232 each: (65536 - 40 x 128) / 256 = 236, down to a multiple
// of 8.
// REGS-LABEL: func.func @kernel
// REGS: flash_tile.warp_specialize producer(registers 40)
// REGS: consumers(threads 256, registers 232)
// REGS-LABEL: func.func @one_warpgroup
// REGS: consumers(threads 128, registers 240)
func.func @kernel(%qmap: !llvm.ptr, %kmap: !llvm.ptr, %vmap: !llvm.ptr,
                  %omap: !llvm.ptr, %b: index, %n: index, %row0: index,
                  %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %o16: !flash_tile.tile<64x64xf16>) attributes {flash.block = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.tma_load %qmap[%c0, %row0, %c0, %b], %qs[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<1x64x64xf16>
  flash_tile.tma_load %kmap[%c0, %c0, %c0, %b], %ks[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
  flash_tile.tma_load %vmap[%c0, %c0, %c0, %b], %vs[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
  %false = arith.constant false
  flash_tile.stage_wait %qs[%c0], %false : !flash_tile.shared<1x64x64xf16>
  %phases0 = arith.constant 0 : i32
  %r:3 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0, %phases = %phases0) -> (!flash_tile.tile<64x64xf32>, index, i32) {
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %s32 = arith.index_cast %s : index to i32
    %bit = arith.shli %c1_i32, %s32 : i32
    %and = arith.andi %phases, %bit : i32
    %parity = arith.cmpi ne, %and, %c0_i32 : i32
    %next = arith.addi %j, %c64 : index
    %w = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      flash_tile.tma_load %kmap[%c0, %next, %c0, %b], %ks[%w] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
      flash_tile.tma_load %vmap[%c0, %next, %c0, %b], %vs[%w] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
    }
    flash_tile.stage_wait %ks[%s], %parity : !flash_tile.shared<2x64x64xf16>
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %o : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.stage_wait %vs[%s], %parity : !flash_tile.shared<2x64x64xf16>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %sc : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.barrier
    %flipped = arith.xori %phases, %bit : i32
    scf.yield %o2, %w, %flipped : !flash_tile.tile<64x64xf32>, index, i32
  } {flash.kv_loop}
  flash_tile.local_store %o16, %qs[%c0] : !flash_tile.tile<64x64xf16>, !flash_tile.shared<1x64x64xf16>
  flash_tile.tma_store %qs[%c0], %omap[%c0, %row0, %c0, %b] box [64, 64, 1, 1] : !flash_tile.shared<1x64x64xf16>, !llvm.ptr
  return
}

// -----

// One consumer warpgroup may take 240 registers a thread (the default's
// most), though the SM's registers would allow more.
// CHECK-LABEL: func.func @one_warpgroup
// CHECK-SAME: attributes {flash.block = 256 : i64}
// CHECK: flash_tile.warp_specialize producer(registers 24)
// CHECK-NOT: flash_tile.stage_acquire
// CHECK: consumers(threads 128, registers 240)
// CHECK-NOT: flash_tile.stage_release
func.func @one_warpgroup(%qmap: !llvm.ptr, %b: index, %row0: index) attributes {flash.block = 128 : i64} {
  %c0 = arith.constant 0 : index
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.tma_load %qmap[%c0, %row0, %c0, %b], %qs[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<1x64x64xf16>
  %false = arith.constant false
  flash_tile.stage_wait %qs[%c0], %false : !flash_tile.shared<1x64x64xf16>
  return
}

// -----

// A loop that also writes shared memory itself keeps its barrier (now of
// the consumers only) beside the releases.
// CHECK-LABEL: func.func @writes_shared
// CHECK: consumers(threads 256, registers 240) {
// CHECK: scf.for
// CHECK: flash_tile.local_load
// CHECK-NEXT: flash_tile.stage_release %{{.+}}[%{{.+}}]
// CHECK-NEXT: flash_tile.local_store
// CHECK-NEXT: flash_tile.barrier
func.func @writes_shared(%kmap: !llvm.ptr, %b: index, %n: index,
                         %t: !flash_tile.tile<64x64xf16>) attributes {flash.block = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %scratch = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.tma_load %kmap[%c0, %c0, %c0, %b], %ks[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
  %false = arith.constant false
  %r = scf.for %j = %c0 to %n step %c64 iter_args(%s = %c0) -> (index) {
    %w = arith.subi %c1, %s : index
    %next = arith.addi %j, %c64 : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      flash_tile.tma_load %kmap[%c0, %next, %c0, %b], %ks[%w] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<2x64x64xf16>
    }
    flash_tile.stage_wait %ks[%s], %false : !flash_tile.shared<2x64x64xf16>
    %k = flash_tile.local_load %ks[%s] : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
    flash_tile.local_store %k, %scratch[%c0] : !flash_tile.tile<64x64xf16>, !flash_tile.shared<1x64x64xf16>
    flash_tile.barrier
    scf.yield %w : index
  } {flash.kv_loop}
  return
}

// -----

// Without flash.block (the threads its layouts were chosen for) a kernel
// is left as it is.
// CHECK-LABEL: func.func @no_block
// CHECK-NOT: flash_tile.warp_specialize
func.func @no_block(%qmap: !llvm.ptr, %b: index, %row0: index) {
  %c0 = arith.constant 0 : index
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.tma_load %qmap[%c0, %row0, %c0, %b], %qs[%c0] box [64, 64, 1, 1] : !llvm.ptr, !flash_tile.shared<1x64x64xf16>
  return
}
