// RUN: flashc-opt %s --split-input-file --verify-diagnostics

// Every rule of the flash_tile verifiers: layouts, types, operations.

// mma: two warp counts
// expected-error @+1 {{#flash_tile.mma needs two positive warp counts (rows, columns), or three (batch, rows, columns), not [4]}}
func.func private @f(%a: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4], instr = [16, 8, 16]>>)

// -----

// mma: positive warp counts
// expected-error @+1 {{needs two positive warp counts}}
func.func private @f(%a: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 0], instr = [16, 8, 16]>>)

// -----

// mma: instruction shape
// expected-error @+1 {{#flash_tile.mma's instruction shape is [16, 8, 16] or [16, 8, 8], not [16, 16, 16]}}
func.func private @f(%a: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 16, 16]>>)

// -----

// slice: dimension
// expected-error @+1 {{#flash_tile.slice removes dimension 0 or 1 of its 2-D parent, not 2}}
func.func private @f(%a: !flash_tile.tile<64xf32, #flash_tile.slice<2, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>)

// -----

// blocked: one rank
// expected-error @+1 {{#flash_tile.blocked needs size, threads and warps of one rank, 1 or 2}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.blocked<size = [1, 8], threads = [32], warps = [4, 1]>>)

// -----

// blocked: positive
// expected-error @+1 {{#flash_tile.blocked's sizes and counts are positive}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.blocked<size = [0, 8], threads = [4, 8], warps = [4, 1]>>)

// -----

// blocked: 32 threads
// expected-error @+1 {{#flash_tile.blocked's threads per warp multiply to 32, not [4, 4]}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.blocked<size = [1, 8], threads = [4, 4], warps = [4, 1]>>)

// -----

// swizzled: vector
// expected-error @+1 {{#flash_tile.swizzled's vector is a power of two up to 64, not 6}}
func.func private @f(%a: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 6, phases = 8>>)

// -----

// swizzled: phases
// expected-error @+1 {{#flash_tile.swizzled's phases are 1, 2, 4 or 8, not 16}}
func.func private @f(%a: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 16>>)

// -----

// swizzled: whole chunks of padding
// expected-error @+1 {{#flash_tile.swizzled's padding is a whole number of chunks of 8, not 4}}
func.func private @f(%a: !flash_tile.shared<2x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 4>>)

// -----

// swizzled: padding or a swizzle
// expected-error @+1 {{#flash_tile.swizzled pads rows or swizzles them, not both: 4 phases and a padding of 8}}
func.func private @f(%a: !flash_tile.shared<2x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 4, padding = 8>>)

// -----

// swizzled: runs of rows a phase
// expected-error @+1 {{#flash_tile.swizzled's rowsPerPhase is 1, 2, 4 or 8, not 3}}
func.func private @f(%a: !flash_tile.shared<2x64x16xf16, #flash_tile.swizzled<vector = 8, phases = 2, rowsPerPhase = 3>>)

// -----

// swizzled: runs of rows need a swizzle
// expected-error @+1 {{#flash_tile.swizzled without a swizzle (1 phase) has 1 row a phase, not 4}}
func.func private @f(%a: !flash_tile.shared<2x64x8xf16, #flash_tile.swizzled<vector = 8, phases = 1, rowsPerPhase = 4>>)

// -----

// tile: rank
// expected-error @+1 {{a flash_tile tile is 1-D or 2-D, or a batch of them (3-D at most), not 4-D}}
func.func private @f(%a: !flash_tile.tile<2x2x64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// mma: a 2-D layout holds 2-D tiles
// expected-error @+1 {{#flash_tile.mma holds 2-D tiles, not a tile of 2x64x64}}
func.func private @f(%a: !flash_tile.tile<2x64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// mma: warp counts
// expected-error @+1 {{#flash_tile.mma needs two positive warp counts (rows, columns), or three (batch, rows, columns), not [2, 2, 1, 1]}}
func.func private @f(%a: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [2, 2, 1, 1], instr = [16, 8, 16]>>)

// -----

// mma: a batched layout holds one matrix per batch
// expected-error @+1 {{a batched #flash_tile.mma holds a batch of 4 matrices, a tile of 4x..., not 2x16x32}}
func.func private @f(%a: !flash_tile.tile<2x16x32xf32, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>)

// -----

// mma: a batch's matrices are whole tiles of the matrix layout
// expected-error @+1 {{#flash_tile.mma needs a tile whose extents are multiples of 16x8, not 8x32}}
func.func private @f(%a: !flash_tile.tile<4x8x32xf32, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>)

// -----

// slice: a batched parent keeps its batch
// expected-error @+1 {{#flash_tile.slice removes dimension 1 or 2 of a batched parent (a matrix dimension), not 0}}
func.func private @f(%a: !flash_tile.tile<16x32xf32, #flash_tile.slice<0, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>>)

// -----

// tile: positive extents
// expected-error @+1 {{a tile's extents are positive}}
func.func private @f(%a: !flash_tile.tile<0x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// tile: whole bytes
// expected-error @+1 {{a tile's elements are integers or floats of whole bytes, not 'i1'}}
func.func private @f(%a: !flash_tile.tile<64x64xi1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// tile: a register layout
// expected-error @+1 {{a tile's layout is a flash_tile register layout (mma, operand, slice or blocked), not #flash_tile.swizzled<vector = 8, phases = 8>}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// tile: whole MMA tiles per warp
// expected-error @+1 {{#flash_tile.mma needs a tile whose extents are multiples of 64x8, not 48x64}}
func.func private @f(%a: !flash_tile.tile<48x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// tile: the layout's rank
// expected-error @+1 {{#flash_tile.mma holds 2-D tiles, not a tile of 64}}
func.func private @f(%a: !flash_tile.tile<64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// tile: A operand K
// expected-error @+1 {{an A operand layout needs a tile whose extents are multiples of 64x16, not 64x24}}
func.func private @f(%a: !flash_tile.tile<64x24xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>)

// -----

// tile: B operand N
// expected-error @+1 {{a B operand layout needs a tile whose extents are multiples of 16x8, not 64x4}}
func.func private @f(%a: !flash_tile.tile<64x4xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>)

// -----

// tile: slice rows
// expected-error @+1 {{#flash_tile.slice needs a tile whose extents are multiples of 64, not 32}}
func.func private @f(%a: !flash_tile.tile<32xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>)

// -----

// tile: blocked quanta
// expected-error @+1 {{#flash_tile.blocked needs a tile whose extents are multiples of 16x64, not 8x64}}
func.func private @f(%a: !flash_tile.tile<8x64xf16, #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>>)

// -----

// shared: rank
// expected-error @+1 {{a shared buffer is stages x rows x columns, not 2-D}}
func.func private @f(%a: !flash_tile.shared<64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// shared: a swizzled layout
// expected-error @+1 {{a shared buffer's layout is a #flash_tile.swizzled, not #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>}}
func.func private @f(%a: !flash_tile.shared<2x64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>)

// -----

// shared: chunk bytes
// expected-error @+1 {{a shared buffer's chunk of 8 x 'f32' is 32 bytes; a chunk is 4, 8 or 16 bytes}}
func.func private @f(%a: !flash_tile.shared<2x64x64xf32, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// shared: whole chunks
// expected-error @+1 {{a shared buffer's 60 columns are not a whole number of chunks of 8}}
func.func private @f(%a: !flash_tile.shared<2x64x60xf16, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// shared: phases per row
// expected-error @+1 {{a swizzle of 8 phases needs rows of a multiple of as many chunks; a row has 4}}
func.func private @f(%a: !flash_tile.shared<2x64x32xf16, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// shared: 12 chunks a row would swizzle chunks 8..11 out of it
// expected-error @+1 {{a swizzle of 8 phases needs rows of a multiple of as many chunks; a row has 12}}
func.func private @f(%a: !flash_tile.shared<2x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 8>>)

// -----

// alloc: offset
func.func @f() {
  // expected-error @+1 {{'flash_tile.alloc' op offset 8 is not a non-negative multiple of 16 bytes}}
  %b = flash_tile.alloc {offset = 8} : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// view: element type
func.func @f(%q: !flash_tile.shared<1x64x192xf16>) {
  // expected-error @+1 {{'flash_tile.view' op views a buffer of 'f16' as one of 'bf16'}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x192xf16> to !flash_tile.shared<1x64x128xbf16>
  return
}

// -----

// view: one stage
func.func @f(%k: !flash_tile.shared<2x64x192xf16>) {
  // expected-error @+1 {{'flash_tile.view' op views buffers of one stage; the source has 2 and the view 2}}
  %o = flash_tile.view %k : !flash_tile.shared<2x64x192xf16> to !flash_tile.shared<2x64x128xf16>
  return
}

// -----

// view: rows
func.func @f(%q: !flash_tile.shared<1x64x192xf16>) {
  // expected-error @+1 {{'flash_tile.view' op views the 64 rows of its source as 32}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x192xf16> to !flash_tile.shared<1x32x128xf16>
  return
}

// -----

// view: columns
func.func @f(%q: !flash_tile.shared<1x64x128xf16>) {
  // expected-error @+1 {{'flash_tile.view' op views 192 columns of a source of 128}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x128xf16> to !flash_tile.shared<1x64x192xf16>
  return
}

// -----

// view: the source's placement
func.func @f(%q: !flash_tile.shared<1x64x192xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>>) {
  // expected-error @+1 {{'flash_tile.view' op has the placement none, not its source's #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x192xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>> to !flash_tile.shared<1x64x128xf16>
  return
}

// -----

// view: rows placed without panels
func.func @f(%q: !flash_tile.shared<1x64x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{'flash_tile.view' op views the first 64 of 128 columns of a buffer placed without panels, whose rows these are not}}
  %o = flash_tile.view %q : !flash_tile.shared<1x64x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>> to !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_wait: pending
func.func @f() {
  // expected-error @+1 {{'flash_tile.async_wait' op attribute 'pending' failed to satisfy constraint}}
  flash_tile.async_wait pending -1
  return
}

// -----

// async_copy: element type
func.func @f(%src: memref<?x64xf32>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies 'f16' elements; the source holds 'f32'}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x64xf32>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: static columns
func.func @f(%src: memref<?x?xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op needs a source of 1 to 64 static columns, as the tile has; it has ?}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x?xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: a source no wider than the stage
func.func @f(%src: memref<?x72xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op needs a source of 1 to 64 static columns, as the tile has; it has 72}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x72xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: runs that divide the source's columns
func.func @f(%src: memref<?x59xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies runs of 8 elements, which do not divide the source's 59 columns}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x59xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: an alignment of a power of two from the element's size to 16
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op alignment 32 is not a power of two from the element's 2 bytes to 16}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {alignment = 32} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op alignment 6 is not a power of two from the element's 2 bytes to 16}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {alignment = 6} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: runs no longer than the source's alignment
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies runs of 16 bytes from a source aligned to 8}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {alignment = 8, layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: runs within a row
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies runs within one row: its layout's size is [1, n]}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [2, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: run bytes
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies runs of one element or of 4, 8 or 16 bytes; a run of 3 x 'f16' is 6}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 3], threads = [4, 8], warps = [4, 1]>} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: runs within a chunk
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 4, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op copies runs of 8 elements, longer than the buffer's swizzled chunks of 4}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>} : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 4, phases = 8>>
  return
}

// -----

// async_copy: the layout covers the stage
func.func @f(%src: memref<?x64xf16>, %buf: !flash_tile.shared<2x16x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.async_copy' op #flash_tile.blocked needs a tile whose extents are multiples of 32x64, not 16x64}}
  flash_tile.async_copy %src[%i], %buf[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [8, 1]>} : memref<?x64xf16>, !flash_tile.shared<2x16x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// local_load: element type
func.func @f(%buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %i: index) {
  // expected-error @+1 {{'flash_tile.local_load' op reads 'f16' elements into a tile of 'bf16'}}
  %t = flash_tile.local_load %buf[%i] : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<64x64xbf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// local_load: transposed shape
func.func @f(%buf: !flash_tile.shared<2x64x32xf16, #flash_tile.swizzled<vector = 8, phases = 4>>, %i: index) {
  // expected-error @+1 {{'flash_tile.local_load' op reads a stage of 64x32 into a tile of 64x32, not 32x64}}
  %t = flash_tile.local_load %buf[%i] : !flash_tile.shared<2x64x32xf16, #flash_tile.swizzled<vector = 8, phases = 4>> -> !flash_tile.tile<32x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// convert_layout: shape
func.func @f(%t: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.convert_layout' op changes only the layout}}
  %c = flash_tile.convert_layout %t : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x32xf32, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// mma: accumulator layout
func.func @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf32, #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>>) {
  // expected-error @+1 {{'flash_tile.mma' op accumulates in a #flash_tile.mma layout, not}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf32, #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>>
  return
}

// -----

// mma: A layout
func.func @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.mma' op needs A in #flash_tile.operand<a, }}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// mma: B of the same MMA
func.func @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.mma' op needs B in #flash_tile.operand<b, }}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// mma: shapes chain
func.func @f(%a: !flash_tile.tile<64x32xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.mma' op multiplies 64x32 by 64x64 into 64x64: the shapes do not chain (M x K, K x N, M x N)}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x32xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// mma: operand types
func.func @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xbf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.mma' op multiplies f16 or bf16 operands of one type, not 'f16' and 'bf16'}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xbf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// mma: f32 accumulator
func.func @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %b: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %c: !flash_tile.tile<64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.mma' op accumulates in f32, not 'f16'}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, !flash_tile.tile<64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// reduce: a slice of the source layout
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.reduce' op leaves a #flash_tile.slice of the source's layout}}
  %m = flash_tile.reduce max %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>>
  return
}

// -----

// reduce: shape
func.func @f(%s: !flash_tile.tile<128x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.reduce' op reduces dimension 0 of 128x64 to 64, not 128}}
  %m = flash_tile.reduce sum %s : !flash_tile.tile<128x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<128xf32, #flash_tile.slice<0, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// reduce: element type
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.reduce' op keeps the element type 'f32', not 'f16'}}
  %m = flash_tile.reduce max %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64xf16, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// fold: the same layout
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.fold' op keeps the element type and the layout}}
  %m = flash_tile.fold sum %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x16xf32, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>
  return
}

// -----

// fold: the same element type
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.fold' op keeps the element type and the layout}}
  %m = flash_tile.fold max %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x8xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// fold: the rows, and a divisor of the columns
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.fold' op folds the columns of a tile into a tile of its rows and a divisor of its columns, not 64x64 into 64x24}}
  %m = flash_tile.fold sum %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x24xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// fold: the rows
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.fold' op folds the columns of a tile into a tile of its rows and a divisor of its columns, not 64x64 into 128x8}}
  %m = flash_tile.fold sum %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<128x8xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
  return
}

// -----

// map: inputs broadcast to the result
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, %r: !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>>) {
  // expected-error @+1 {{'flash_tile.map' op input 1 (}}
  %m = flash_tile.map %s, %r : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [2, 2], instr = [16, 8, 16]>>> -> !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> {
  ^bb0(%x: f32, %y: f32):
    flash_tile.yield %x : f32
  }
  return
}

// -----

// map: region arguments
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.map' op 's region takes 2 indices and one element per input (3 arguments), not 1}}
  %m = flash_tile.map indices %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> {
  ^bb0(%x: f32):
    flash_tile.yield %x : f32
  }
  return
}

// -----

// map: index arguments
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.map' op 's region takes the element's indices as index arguments first; argument 0 is 'i32'}}
  %m = flash_tile.map indices %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> {
  ^bb0(%i: i32, %j: index, %x: f32):
    flash_tile.yield %x : f32
  }
  return
}

// -----

// map: element arguments
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.map' op 's region argument 0 is 'f16'; input 0 holds 'f32'}}
  %m = flash_tile.map %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> {
  ^bb0(%x: f16):
    %e = arith.extf %x : f16 to f32
    flash_tile.yield %e : f32
  }
  return
}

// -----

// map: yielded type
func.func @f(%s: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>) {
  // expected-error @+1 {{'flash_tile.map' op 's region yields 'f32'; the result holds 'f16'}}
  %m = flash_tile.map %s : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> -> !flash_tile.tile<64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>> {
  ^bb0(%x: f32):
    flash_tile.yield %x : f32
  }
  return
}

// -----

// store: a 1-D tile is a column
func.func @f(%t: !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, %d: memref<?x64xf32>, %i: index) {
  // expected-error @+1 {{'flash_tile.store' op needs a destination of 1 to 1 static columns, as the tile has; it has 64}}
  flash_tile.store %t, %d[%i] valid %i : !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>, memref<?x64xf32>
  return
}

// -----

// store: columns
func.func @f(%t: !flash_tile.tile<64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, %d: memref<?x128xf16>, %i: index) {
  // expected-error @+1 {{'flash_tile.store' op needs a destination of 1 to 64 static columns, as the tile has; it has 128}}
  flash_tile.store %t, %d[%i] valid %i : !flash_tile.tile<64x64xf16, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, memref<?x128xf16>
  return
}

// -----

// store: element type
func.func @f(%t: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, %d: memref<?x64xf16>, %i: index) {
  // expected-error @+1 {{'flash_tile.store' op copies 'f32' elements; the destination holds 'f16'}}
  flash_tile.store %t, %d[%i] valid %i : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, memref<?x64xf16>
  return
}

// -----

// splat: element type
func.func @f(%x: f16) {
  // expected-error @+1 {{'flash_tile.splat' op failed to verify that the scalar is of the tile's element type}}
  %t = "flash_tile.splat"(%x) : (f16) -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>>
  return
}

// -----

// async_copy: groups of rows that do not divide the stage's rows, with no
// count of valid groups to leave the padding rows out
func.func @f(%src: memref<3x?x64xf16>, %i: index) {
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // expected-error @+1 {{'flash_tile.async_copy' op packs the rows of a source of 3 groups into 64 tile rows, 63 of them the groups'; the others need a count of valid groups (`groups`)}}
  flash_tile.async_copy %src[%i], %q[%i] valid %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>}
      : memref<3x?x64xf16>, !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// async_copy: more valid groups than the source has, with padding rows
func.func @f(%src: memref<3x?x64xf16>, %i: index) {
  %c4 = arith.constant 4 : index
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // expected-error @+1 {{'flash_tile.async_copy' op counts 4 valid groups of a source of 3; its padding rows would be read}}
  flash_tile.async_copy %src[%i], %q[%i] valid %i groups %c4 {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>}
      : memref<3x?x64xf16>, !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// store: more valid groups than the destination has, with padding rows
func.func @f(%t: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, %d: memref<5x?x64xf32>, %i: index) {
  %c6 = arith.constant 6 : index
  // expected-error @+1 {{'flash_tile.store' op counts 6 valid groups of a destination of 5; its padding rows would be written}}
  flash_tile.store %t, %d[%i] valid %i groups %c6 : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, memref<5x?x64xf32>
  return
}

// -----

// store: a dynamic number of groups
func.func @f(%t: !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, %d: memref<?x?x64xf32>, %i: index) {
  // expected-error @+1 {{'flash_tile.store' op packs the rows of a destination of ? groups into 64 tile rows; the groups must be static and at most the rows}}
  flash_tile.store %t, %d[%i] valid %i : !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, memref<?x?x64xf32>
  return
}

// -----

// local_load: a batch splits the stage's rows
#mma = #flash_tile.mma<warps = [3, 1, 1], instr = [16, 8, 16]>
func.func @f(%stage: index) {
  %buf = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // expected-error @+1 {{reads a batch of 3 matrices from a stage of 64 rows, which 3 does not divide}}
  %t = flash_tile.local_load %buf[%stage] : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
      -> !flash_tile.tile<3x16x64xf16, #flash_tile.operand<b, #mma>>
  return
}

// -----

// local_load: each matrix is one block of rows
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
func.func @f(%stage: index) {
  %buf = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // expected-error @+1 {{reads a transposed stage of 64x64 into a tile of 4x64x16, not 4x32x16}}
  %t = flash_tile.local_load %buf[%stage] transpose : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
      -> !flash_tile.tile<4x32x16xf16, #flash_tile.operand<b, #mma>>
  return
}

// -----

// broadcast: the result is a batch of the source
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
func.func @f(%q: !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>) {
  // expected-error @+1 {{a tile of its element type and of shape Bx16x64, not}}
  %b = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>
      -> !flash_tile.tile<4x16x32xf16, #flash_tile.operand<a, #mma>>
  return
}

// -----

// broadcast: the same warps
#flat = #flash_tile.mma<warps = [1, 2], instr = [16, 8, 16]>
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
func.func @f(%q: !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>) {
  // expected-error @+1 {{keeps the tile on its 2 warps; the result's layout spreads it over 4}}
  %b = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>
      -> !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #mma>>
  return
}

// -----

// batch_reduce: of a batched tile
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @f(%s: !flash_tile.tile<64x32xf32, #mma>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{reduces a batched accumulator or slice, not a tile in #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>}}
  %r = flash_tile.batch_reduce sum %s, %buf : !flash_tile.tile<64x32xf32, #mma>,
      !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<32xf32, #flash_tile.slice<0, #mma>>
  return
}

// -----

// batch_reduce: the result is one matrix
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
func.func @f(%s: !flash_tile.tile<4x16x32xf32, #mma>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{of its element type and of shape 16x32, not}}
  %r = flash_tile.batch_reduce sum %s, %buf : !flash_tile.tile<4x16x32xf32, #mma>,
      !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<16x64xf32, #flat>
  return
}

// -----

// batch_reduce: the same warps
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 2], instr = [16, 8, 16]>
func.func @f(%s: !flash_tile.tile<4x16x32xf32, #mma>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{keeps the tile on its 4 warps; the result's layout spreads it over 2}}
  %r = flash_tile.batch_reduce sum %s, %buf : !flash_tile.tile<4x16x32xf32, #mma>,
      !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<16x32xf32, #flat>
  return
}

// -----

// batch_reduce: enough scratch
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
func.func @f(%s: !flash_tile.tile<4x16x64xf32, #mma>, %buf: !flash_tile.shared<1x16x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{needs 16384 bytes of scratch for the batch; the buffer has 2048}}
  %r = flash_tile.batch_reduce sum %s, %buf : !flash_tile.tile<4x16x64xf32, #mma>,
      !flash_tile.shared<1x16x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<16x64xf32, #flat>
  return
}

// -----

// batch_reduce: f32
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
func.func @f(%s: !flash_tile.tile<4x16x32xf16, #mma>, %buf: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>) {
  // expected-error @+1 {{reduces f32 tiles, not 'f16'}}
  %r = flash_tile.batch_reduce sum %s, %buf : !flash_tile.tile<4x16x32xf16, #mma>,
      !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>> -> !flash_tile.tile<16x32xf16, #flat>
  return
}

// -----

// store: 1-D or 2-D
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
func.func @f(%o: !flash_tile.tile<4x16x32xf32, #mma>, %out: memref<?x32xf32>, %row: index, %n: index) {
  // expected-error @+1 {{writes a 1-D or 2-D tile, not 4x16x32 (reduce a batch first)}}
  flash_tile.store %o, %out[%row] valid %n : !flash_tile.tile<4x16x32xf32, #mma>, memref<?x32xf32>
  return
}

// -----

// slice: the parent is an MMA or a 2-D blocked layout
// expected-error @+1 {{#flash_tile.slice's parent is a #flash_tile.mma or a 2-D #flash_tile.blocked layout, not #flash_tile.blocked<size = [4], threads = [32], warps = [1]>}}
func.func @f(%t: !flash_tile.tile<128xf32, #flash_tile.slice<0, #flash_tile.blocked<size = [4], threads = [32], warps = [1]>>>) {
  return
}

// -----

// slice: of a blocked layout, whole runs of the kept dimension
// expected-error @+1 {{#flash_tile.slice needs a tile whose extents are multiples of 4, not 6}}
func.func @f(%t: !flash_tile.tile<6xf32, #flash_tile.slice<1, #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>>>) {
  return
}

// -----

// load: 1-D or 2-D
#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
func.func @f(%src: memref<?x32xf32>, %row: index, %n: index) {
  // expected-error @+1 {{reads a 1-D or 2-D tile, not 4x16x32}}
  %t = flash_tile.load %src[%row] valid %n : memref<?x32xf32> -> !flash_tile.tile<4x16x32xf32, #mma>
  return
}

// -----

// load: columns
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<?x256xf32>, %row: index, %n: index) {
  // expected-error @+1 {{needs a source of 1 to 128 static columns, as the tile has; it has 256}}
  %t = flash_tile.load %src[%row] valid %n : memref<?x256xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: a 1-D tile is a column
#rows = #flash_tile.slice<1, #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>>
func.func @f(%src: memref<?x4xf32>, %row: index, %n: index) {
  // expected-error @+1 {{needs a source of 1 to 1 static columns, as the tile has; it has 4}}
  %t = flash_tile.load %src[%row] valid %n : memref<?x4xf32> -> !flash_tile.tile<4xf32, #rows>
  return
}

// -----

// load: element type
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<?x128xf16>, %row: index, %n: index) {
  // expected-error @+1 {{copies 'f32' elements; the source holds 'f16'}}
  %t = flash_tile.load %src[%row] valid %n : memref<?x128xf16> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: groups that do not divide the tile's rows, with no count of valid
// groups
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<3x?x128xf32>, %row: index, %n: index) {
  // expected-error @+1 {{packs the rows of a source of 3 groups into 4 tile rows, 3 of them the groups'; the others need a count of valid groups (`groups`)}}
  %t = flash_tile.load %src[%row] valid %n : memref<3x?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: more groups than the tile has rows
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<8x?x128xf32>, %row: index, %n: index, %g: index) {
  // expected-error @+1 {{packs the rows of a source of 8 groups into 4 tile rows; the groups must be static and at most the rows}}
  %t = flash_tile.load %src[%row] valid %n groups %g : memref<8x?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: the alignment is a power of two
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<?x128xf32>, %row: index, %n: index) {
  // expected-error @+1 {{alignment 12 is not a power of two of at least the element's 4 bytes}}
  %t = flash_tile.load %src[%row] valid %n {alignment = 12} : memref<?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// store: the alignment is at least the element's size
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @f(%o: !flash_tile.tile<64x32xf32, #mma>, %out: memref<?x32xf32>, %row: index, %n: index) {
  // expected-error @+1 {{alignment 2 is not a power of two of at least the element's 4 bytes}}
  flash_tile.store %o, %out[%row] valid %n {alignment = 2} : !flash_tile.tile<64x32xf32, #mma>, memref<?x32xf32>
  return
}

// -----

// load: valid groups of a 3-D matrix only
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<?x128xf32>, %row: index, %n: index) {
  // expected-error @+1 {{counts valid groups of a 3-D matrix; the matrix is 'memref<?x128xf32>'}}
  %t = flash_tile.load %src[%row] valid %n groups %n : memref<?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: a clamped load needs a valid row to clamp to
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<?x128xf32>, %row: index) {
  %zero = arith.constant 0 : index
  // expected-error @+1 {{clamps its rows to the last of `valid`, which is 0: a clamped load needs at least 1}}
  %t = flash_tile.load %src[%row] valid %zero clamp : memref<?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// load: and a valid group
#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
func.func @f(%src: memref<4x?x128xf32>, %row: index, %n: index) {
  %none = arith.constant -1 : index
  // expected-error @+1 {{clamps its rows to the last of `groups`, which is -1: a clamped load needs at least 1}}
  %t = flash_tile.load %src[%row] valid %n groups %none clamp : memref<4x?x128xf32> -> !flash_tile.tile<4x128xf32, #rows>
  return
}

// -----

// store: valid groups of a 3-D matrix only
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @f(%o: !flash_tile.tile<64x32xf32, #mma>, %out: memref<?x32xf32>, %row: index, %n: index) {
  // expected-error @+1 {{counts valid groups of a 3-D matrix; the matrix is 'memref<?x32xf32>'}}
  flash_tile.store %o, %out[%row] valid %n groups %n : !flash_tile.tile<64x32xf32, #mma>, memref<?x32xf32>
  return
}

// -----

// async_copy: valid groups of a 3-D source only
func.func @f(%src: memref<?x64xf16>, %i: index) {
  %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  // expected-error @+1 {{'flash_tile.async_copy' op counts valid groups of a 3-D source; the source is 'memref<?x64xf16>'}}
  flash_tile.async_copy %src[%i], %q[%i] valid %i groups %i {layout = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>}
      : memref<?x64xf16>, !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// Tiles without layouts (before flash-tile-assign-layouts): shapes and
// element types are still checked.
// mma: ranks
func.func @f(%a: !flash_tile.tile<64x64xf16>, %b: !flash_tile.tile<4x64x64xf16>,
             %c: !flash_tile.tile<64x64xf32>) {
  // expected-error @+1 {{'flash_tile.mma' op multiplies 64x64 by 4x64x64 into 64x64: the tiles are matrices, or batches of as many matrices each}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x64xf16>, !flash_tile.tile<4x64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// mma without layouts: the shapes chain
func.func @f(%a: !flash_tile.tile<64x32xf16>, %b: !flash_tile.tile<64x64xf16>,
             %c: !flash_tile.tile<64x64xf32>) {
  // expected-error @+1 {{'flash_tile.mma' op multiplies 64x32 by 64x64 into 64x64: the shapes do not chain (M x K, K x N, M x N)}}
  %d = flash_tile.mma %a, %b, %c : !flash_tile.tile<64x32xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// reduce without layouts: along the last dimension
func.func @f(%s: !flash_tile.tile<64x32xf32>) {
  // expected-error @+1 {{'flash_tile.reduce' op reduces a tile without a layout along its last dimension, 64x32 to 64, not 32}}
  %m = flash_tile.reduce max %s : !flash_tile.tile<64x32xf32> -> !flash_tile.tile<32xf32>
  return
}

// -----

// map without layouts: an input of the result's shape, or of its rows
func.func @f(%s: !flash_tile.tile<64x32xf32>, %c: !flash_tile.tile<32xf32>) {
  // expected-error @+1 {{'flash_tile.map' op input 1 ('!flash_tile.tile<32xf32>') has neither the result's shape nor its shape without the last dimension}}
  %r = flash_tile.map %s, %c : !flash_tile.tile<64x32xf32>, !flash_tile.tile<32xf32> -> !flash_tile.tile<64x32xf32> {
  ^bb0(%x: f32, %y: f32):
    %z = arith.addf %x, %y : f32
    flash_tile.yield %z : f32
  }
  return
}

// -----

// batch_reduce without layouts: a batch of tiles
#sw = #flash_tile.swizzled<vector = 8, phases = 8>
func.func @f(%s: !flash_tile.tile<4xf32>, %k: !flash_tile.shared<2x64x64xf16, #sw>) {
  // expected-error @+1 {{'flash_tile.batch_reduce' op reduces '!flash_tile.tile<4xf32>' over its batch}}
  %r = flash_tile.batch_reduce max %s, %k : !flash_tile.tile<4xf32>, !flash_tile.shared<2x64x64xf16, #sw> -> !flash_tile.tile<4xf32>
  return
}

// -----

// rescale: the rows of a matrix
func.func @f(%o: !flash_tile.tile<64xf32>, %a: !flash_tile.tile<64xf32>) {
  // expected-error @+1 {{'flash_tile.rescale' op scales the rows of a matrix or a batch of them, not a tile of 64}}
  %r = flash_tile.rescale %o by %a : !flash_tile.tile<64xf32>, !flash_tile.tile<64xf32>
  return
}

// -----

// rescale: f32
func.func @f(%o: !flash_tile.tile<64x64xf16>, %a: !flash_tile.tile<64xf32>) {
  // expected-error @+1 {{'flash_tile.rescale' op scales f32 accumulators by f32 factors, not 'f16' by 'f32'}}
  %r = flash_tile.rescale %o by %a : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64xf32>
  return
}

// -----

// rescale: a factor per row
func.func @f(%o: !flash_tile.tile<64x64xf32>, %a: !flash_tile.tile<32xf32>) {
  // expected-error @+1 {{'flash_tile.rescale' op takes a factor per row of 64x64, a tile of 64, not 32}}
  %r = flash_tile.rescale %o by %a : !flash_tile.tile<64x64xf32>, !flash_tile.tile<32xf32>
  return
}

// -----

// rescale: the factors in the accumulator's row slice
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @f(%o: !flash_tile.tile<64x64xf32, #mma>, %a: !flash_tile.tile<64xf32, #flash_tile.slice<0, #mma>>) {
  // expected-error @+1 {{'flash_tile.rescale' op takes its factors in the #flash_tile.slice of the accumulator's layout without its columns, not #flash_tile.slice<0, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>}}
  %r = flash_tile.rescale %o by %a : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #flash_tile.slice<0, #mma>>
  return
}

// -----

// mma: at most 32 warps (a CTA's 1024 threads); counts that would overflow
// a product are refused, not wrapped.
// expected-error @+1 {{#flash_tile.mma spreads a tile over at most 32 warps (1024 threads), not [4, 9223372036854775807]}}
func.func private @f(%a: !flash_tile.tile<64x32xf32, #flash_tile.mma<warps = [4, 9223372036854775807], instr = [16, 8, 16]>>)

// -----

// blocked: at most 32 warps
// expected-error @+1 {{#flash_tile.blocked spreads a tile over at most 32 warps (1024 threads), not [8, 8]}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [8, 8]>>)

// -----

// blocked: runs of at most 65536 elements a thread
// expected-error @+1 {{#flash_tile.blocked's runs are at most 65536 elements a thread, not [1, 131072]}}
func.func private @f(%a: !flash_tile.tile<64x64xf16, #flash_tile.blocked<size = [1, 131072], threads = [4, 8], warps = [4, 1]>>)

// -----

// tile: at most 2^24 elements
// expected-error @+1 {{a tile holds at most 16777216 elements}}
func.func private @f(%a: !flash_tile.tile<4096x8192xf32>)

// -----

// shared: at most 2^24 elements
// expected-error @+1 {{a shared buffer holds at most 16777216 elements}}
func.func private @f(%a: !flash_tile.shared<2x4096x4096xf16>)

// -----

// swizzled: padding of at most 16 chunks
// expected-error @+1 {{#flash_tile.swizzled pads a row by at most 16 chunks, not 256 elements}}
func.func private @f(%a: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 256>>)

// -----

// A from a buffer needs its stage.
func.func @wgmma_no_a_stage(%q: !flash_tile.shared<1x64x64xf16>, %k: !flash_tile.shared<2x64x64xf16>,
                            %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads A from a shared buffer, which needs a stage}}
  %0 = "flash_tile.warpgroup_mma"(%q, %k, %s, %acc) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 1>}>
      : (!flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, index, !flash_tile.tile<64x64xf32>) -> !flash_tile.tile<64x64xf32>
  return
}

// -----

func.func @wgmma_tile_a_stage(%p: !flash_tile.tile<64x64xf16>, %k: !flash_tile.shared<2x64x64xf16>,
                              %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op takes A from registers, which have no stage}}
  %0 = "flash_tile.warpgroup_mma"(%p, %s, %k, %s, %acc) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (!flash_tile.tile<64x64xf16>, index, !flash_tile.shared<2x64x64xf16>, index, !flash_tile.tile<64x64xf32>) -> !flash_tile.tile<64x64xf32>
  return
}

// -----

func.func @wgmma_batch(%p: !flash_tile.tile<2x64x64xf16>, %k: !flash_tile.shared<2x64x64xf16>,
                       %acc: !flash_tile.tile<2x64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op multiplies matrices: the accumulator is 2x64x64 and A 2x64x64}}
  %0 = flash_tile.warpgroup_mma %p, %k[%s], %acc
      : !flash_tile.tile<2x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<2x64x64xf32>
  return
}

// -----

// B as stored is K x N (64 x 64): A's 32 columns do not chain.
func.func @wgmma_chain(%p: !flash_tile.tile<64x32xf16>, %v: !flash_tile.shared<2x64x64xf16>,
                       %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op multiplies 64x32 by 64x64 into 64x64: the shapes do not chain (M x K, K x N, M x N)}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x32xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// 32 rows: less than a warpgroup's 64.
func.func @wgmma_rows(%p: !flash_tile.tile<32x64xf16>, %v: !flash_tile.shared<2x64x64xf16>,
                      %acc: !flash_tile.tile<32x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op multiplies 32 x 64 by 64 x 64: a warpgroup's instruction is m64nNk16, so M is a multiple of 64, N of 8 up to 256, K of 16}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<32x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<32x64xf32>
  return
}

// -----

func.func @wgmma_types(%p: !flash_tile.tile<64x64xbf16>, %v: !flash_tile.shared<2x64x64xf16>,
                       %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op multiplies f16 or bf16 operands of one type, not 'bf16' and 'f16'}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xbf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  return
}

// -----

func.func @wgmma_acc_type(%p: !flash_tile.tile<64x64xf16>, %v: !flash_tile.shared<2x64x64xf16>,
                          %acc: !flash_tile.tile<64x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op accumulates in f32, not 'f16'}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf16>
  return
}

