// RUN: split-file %s %t
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=MHA
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts --flash-tile-allocate-shared \
// RUN:     --flash-tile-to-nvgpu | FileCheck %s --check-prefix=LOWERED
// Tiles for wide warps (flash-tile's wide-warps, as the GPU pipeline sets
// it): 128 rows, 4 warps of 32.
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80 wide-warps=1" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=WIDE
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=GQA
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile=causal-order=heaviest --flash-tile-assign-layouts \
// RUN:   | FileCheck %s --check-prefix=HEAVY
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile=causal-order=heaviest-per-head --flash-tile-assign-layouts \
// RUN:   | FileCheck %s --check-prefix=PER-HEAD
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=AUTO
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | not flashc-opt --flash-to-tile="causal-order=middle" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ORDER
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | flashc-opt --flash-to-tile=stages=3 --flash-tile-assign-layouts | FileCheck %s --check-prefix=STAGES
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80" --flash-split-kv="target=sm_80" \
// RUN:   --flash-causal-skip --canonicalize \
// RUN:   | not flashc-opt --flash-to-tile=stages=5 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-STAGES
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4 block-kv=128" \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=DECODE
// RUN: flashc-opt %t/decode-causal.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4 block-kv=128" \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=DECODE-CAUSAL
// RUN: flashc-opt %t/gqa3.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts | FileCheck %s --check-prefix=GQA3
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80 block-q=40" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOT-BUILT
// RUN: flashc-opt %t/gqa3.mlir --flash-attention-pipeline="target=sm_80 block-q=20" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOT-BUILT-GQA

// flash-to-tile: the forward kernel's body as flash_tile ops, with the
// layouts flash-tile-assign-layouts gives it. The MHA and GQA runs take
// 16-row warps (flash-tile without wide-warps, 64-row tiles): 4 warps
// stacked over the 64 query rows, 16-byte copies, swizzled buffers.

//--- mha.mlir
func.func @mha(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
               %v: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}

// MHA-DAG: #blocked = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
// MHA-DAG: #mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// MHA-LABEL: gpu.func @mha_fwd(
// The Q tile and two stages of 128-key K and V blocks (the schedule's;
// flash-tile-pipeline uses them).
// MHA: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
// MHA: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x128x64xf16>
// MHA: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<2x128x64xf16>
// Rows of Q and K come from the kernel's flat buffers as strided matrices.
// MHA: flash_tile.async_copy %{{.+}}[%{{.+}}], %[[QS]][%{{.+}}] valid %{{.+}} {layout = #blocked} : memref<?x64xf16, strided<[?, 1], offset: ?>>, !flash_tile.shared<1x64x64xf16>
// MHA-NEXT: flash_tile.async_wait pending 0
// MHA: %[[Q:.+]] = flash_tile.local_load %[[QS]][%{{.+}}] : !flash_tile.shared<1x64x64xf16> -> !flash_tile.tile<64x64xf16, #mma_a>
// The KV loop carries O, the row maxima and the row sums (each thread's
// partial sums, 8 columns of the accumulator layout).
// MHA: scf.for %[[J:[^ ]+]] = {{.+}} -> (!flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #slice>, !flash_tile.tile<64x8xf32, #mma>) {
// Its block's copies first, into stage 0: a full block's with a constant
// count (no per-row checks), a ragged one's with the keys left; then the
// wait for them.
// MHA: scf.if
// MHA: %[[LEFT:.+]] = arith.subi %{{.+}}, %[[J]]
// MHA: %[[FULL:.+]] = arith.cmpi sge, %[[LEFT]], %c128{{.*}} : index
// MHA: scf.if %[[FULL]] {
// MHA: flash_tile.async_copy %{{.+}}[%[[J]]], %[[KS]][%[[C0:.+]]] valid %c128
// MHA: flash_tile.async_copy %{{.+}}[%[[J]]], %[[VS]][%[[C0]]] valid %c128
// MHA: } else {
// MHA-NEXT: flash_tile.async_copy %{{.+}}, %[[KS]][%[[C0]]] valid %[[LEFT]]
// MHA-NEXT: flash_tile.async_copy %{{.+}}, %[[VS]][%[[C0]]] valid %[[LEFT]]
// MHA: flash_tile.async_wait pending 0
// MHA: %[[KT:.+]] = flash_tile.local_load %[[KS]][%[[C0]]] transpose : !flash_tile.shared<2x128x64xf16> -> !flash_tile.tile<64x128xf16, #mma_b>
// MHA: %[[S:.+]] = flash_tile.mma %[[Q]], %[[KT]], %{{.+}} : !flash_tile.tile<64x64xf16, #mma_a>, !flash_tile.tile<64x128xf16, #mma_b>, !flash_tile.tile<64x128xf32, #mma>
// A partial block's keys past the valid ones are -inf.
// MHA: scf.if %{{.+}} -> (!flash_tile.tile<64x128xf32, #mma>)
// MHA: flash_tile.map indices %[[S]]
// MHA: arith.cmpi slt
// MHA: arith.select
// MHA: flash_tile.reduce max
// The maximum moves where the block's, times the scale, is more than 8
// above it. The exponent: one FMA of the unscaled score with the scale.
// MHA: arith.cmpf ogt
// MHA: math.fma
// MHA-NEXT: math.exp2
// The row sums: each thread folds its own columns; no reduction in the
// loop.
// MHA-NOT: flash_tile.reduce sum
// MHA: flash_tile.fold sum %{{.+}} : !flash_tile.tile<64x128xf32, #mma> -> !flash_tile.tile<64x8xf32, #mma>
// MHA-NOT: flash_tile.reduce sum
// MHA: %[[P:.+]] = flash_tile.convert_layout %{{.+}} : !flash_tile.tile<64x128xf16, #mma> -> !flash_tile.tile<64x128xf16, #mma_a>
// MHA: %[[V:.+]] = flash_tile.local_load %[[VS]][%[[C0]]] : !flash_tile.shared<2x128x64xf16> -> !flash_tile.tile<128x64xf16, #mma_b>
// MHA: flash_tile.mma %[[P]], %[[V]]
// Everyone is done with the stage before the next block's copies.
// MHA-NEXT: flash_tile.async_wait pending 0
// MHA-NEXT: scf.yield
// MHA-NEXT: } {flash.kv_loop}
// The epilogue: the row sums reduced across the quads once, O / l in f16,
// stored by rows.
// MHA: flash_tile.reduce sum %{{.+}} : !flash_tile.tile<64x8xf32, #mma> -> !flash_tile.tile<64xf32, #slice>
// MHA: flash_tile.store %{{.+}}, %{{.+}}[%{{.+}}] valid %{{.+}} : !flash_tile.tile<64x64xf16, #mma>, memref<?x64xf16, strided<[?, 1], offset: ?>>
// MHA: gpu.return

