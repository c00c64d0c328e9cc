// RUN: split-file %s %t
// RUN: flashc-opt %t/form.mlir --split-input-file --verify-diagnostics \
// RUN:   --flash-tile-pipeline
// RUN: flashc-opt %t/three.mlir --split-input-file --verify-diagnostics \
// RUN:   --flash-tile-pipeline=stages=3
// RUN: flashc-opt %t/shrink.mlir --verify-diagnostics \
// RUN:   --flash-tile-pipeline=stages=2
// RUN: not flashc-opt %t/shrink.mlir --flash-tile-pipeline=stages=5 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RANGE
// RUN: not flashc-opt %t/shrink.mlir --flash-tile-pipeline=stages=1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RANGE-ONE

// Input flash-tile-pipeline does not pipeline: each rule of the KV loop's
// form (Passes.td), and the options.

// RANGE: flash-tile-pipeline: stages is 5; give 2 to 4, or 0 for the buffers' own
// RANGE-ONE: flash-tile-pipeline: stages is 1; give 2 to 4, or 0 for the buffers' own

//--- form.mlir
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The copies must be waited for.
func.func @no_wait(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{is not a KV loop that flash-tile-pipeline pipelines: its body does not wait for its block's copies (flash_tile.async_wait)}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The wait for the block's copies waits for all of them.
func.func @wait_pending(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{the wait for its block's copies has pending 1, not 0}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 1
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The body ends with a wait, after which the stage is free.
func.func @no_release(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{its body does not end with flash_tile.async_wait pending 0 (every thread done with the stage)}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    %x = arith.addi %j, %c1 : index
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The pass groups the copies itself.
func.func @commit_in_copies(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{its block's copies wait or commit themselves}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_commit
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The copies move: nothing after them may use their values.
func.func @prefix_used_after(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{a value of its block's copies is used after them}}
  scf.for %j = %lb to %ub step %c64 {
    %left = arith.subi %ub, %j : index
    flash_tile.async_copy %k[%j], %ks[%c0] valid %left {layout = #copy}
        : memref<?x64xf16>, !buf
    flash_tile.async_wait pending 0
    %use = arith.addi %left, %c1 : index
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// A KV loop copies its block.
func.func @no_copies(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{no flash_tile.async_copy before its first wait}}
  scf.for %j = %lb to %ub step %c64 {
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The pass places blocks in stages; the input uses stage 0.
func.func @stage_one(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{a copy of its block is not into stage 0}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c1] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The pass changes the buffers' stages: they are allocated in the function.
func.func @arg_buffer(%k: memref<?x64xf16>, %lb: index, %ub: index, %kb: !buf) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{a copy of its block fills a buffer that is not a flash_tile.alloc before the loop}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %kb[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The block's work neither copies nor waits.
func.func @copy_in_body(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{its block's work copies or waits as well}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    %ok2 = arith.cmpi sge, %j, %c0 : index
    scf.if %ok2 {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The block is read from stage 0.
func.func @read_stage_one(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{a read of its block is not from stage 0}}
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    %kt = flash_tile.local_load %ks[%c1] transpose
        : !buf -> !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The KV loops of a function follow one another in one block.
func.func @nested(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  %cond = arith.cmpi slt, %lb, %ub : index
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  scf.if %cond {
    // expected-error@+1 {{is a KV loop of @nested outside the block of its first: flash-tile-pipeline hands blocks over between loops of one block}}
      scf.for %j = %lb to %ub step %c64 {
      %ok = arith.cmpi sge, %j, %c0 : index
      scf.if %ok {
        flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
            : memref<?x64xf16>, !buf
      }
      flash_tile.async_wait pending 0
      flash_tile.async_wait pending 0
    } {flash.kv_loop}
  }
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// Without the stages option the buffers' stages must agree.
func.func @mixed_stages(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{has 3 stages where the KV loops' other buffers have 2; give flash-tile-pipeline's stages}}
  %vs = flash_tile.alloc : !flash_tile.shared<3x64x64xf16, #smem>
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
      flash_tile.async_copy %k[%j], %vs[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !flash_tile.shared<3x64x64xf16, #smem>
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// One stage is no pipeline.
func.func @one_stage(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  // expected-error@+1 {{has 1 stages; flash-tile-pipeline pipelines 2 to 4 (give its stages option)}}
  %ks = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #smem>
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The wait before the loops is the pass's to set.
func.func @prologue_pending(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  // expected-error@+1 {{waits with pending 1 before the KV loops; flash-tile-pipeline sets it, from 0}}
  flash_tile.async_wait pending 1
  scf.for %j = %lb to %ub step %c64 {
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

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// The first blocks are computed from the loops' bounds before the wait
// ahead of the loops.
func.func @late_bound(%k: memref<?x64xf16>, %lb: index, %ub: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  flash_tile.async_wait pending 0
  %late = arith.addi %ub, %c1 : index
  // expected-error@+1 {{has a bound defined after the KV loops' first copies start; flash-tile-pipeline needs every KV loop's bounds before them}}
  scf.for %j = %lb to %late step %c64 {
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

//--- three.mlir
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// More than two stages look across loops of one step.
func.func @other_step(%k: memref<?x64xf16>, %lb: index, %ub: index, %end: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  // expected-error@+1 {{steps by other than the first KV loop's constant step; 3 stages need KV loops of one constant step (2 do not)}}
  scf.for %j = %ub to %end step %c1 {
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

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
// ... and loops that continue one another.
func.func @gap(%k: memref<?x64xf16>, %lb: index, %ub: index, %end: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  // expected-error@+1 {{does not start where the KV loop before it ends; 3 stages need KV loops that continue one another (2 do not)}}
  scf.for %j = %lb to %end step %c64 {
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

//--- shrink.mlir
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
!buf = !flash_tile.shared<4x64x64xf16, #smem>
// A decode kernel's kv warps merge through a KV buffer after the loops:
// the pass does not shrink it.
func.func @shrink(%k: memref<?x64xf16>, %lb: index, %ub: index,
                  %o0: !flash_tile.tile<4x16x64xf32, #mma>)
    -> !flash_tile.tile<16x64xf32, #flat> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %ks = flash_tile.alloc : !buf
  scf.for %j = %lb to %ub step %c64 {
    %ok = arith.cmpi sge, %j, %c0 : index
    scf.if %ok {
      flash_tile.async_copy %k[%j], %ks[%c0] valid %c64 {layout = #copy}
          : memref<?x64xf16>, !buf
    }
    flash_tile.async_wait pending 0
    flash_tile.async_wait pending 0
  } {flash.kv_loop}
  // expected-error@+1 {{merges through a buffer that flash-tile-pipeline would shrink from 4 to 2 stages}}
  %o = flash_tile.batch_reduce sum %o0, %ks : !flash_tile.tile<4x16x64xf32, #mma>,
      !buf -> !flash_tile.tile<16x64xf32, #flat>
  return %o : !flash_tile.tile<16x64xf32, #flat>
}