// -----

// Rows of 24 f16 (48 bytes): not whole rows of a 128-, 64- or 32-byte swizzle.
func.func @wgmma_row_bytes(%p: !flash_tile.tile<64x64xf16>, %v: !flash_tile.shared<2x64x24xf16>,
                           %acc: !flash_tile.tile<64x24xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads B from rows of whole rows of the tensor cores' 128-, 64- or 32-byte swizzle, not 24 x 2 bytes}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x24xf16>, !flash_tile.tile<64x24xf32>
  return
}

// -----

// Rows of 256 bytes swizzled whole, not in panels of 128 bytes.
func.func @wgmma_panels(%p: !flash_tile.tile<64x64xf16>,
                        %v: !flash_tile.shared<2x64x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>>,
                        %acc: !flash_tile.tile<64x128xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads B swizzled in 16-byte chunks over 8 rows of 128 bytes without padding, in panels of the swizzle's row where rows are wider, not #flash_tile.swizzled<vector = 8, phases = 8>}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, !flash_tile.tile<64x128xf32>
  return
}

// -----

// A padded placement is not the swizzle.
func.func @wgmma_placement(%p: !flash_tile.tile<64x64xf16>,
                           %v: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>>,
                           %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads B swizzled in 16-byte chunks over 8 rows of 128 bytes without padding, in panels of the swizzle's row where rows are wider, not #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// Phases in runs of rows over 16 rows are none of the tensor cores' swizzles.
func.func @wgmma_runs(%p: !flash_tile.tile<64x64xf16>,
                      %v: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>>,
                      %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads B swizzled in 16-byte chunks over 8 rows of 128 bytes without padding, in panels of the swizzle's row where rows are wider, not #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// The 64-byte swizzle's phases over rows of 128 bytes without panels of 64.
func.func @wgmma_narrow_swizzle(%p: !flash_tile.tile<64x64xf16>,
                      %v: !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 4, rowsPerPhase = 2>>,
                      %acc: !flash_tile.tile<64x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op reads B swizzled in 16-byte chunks over 8 rows of 128 bytes without padding, in panels of the swizzle's row where rows are wider, not #flash_tile.swizzled<vector = 8, phases = 4, rowsPerPhase = 2>}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 4, rowsPerPhase = 2>>, !flash_tile.tile<64x64xf32>
  return
}

// -----

// 32 rows per warp: the warps of a warpgroup do not hold its 64 rows.
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @wgmma_layout(%p: !flash_tile.tile<128x64xf16, #flash_tile.operand<a, #mma>>,
                        %v: !flash_tile.shared<2x64x64xf16>,
                        %acc: !flash_tile.tile<128x64xf32, #mma>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op accumulates in a #flash_tile.mma layout of 16 rows per warp, whole warpgroups of row warps and one column warp, not #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]> for 128 rows}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<128x64xf16, #flash_tile.operand<a, #mma>>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<128x64xf32, #mma>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
func.func @wgmma_a_layout(%p: !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #mma>>,
                          %v: !flash_tile.shared<2x64x64xf16>,
                          %acc: !flash_tile.tile<64x64xf32, #mma>, %s: index) {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op needs A in #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>, not #flash_tile.operand<b, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>}}
  %0 = flash_tile.warpgroup_mma %p, %v[%s], %acc
      : !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #mma>>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32, #mma>
  return
}

// -----

// expected-error @+1 {{#flash_tile.swizzled's panel is a power of two of whole chunks, a multiple of the phases' chunks, without padding; not 48 elements (vector 8, phases 8, padding 0)}}
func.func private @f(%a: !flash_tile.shared<1x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 48>>)

// -----

// expected-error @+1 {{a shared buffer's 96 columns are not a whole number of panels of 64}}
func.func private @f(%a: !flash_tile.shared<1x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>>)

// -----

// tma_load: a box of 1 to 5 dimensions, one coordinate each

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies a box of 1 to 5 dimensions, not 6}}
  flash_tile.tma_load %map[%s, %s, %s, %s, %s, %s], %k[%s] box [64, 128, 1, 1, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op addresses a box of 4 dimensions with 3 coordinates}}
  flash_tile.tma_load %map[%s, %s, %s], %k[%s] box [64, 128, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op has a box dimension of 512; a TMA box spans 1 to 256 elements a dimension}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [64, 512]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf32>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies f16 or bf16 elements, not 'f32'}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [32, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf32>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies boxes of rows of 32, 64 or 128 bytes (a swizzle's row); a row of 24 x 'f16' is 48}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [24, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies boxes of 64 rows into stages of 128}}
  flash_tile.tma_load %map[%s, %s, %s], %k[%s] box [64, 32, 2]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16>
  return
}

// -----

// A box of 3 groups of a 128-row stage moves 3 x 42 rows, not 3 x 41.
func.func @f(%map: !llvm.ptr, %q: !flash_tile.shared<1x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies boxes of 123 rows into stages of 128}}
  flash_tile.tma_load %map[%s, %s, %s], %q[%s] box [64, 41, 3]
      : !llvm.ptr, !flash_tile.shared<1x128x64xf16>
  return
}