// Wide warps: the same MMA layout over 128 rows gives each of the 4 warps
// two 16-row tiles (8 row tiles, 128 threads); blocks of 64 keys.
// WIDE-DAG: #mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// WIDE-LABEL: gpu.func @mha_fwd(
// WIDE-SAME: flash.block = 128 : i64
// WIDE-SAME: flash.grid_factor<ceildiv(Nq, 128)>
// WIDE-SAME: flash.tile = array<i64: 1, 128, 64, 8, 1>
// WIDE: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x128x64xf16>
// WIDE: flash_tile.async_wait pending 0
// WIDE: %[[Q:.+]] = flash_tile.local_load %[[QS]][%{{.+}}] : !flash_tile.shared<1x128x64xf16> -> !flash_tile.tile<128x64xf16, #mma_a>
// WIDE: scf.for {{.+}} -> (!flash_tile.tile<128x64xf32, #mma>
// WIDE: flash_tile.local_load %{{.+}} transpose : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16, #mma_b>
// WIDE-NEXT: flash_tile.mma %[[Q]]

// After allocation and lowering, no flash_tile op is left.
// LOWERED-LABEL: gpu.func @mha_fwd(
// LOWERED-SAME: flash.shared_bytes = 73728 : i64
// LOWERED-NOT: flash_tile.
// LOWERED: nvvm.cp.async.shared.global
// LOWERED: nvgpu.ldmatrix
// LOWERED: nvgpu.mma.sync
// LOWERED: gpu.shuffle  xor
// LOWERED-NOT: flash_tile.
// LOWERED: gpu.return

