// RUN: flashc-opt %s --split-input-file --flash-tile-to-nvgpu --verify-diagnostics

// What flash-tile-to-nvgpu cannot lower is an error on the op that says
// why (and the conversion then fails to legalize it).

#smem = #flash_tile.swizzled<vector = 8, phases = 8>
func.func @no_offset() {
  // expected-error @below {{has no shared-memory offset: run flash-tile-allocate-shared before flash-tile-to-nvgpu}}
  // expected-error @below {{failed to legalize operation 'flash_tile.alloc'}}
  %k = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #smem>
  return
}

// -----

// Rows spread over 4 warps, then over 2 x 2: values move between threads.
func.func @between_threads(%p: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @below {{moves values between threads; only conversions that keep every value on its thread lower yet}}
  // expected-error @below {{failed to legalize operation 'flash_tile.convert_layout'}}
  %q = flash_tile.convert_layout %p : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
      -> !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>
  return
}

// -----

#mma = #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>
// Two warps share each row: the warp of columns 32..63 holds column 32,
// which folds into column 0 of the other warp's 8.
func.func @fold_between_warps(%s: !flash_tile.tile<64x64xf32, #mma>) {
  // expected-error @below {{folds values that other threads hold; only folds within each thread lower}}
  // expected-error @below {{failed to legalize operation 'flash_tile.fold'}}
  %l = flash_tile.fold sum %s : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64x16xf32, #mma>
  return
}

// -----

#mma = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
func.func @across_warps(%s: !flash_tile.tile<64x64xf32, #mma>) {
  // expected-error @below {{reduces across 4 warps; only reductions within a warp lower yet}}
  // expected-error @below {{failed to legalize operation 'flash_tile.reduce'}}
  %m = flash_tile.reduce max %s : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
func.func @transposed_a(%s: index) {
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  // expected-error @below {{cannot lower a transposed A operand yet}}
  // expected-error @below {{failed to legalize operation 'flash_tile.local_load'}}
  %a = flash_tile.local_load %q[%s] transpose : !flash_tile.shared<1x64x64xf16, #smem>
      -> !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
func.func @not_an_operand(%s: index) {
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  // expected-error @below {{lowers to ldmatrix only into an MMA operand layout, not #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>}}
  // expected-error @below {{failed to legalize operation 'flash_tile.local_load'}}
  %a = flash_tile.local_load %q[%s] : !flash_tile.shared<1x64x64xf16, #smem>
      -> !flash_tile.tile<64x64xf16, #mma>
  return
}

// -----

#smem = #flash_tile.swizzled<vector = 4, phases = 4>
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @half_chunks(%s: index) {
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  // expected-error @below {{needs swizzle chunks of whole 16-byte ldmatrix rows, not 4 elements}}
  // expected-error @below {{failed to legalize operation 'flash_tile.local_load'}}
  %a = flash_tile.local_load %q[%s] : !flash_tile.shared<1x64x64xf16, #smem>
      -> !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 8]>
func.func @k8(%a: !flash_tile.tile<64x8xf16, #flash_tile.operand<a, #mma>>,
              %b: !flash_tile.tile<8x8xf16, #flash_tile.operand<b, #mma>>,
              %c: !flash_tile.tile<64x8xf32, #mma>) {
  // expected-error @below {{lowers only m16n8k16 multiplies}}
  // expected-error @below {{failed to legalize operation 'flash_tile.mma'}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x8xf16, #flash_tile.operand<a, #mma>>,
      !flash_tile.tile<8x8xf16, #flash_tile.operand<b, #mma>>, !flash_tile.tile<64x8xf32, #mma>
  return
}

// -----

// A tile op outside any function has no thread index to start from.
%x = arith.constant 0.0 : f32
// expected-error @below {{lowers only inside a function}}
// expected-error @below {{failed to legalize operation 'flash_tile.splat'}}
%t = flash_tile.splat %x : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>

// -----

#flat = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
// Split over the row warps, the rows are not in every warp of the batch.
func.func @broadcast_between_warps(%x: !flash_tile.tile<64x8xf32, #flat>) {
  // expected-error @below {{needs values that other threads hold; only broadcasts whose every thread holds its matrix lower yet}}
  // expected-error @below {{failed to legalize operation 'flash_tile.broadcast'}}
  %b = flash_tile.broadcast %x : !flash_tile.tile<64x8xf32, #flat> -> !flash_tile.tile<4x64x8xf32, #mma>
  return
}

// -----

// The lowering takes tiles with layouts only: flash-tile-assign-layouts
// chooses them.
func.func @unassigned(%x: f32) {
  // expected-error @below {{flash-tile-to-nvgpu: a tile without a layout; run flash-tile-assign-layouts first}}
  %t = flash_tile.splat %x : !flash_tile.tile<64x64xf32>
  return
}

// -----

#sw = #flash_tile.swizzled<vector = 8, phases = 8>
func.func @unassigned_copy(%k: memref<?x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %ks = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #sw>
  // expected-error @below {{flash-tile-to-nvgpu: a copy without a layout; run flash-tile-assign-layouts first}}
  flash_tile.async_copy %k[%c0], %ks[%c0] valid %n : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #sw>
  return
}

// -----

func.func @unplaced_buffer() {
  // expected-error @below {{flash-tile-to-nvgpu: a shared buffer without the placement of its rows; run flash-tile-allocate-shared first}}
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16>
  return
}

// -----

// expected-error @below {{flash-tile-to-nvgpu: a tile without a layout; run flash-tile-assign-layouts first}}
func.func @unassigned_argument(%t: !flash_tile.tile<64x64xf32>) {
  return
}

// -----

// A warp-specialised kernel runs its consumers and a producer warpgroup:
// its block must be both.
func.func @wrong_block() attributes {flash.block = 256 : i64} {
  // expected-error @below {{needs a block of 384 threads (its consumers and a producer warpgroup); its kernel's flash.block is 256}}
  // expected-error @below {{failed to legalize operation 'flash_tile.warp_specialize'}}
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
  }
  return
}

// -----

// The producer waits for releases no consumer makes.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
func.func @no_release(%map: !llvm.ptr, %s: index, %p: i1) attributes {flash.block = 384 : i64} {
  %c0 = arith.constant 0 : index
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #sw>
  flash_tile.warp_specialize producer(registers 24) {
    // expected-error @below {{waits for a buffer whose stages no flash_tile.stage_release releases}}
    // expected-error @below {{failed to legalize operation 'flash_tile.stage_acquire'}}
    flash_tile.stage_acquire %k[%s], %p : !flash_tile.shared<2x64x64xf16, #sw>
    flash_tile.tma_load %map[%c0, %s, %c0, %c0], %k[%s] box [64, 64, 1, 1]
        : !llvm.ptr, !flash_tile.shared<2x64x64xf16, #sw>
  } consumers(threads 256, registers 240) {
  }
  return
}