// -----

// ... nor 2 batch entries of 3 x 42 rows (252 rows, past the stage).
func.func @f(%map: !llvm.ptr, %q: !flash_tile.shared<1x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies boxes of 252 rows into stages of 128}}
  flash_tile.tma_load %map[%s, %s, %s, %s], %q[%s] box [64, 42, 3, 2]
      : !llvm.ptr, !flash_tile.shared<1x128x64xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x96xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op copies boxes of 64 columns, which do not divide the stage's 96}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [64, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x96xf16>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op fills a buffer of #flash_tile.swizzled<vector = 8, phases = 8>, not the 128-byte swizzle of 16-byte chunks over 8 rows of 128 bytes, in rows of the 64 elements that the copy moves}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [64, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

// Boxes of 64-byte rows into a buffer of the 128-byte swizzle.
func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op fills a buffer of #flash_tile.swizzled<vector = 8, phases = 8>, not the 64-byte swizzle of 16-byte chunks over 8 rows of 128 bytes, in rows of the 32 elements that the copy moves}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [32, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
  return
}

// -----

func.func @f(%map: !llvm.ptr, %k: !flash_tile.shared<2x128x64xf16, #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op fills a buffer of #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>, not the 128-byte swizzle of 16-byte chunks over 8 rows of 128 bytes, in rows of the 64 elements that the copy moves}}
  flash_tile.tma_load %map[%s, %s], %k[%s] box [64, 128]
      : !llvm.ptr, !flash_tile.shared<2x128x64xf16, #flash_tile.swizzled<vector = 8, phases = 8, rowsPerPhase = 2>>
  return
}