//--- gqa.mlir
func.func @gqa(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
               %v: tensor<?x2x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x8x?x64xf16>
  return %o : tensor<?x8x?x64xf16>
}
// A GQA tile packs the 16-row Q tiles of the group's 4 heads: Q and O are
// 3-D matrices of 4 groups of rows, and the causal mask takes the row
// within its head.
// GQA-LABEL: gpu.func @gqa_fwd(
// GQA: flash_tile.async_copy %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}] valid %{{.+}} {layout = #blocked} : memref<4x?x64xf16, strided<[?, ?, 1], offset: ?>>, !flash_tile.shared<1x64x64xf16>
// The unmasked loop's partial blocks, then the diagonal loop's.
// GQA: flash_tile.map indices
// GQA: flash_tile.map indices
// GQA-NEXT: ^bb0(%[[ROW:[a-z0-9]+]]: index, %{{.+}}: index, %{{.+}}: f32):
// GQA-NEXT: %[[C16:.+]] = arith.constant 16 : index
// GQA-NEXT: arith.remui %[[ROW]], %[[C16]]
// GQA: flash_tile.store %{{.+}} : !flash_tile.tile<64x64xf16, #mma>, memref<4x?x64xf16, strided<[?, ?, 1], offset: ?>>

// A causal kernel's CTAs heaviest first: the block index's slowest part
// is the Q block, counted down from the last (which sees the most keys);
// the batch and head vary fastest.
// HEAVY-LABEL: gpu.func @gqa_fwd(
// HEAVY: %[[BID:.+]] = gpu.block_id  x
// HEAVY: arith.remui %[[BID]], %c2
// HEAVY: %[[BH:.+]] = arith.divui %[[BID]], %c2
// HEAVY: %[[QB:.+]] = arith.divui %[[BH]], %{{.+}}
// HEAVY: %[[LAST:.+]] = arith.subi %{{.+}}, %c1
// HEAVY: arith.subi %[[LAST]], %[[QB]]
// Heaviest per head: the Q block varies fastest, counted down from the
// last.
// PER-HEAD-LABEL: gpu.func @gqa_fwd(
// PER-HEAD: %[[BID:.+]] = gpu.block_id  x
// PER-HEAD: %[[QB:.+]] = arith.remui %[[BID]], %[[NQ:.+]] : index
// PER-HEAD: %[[LAST:.+]] = arith.subi %[[NQ]], %c1
// PER-HEAD: arith.subi %[[LAST]], %[[QB]]
// Auto (the default): both orders, heaviest where the head's Q blocks of
// 16 rows make 2048 rows or more, chosen per launch.
// AUTO-LABEL: gpu.func @gqa_fwd(
// AUTO: %[[BID:.+]] = gpu.block_id  x
// AUTO: %[[LQB:.+]] = arith.remui %[[BID]], %[[NQ:[0-9]+]] : index
// AUTO: %[[LAST:.+]] = arith.subi %[[NQ]], %c1
// AUTO-NEXT: %[[DOWN:.+]] = arith.subi %[[LAST]], %{{.+}} : index
// AUTO: %[[ROWS:.+]] = arith.muli %[[NQ]], %c16{{.*}} : index
// AUTO: %[[C2048:.+]] = arith.constant 2048 : index
// AUTO: %[[FIRST:.+]] = arith.cmpi uge, %[[ROWS]], %[[C2048]]
// AUTO: arith.select %[[FIRST]], %[[DOWN]], %[[LQB]] : index
// BAD-ORDER: error: flash-to-tile: causal-order is auto, lightest, heaviest or heaviest-per-head, not 'middle'

// The stages option sizes the K and V buffers (flash-tile-pipeline then
// pipelines over them); 2 to 4.
// STAGES-LABEL: gpu.func @mha_fwd(
// STAGES: flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
// STAGES-NEXT: flash_tile.alloc : !flash_tile.shared<3x128x64xf16>
// STAGES-NEXT: flash_tile.alloc : !flash_tile.shared<3x128x64xf16>
// BAD-STAGES: error: flash-to-tile: stages is 2 to 4, not 5

//--- decode.mlir
func.func @decode(%q: tensor<?x4x?x64xf16>, %k: tensor<?x1x?x64xf16>,
                  %v: tensor<?x1x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x4x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
      -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}