// -----

func.func @f(%map: i64, %k: !flash_tile.shared<2x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_load' op operand #0 must be the address of a tensor map, but got 'i64'}}
  "flash_tile.tma_load"(%map, %s, %s, %k, %s) <{box = array<i64: 64, 128>}>
      : (i64, index, index, !flash_tile.shared<2x128x64xf16>, index) -> ()
  return
}

// -----

// tma_store: the box rules of tma_load

func.func @f(%map: !llvm.ptr, %o: !flash_tile.shared<1x128x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.tma_store' op copies boxes of 64 rows into stages of 128}}
  flash_tile.tma_store %o[%s], %map[%s, %s] box [64, 64]
      : !flash_tile.shared<1x128x64xf16>, !llvm.ptr
  return
}

// -----

// local_store: the tile is a stage of the buffer

func.func @f(%t: !flash_tile.tile<64x64xf32>, %o: !flash_tile.shared<1x64x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.local_store' op writes a tile of 'f32' into a buffer of 'f16'}}
  flash_tile.local_store %t, %o[%s] : !flash_tile.tile<64x64xf32>, !flash_tile.shared<1x64x64xf16>
  return
}

// -----

func.func @f(%t: !flash_tile.tile<64x32xf16>, %o: !flash_tile.shared<1x64x64xf16>, %s: index) {
  // expected-error @+1 {{'flash_tile.local_store' op writes a tile of 64x32 into stages of 64x64}}
  flash_tile.local_store %t, %o[%s] : !flash_tile.tile<64x32xf16>, !flash_tile.shared<1x64x64xf16>
  return
}

// -----

// warp_specialize: whole consumer warpgroups, setmaxnreg's register counts,
// the SM's registers, a producer region that only copies and waits

func.func @f() {
  // expected-error @+1 {{'flash_tile.warp_specialize' op has 192 consumer threads, not whole warpgroups of 128}}
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 192, registers 240) {
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'flash_tile.warp_specialize' op gives the producer threads 20 registers; setmaxnreg sets a multiple of 8 from 24 to 256}}
  flash_tile.warp_specialize producer(registers 20) {
  } consumers(threads 256, registers 240) {
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'flash_tile.warp_specialize' op gives the consumer threads 244 registers; setmaxnreg sets a multiple of 8 from 24 to 256}}
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 244) {
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'flash_tile.warp_specialize' op allots 68608 registers (24 x 128 producer and 256 x 256 consumer threads), more than an SM's 65536}}
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 256) {
  }
  return
}

// -----

func.func @f(%k: !flash_tile.shared<2x64x64xf16>, %s: index) {
  flash_tile.warp_specialize producer(registers 24) {
    // expected-error @+1 {{'flash_tile.local_load' op is in a producer region, which only copies (flash_tile.tma_load) and waits for free stages (flash_tile.stage_acquire)}}
    %t = flash_tile.local_load %k[%s] : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
  } consumers(threads 256, registers 240) {
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.warp_specialize' op is nested in another flash_tile.warp_specialize}}
    flash_tile.warp_specialize producer(registers 24) {
    } consumers(threads 128, registers 240) {
    }
  }
  return
}