// A decode tile: 16 rows (4 queries of 4 heads), 4 kv warps sharing each
// 128-key block. The loop runs on batches of 4 matrices, one per kv warp
// (32 keys each), with Q broadcast to them; after it, the warps' row
// maxima, weighted sums and accumulators meet through the K buffer, into
// tiles whose columns the kv warps share. The combine kernel follows.
// DECODE-DAG: #[[FLAT:.+]] = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
// DECODE-DAG: #[[BATCH:.+]] = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
// DECODE-DAG: #[[ROWS:.+]] = #flash_tile.slice<2, #[[BATCH]]>
// DECODE-DAG: #[[FLATROWS:.+]] = #flash_tile.slice<1, #[[FLAT]]>
// DECODE-DAG: #[[CTILE:.+]] = #flash_tile.blocked<size = [1, 4], threads = [2, 16], warps = [2, 1]>
// DECODE-DAG: #[[CROWS:.+]] = #flash_tile.slice<1, #[[CTILE]]>
// DECODE-LABEL: gpu.func @decode_fwd(
// DECODE-SAME: flash.final_at_one_split
// DECODE: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x128x64xf16>
// DECODE: %[[Q:.+]] = flash_tile.local_load {{.+}} -> !flash_tile.tile<16x64xf16,
// DECODE: %[[QB:.+]] = flash_tile.broadcast %[[Q]] : {{.+}} -> !flash_tile.tile<4x16x64xf16,
// DECODE: scf.for {{.+}} -> (!flash_tile.tile<4x16x64xf32, #[[BATCH]]>, !flash_tile.tile<4x16xf32, #[[ROWS]]>, !flash_tile.tile<4x16x8xf32, #[[BATCH]]>)
// DECODE: flash_tile.local_load %[[KS]][%{{.+}}] transpose : !flash_tile.shared<2x128x64xf16> -> !flash_tile.tile<4x64x32xf16,
// DECODE: flash_tile.mma %[[QB]]
// The mask's key: the kv warp's 32 keys, then the column.
// DECODE: flash_tile.map indices
// DECODE-NEXT: ^bb0(%[[W:[a-z0-9]+]]: index, %{{.+}}: index, %[[COL:[a-z0-9]+]]: index, %{{.+}}: f32):
// DECODE: %[[C32:.+]] = arith.constant 32 : index
// DECODE-NEXT: %[[BASE:.+]] = arith.muli %[[W]], %[[C32]]
// DECODE-NEXT: arith.addi %[[BASE]], %[[COL]]
// DECODE: flash_tile.reduce max %{{.+}} -> !flash_tile.tile<4x16xf32, #[[ROWS]]>
// DECODE: %[[M:.+]] = flash_tile.batch_reduce max %{{.+}}, %[[KS]] : {{.+}} -> !flash_tile.tile<16xf32, #[[FLATROWS]]>
// DECODE: flash_tile.broadcast %[[M]]
// DECODE: flash_tile.batch_reduce sum %{{.+}}, %[[KS]] : {{.+}} -> !flash_tile.tile<16xf32, #[[FLATROWS]]>
// DECODE: flash_tile.batch_reduce sum %{{.+}}, %[[KS]] : {{.+}} -> !flash_tile.tile<16x64xf32, #[[FLAT]]>
// Launched with one split, the kernel writes the output itself (in f16,
// where the combine would); otherwise f32 partials and their
// log-sum-exps.
// DECODE: %[[ONE:.+]] = arith.cmpi eq, %{{.+}}, %c1
// DECODE-NEXT: scf.if %[[ONE]] {
// DECODE: flash_tile.store %{{.+}} : !flash_tile.tile<16x64xf16, #[[FLAT]]>, memref<4x?x64xf16
// DECODE: } else {
// DECODE: flash_tile.store %{{.+}} : !flash_tile.tile<16x64xf32, #[[FLAT]]>, memref<4x?x64xf32
// DECODE: flash_tile.store %{{.+}} : !flash_tile.tile<16xf32, #[[FLATROWS]]>, memref<4x?x1xf32
// The combine: a CTA of four rows (one query row of each of the 4 heads),
// two warps of two rows, 16 lanes over each row's 64 columns; one online
// pass over the splits: the running maximum and sum of the log-sum-exps
// and the rescaled sum of the partials.
// DECODE-LABEL: gpu.func @decode_combine(
// DECODE-SAME: flash.block = 64 : i64, flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<Nq>]
// DECODE: scf.for {{.+}} -> (!flash_tile.tile<4xf32, #[[CROWS]]>, !flash_tile.tile<4xf32, #[[CROWS]]>, !flash_tile.tile<4x64xf32, #[[CTILE]]>)
// DECODE: flash_tile.load {{.+}} -> !flash_tile.tile<4xf32, #[[CROWS]]>
// DECODE: flash_tile.load {{.+}} {alignment = 16 : i64} : memref<4x?x64xf32, {{.+}}> -> !flash_tile.tile<4x64xf32, #[[CTILE]]>
// DECODE: math.fma
// DECODE: scf.yield
// DECODE-NOT: scf.for
// DECODE: flash_tile.store {{.+}} {alignment = 16 : i64} : !flash_tile.tile<4x64xf16, #[[CTILE]]>, memref<4x?x64xf16