// -----

// stage_acquire and stage_release: in the producer and the consumer region

func.func @f(%k: !flash_tile.shared<2x64x64xf16>, %s: index, %p: i1) {
  // expected-error @+1 {{'flash_tile.stage_acquire' op is not in the producer region of a flash_tile.warp_specialize, whose consumers release the stages it waits for}}
  flash_tile.stage_acquire %k[%s], %p : !flash_tile.shared<2x64x64xf16>
  return
}

// -----

func.func @f(%k: !flash_tile.shared<2x64x64xf16>, %s: index, %p: i1) {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.stage_acquire' op is not in the producer region of a flash_tile.warp_specialize}}
    flash_tile.stage_acquire %k[%s], %p : !flash_tile.shared<2x64x64xf16>
  }
  return
}

// -----

func.func @f(%k: !flash_tile.shared<2x64x64xf16>, %s: index) {
  flash_tile.warp_specialize producer(registers 24) {
    // expected-error @+1 {{'flash_tile.stage_release' op is not in the consumer region of a flash_tile.warp_specialize, whose producer waits for the stages it releases}}
    flash_tile.stage_release %k[%s] : !flash_tile.shared<2x64x64xf16>
  } consumers(threads 256, registers 240) {
  }
  return
}

// -----

// warpgroup_mma async: its one use is its wait, in its block

func.func @f(%q: !flash_tile.shared<1x64x64xf16>, %k: !flash_tile.shared<2x64x64xf16>,
             %acc: !flash_tile.tile<64x64xf32>, %s: index) -> !flash_tile.tile<64x64xf32> {
  // expected-error @+1 {{'flash_tile.warpgroup_mma' op is async: its one use is the flash_tile.warpgroup_wait of its result, in its block}}
  %r = flash_tile.warpgroup_mma %q[%s], %k[%s] transpose, %acc async
      : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  return %r : !flash_tile.tile<64x64xf32>
}

// -----

// warpgroup_wait: of an async multiply, leaving pending no more than started
// after it

func.func @f(%acc: !flash_tile.tile<64x64xf32>) -> !flash_tile.tile<64x64xf32> {
  // expected-error @+1 {{'flash_tile.warpgroup_wait' op waits for a value that is not the result of an async flash_tile.warpgroup_mma in its block}}
  %r = flash_tile.warpgroup_wait %acc pending 0 : !flash_tile.tile<64x64xf32>
  return %r : !flash_tile.tile<64x64xf32>
}

// -----

func.func @f(%q: !flash_tile.shared<1x64x64xf16>, %k: !flash_tile.shared<2x64x64xf16>,
             %acc: !flash_tile.tile<64x64xf32>, %s: index) -> !flash_tile.tile<64x64xf32> {
  %r = flash_tile.warpgroup_mma %q[%s], %k[%s] transpose, %acc async
      : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
  // expected-error @+1 {{'flash_tile.warpgroup_wait' op leaves 1 multiplies pending, but only 0 started after the one it waits for}}
  %w = flash_tile.warpgroup_wait %r pending 1 : !flash_tile.tile<64x64xf32>
  return %w : !flash_tile.tile<64x64xf32>
}