// A causal decode kernel's one masked KV loop (flash-causal-skip leaves a
// loop over one KV split unsplit): a block is masked only where some row
// does not see it whole, past its valid keys or past row 0's last visible
// key o + 1; the mask then takes the lower of the two limits per row.
// DECODE-CAUSAL-LABEL: gpu.func @decode_fwd(
// DECODE-CAUSAL: scf.for %[[J:.+]] = %{{.+}} to %[[END:.+]] step %{{.+}} iter_args(
// DECODE-CAUSAL: flash_tile.mma
// DECODE-CAUSAL: %[[LEFT:.+]] = arith.subi %[[END]], %[[J]] : index
// DECODE-CAUSAL-NEXT: %[[VALID:.+]] = arith.minsi %[[LEFT]], %c128 : index
// DECODE-CAUSAL-NEXT: %[[OFF:.+]] = arith.subi %{{.+}}, %[[J]] : index
// DECODE-CAUSAL-NEXT: %[[ROW0:.+]] = arith.addi %[[OFF]], %{{.+}} : index
// DECODE-CAUSAL-NEXT: %[[SEEN:.+]] = arith.minsi %[[VALID]], %[[ROW0]] : index
// DECODE-CAUSAL: %[[PART:.+]] = arith.cmpi slt, %[[SEEN]], %{{.+}} : index
// DECODE-CAUSAL-NEXT: scf.if %[[PART]] -> (!flash_tile.tile<4x16x32xf32,
// DECODE-CAUSAL-NEXT: flash_tile.map indices
// DECODE-CAUSAL: %[[ROW:.+]] = arith.remui
// DECODE-CAUSAL-NEXT: %[[ROWOFF:.+]] = arith.addi %[[ROW]], %[[OFF]] : index
// DECODE-CAUSAL-NEXT: %[[DIAG:.+]] = arith.addi %[[ROWOFF]], %{{.+}} : index
// DECODE-CAUSAL-NEXT: arith.minsi %[[VALID]], %[[DIAG]] : index
// DECODE-CAUSAL: } else {
// DECODE-CAUSAL: } {flash.kv_loop}
// DECODE-CAUSAL-NOT: flash.kv_loop
// DECODE-CAUSAL-LABEL: gpu.func @decode_combine(

//--- decode-causal.mlir
func.func @decode(%q: tensor<?x4x?x64xf16>, %k: tensor<?x1x?x64xf16>,
                  %v: tensor<?x1x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<?x4x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
      -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}

//--- gqa3.mlir
func.func @gqa3(%q: tensor<?x6x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                %v: tensor<?x2x?x64xf16>) -> tensor<?x6x?x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<?x6x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x6x?x64xf16>
  return %o : tensor<?x6x?x64xf16>
}
// A group of 3 heads packs 3 x 42 rows into 128, 4 wide warps: Q and O
// are 3-D matrices of 3 groups, whose copy and store count the 3 valid
// groups so that rows 126 and 127 (no group's) are zero-filled and not
// stored; the causal mask takes the row within its head (of 42).
// GQA3-LABEL: gpu.func @gqa3_fwd(
// GQA3: flash_tile.async_copy %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}] valid %{{.+}} groups %c3{{.*}} {layout = #blocked} : memref<3x?x64xf16, strided<[?, ?, 1], offset: ?>>, !flash_tile.shared<1x128x64xf16>
// GQA3: flash_tile.map indices
// GQA3: arith.remui %{{.+}}, %c42
// GQA3: flash_tile.store %{{.+}} valid %{{.+}} groups %c3{{.*}} {alignment = 16 : i64} : !flash_tile.tile<128x64xf16, #mma>, memref<3x?x64xf16, strided<[?, ?, 1], offset: ?>>

// A Q tile of 40 rows is not whole MMA tiles: the flash_tile body names it.
// NOT-BUILT: error: flash-to-tile: the flash_tile body does not build a tile of 1 x 40 rows, not whole 16-row MMA tiles (G=1, Br=40, Bc=64)

// 3 heads of 20 rows are laid out in 64 rows, 21 a head: a Br that does
// not fill its head's rows is refused (a TMA box of a head's 21 rows would
// store a row of the next Q block).
// NOT-BUILT-GQA: error: flash-to-tile: the flash_tile body does not build a tile of 3 x 20 rows, laid out in 64 rows (whole MMA tiles of a power of two of warps) as 21 a head: Br must be 21 (G=3, Br=20, Bc=64)