// -----

// turn_wait and turn_pass: a turn of two or more consumer warpgroups, in
// one block, holding only what never waits for another warpgroup

func.func @f() {
  // expected-error @+1 {{'flash_tile.turn_wait' op is not in the consumer region of a flash_tile.warp_specialize, whose warpgroups take the turns}}
  flash_tile.turn_wait
  flash_tile.turn_pass
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
    // expected-error @+1 {{'flash_tile.turn_wait' op is not in the consumer region}}
    flash_tile.turn_wait
    flash_tile.turn_pass
  } consumers(threads 256, registers 240) {
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 128, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op takes turns among 1 consumer warpgroup; turns need two or more}}
    flash_tile.turn_wait
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 1920, registers 24) {
    // expected-error @+1 {{'flash_tile.turn_wait' op takes turns among 15 consumer warpgroups, more than the 14 named barriers left for them}}
    flash_tile.turn_wait
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that no flash_tile.turn_pass after it in its block ends}}
    flash_tile.turn_wait
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that another flash_tile.turn_wait begins again before its flash_tile.turn_pass}}
    flash_tile.turn_wait
    flash_tile.turn_wait
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that holds 'flash_tile.barrier'; a turn holds only warpgroup MMAs, their waits, stage releases and ops without regions or memory effects, which never wait for a warpgroup waiting for the turn}}
    flash_tile.turn_wait
    flash_tile.barrier
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f(%k: !flash_tile.shared<2x64x64xf16>, %s: index, %p: i1) {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that holds 'flash_tile.stage_wait'}}
    flash_tile.turn_wait
    flash_tile.stage_wait %k[%s], %p : !flash_tile.shared<2x64x64xf16>
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that holds 'flash_tile.async_wait'}}
    flash_tile.turn_wait
    flash_tile.async_wait pending 0
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f(%p: i1) {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_wait' op begins a turn that holds 'scf.if'}}
    flash_tile.turn_wait
    scf.if %p {
    }
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    // expected-error @+1 {{'flash_tile.turn_pass' op ends no turn: no flash_tile.turn_wait before it in its block since the last flash_tile.turn_pass}}
    flash_tile.turn_pass
  }
  return
}

// -----

func.func @f() {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    flash_tile.turn_wait
    flash_tile.turn_pass
    // expected-error @+1 {{'flash_tile.turn_pass' op ends no turn}}
    flash_tile.turn_pass
  }
  return
}
