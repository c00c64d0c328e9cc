// Tests of flash-expand-to-cpu on hand-written memref-form ops. The inputs
// are the parts below the `//---` markers, written out by split-file.
//
// RUN: split-file %s %t
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu | FileCheck %s
// Every loop of a step is one LLVM is asked to leave as written
// (llvm.loop.disable_nonforced): as many loops as loop annotations.
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu \
// RUN:   | FileCheck %s --check-prefix=AS-WRITTEN
// RUN: flashc-opt %t/step-loops.mlir --flash-expand-to-cpu | grep -c "scf.for" > %t.loops
// RUN: flashc-opt %t/step-loops.mlir --flash-expand-to-cpu \
// RUN:   | grep -c "} {loop_annotation = #loop_annotation}" > %t.annotated
// RUN: diff %t.loops %t.annotated
// AS-WRITTEN: #loop_annotation = #llvm.loop_annotation<disableNonforced = true>
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu --canonicalize \
// RUN:   | FileCheck %s --check-prefix=CANON
// At 8 lanes (AVX2's 16 registers), the same code with half-width vectors
// and register blocks of 8 accumulators:
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu=vector-lanes=8 \
// RUN:   | FileCheck %s --check-prefix=L8
// RUN: not flashc-opt %t/valid.mlir --flash-expand-to-cpu=vector-lanes=4 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-LANES
// BAD-LANES: error: flash-expand-to-cpu: vector-lanes must be 8 or 16, got 4
// With `scalef`, 2^x of a 16-lane vector takes f = x - floor(x) by
// AVX-512's vreduceps (imm8 9: round down, no fraction bits kept) and
// applies 2^floor(x) by vscalefps to the polynomial of f, with no clamp
// (vreduceps gives 0 for -inf and vscalefps a factor of 0); at 8 lanes the
// option changes nothing.
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu=scalef=1 \
// RUN:   | FileCheck %s --check-prefix=SCALEF
// RUN: flashc-opt %t/valid.mlir --split-input-file \
// RUN:   --flash-expand-to-cpu="vector-lanes=8 scalef=1" \
// RUN:   | FileCheck %s --check-prefix=L8
// SCALEF-LABEL: func.func @step_masked
// SCALEF-NOT: math.roundeven
// SCALEF-NOT: dense<-1.500000e+02>
// SCALEF-NOT: dense<-1.270000e+02>
// SCALEF: %[[IMM:.+]] = arith.constant 9 : i32
// SCALEF: %[[F:.+]] = llvm.call_intrinsic "llvm.x86.avx512.mask.reduce.ps.512"(%[[X:.+]], %[[IMM]], %[[X]], %{{.+}}, %{{.+}}) : (vector<16xf32>, i32, vector<16xf32>, i16, i32) -> vector<16xf32>
// SCALEF-COUNT-5: vector.fma %{{.+}}, %[[F]], %{{.+}} : vector<16xf32>
// SCALEF: llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"(%[[P:.+]], %[[X]], %[[P]], %{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>, i16, i32) -> vector<16xf32>
// SCALEF-NOT: arith.shli
// SCALEF-LABEL: func.func @step_unmasked_strided
// For measurement, `ablate` leaves phases of the step out: their loops run
// zero times and fold away.
// RUN: flashc-opt %t/valid.mlir --split-input-file \
// RUN:   --flash-expand-to-cpu=ablate=qk,softmax,pv --canonicalize \
// RUN:   | FileCheck %s --check-prefix=ABLATE
// RUN: flashc-opt %t/valid.mlir --split-input-file \
// RUN:   --flash-expand-to-cpu=ablate=softmax --canonicalize \
// RUN:   | FileCheck %s --check-prefix=ABLATE-SM
// With bf16-dot, decode's S for bf16 Q and K comes from vdpbf16ps:
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu=kt-reuse=false \
// RUN:   | FileCheck %s --check-prefix=NOREUSE
// RUN: flashc-opt %t/valid.mlir --split-input-file --flash-expand-to-cpu=bf16-dot=true \
// RUN:   | FileCheck %s --check-prefix=DOT
// RUN: not flashc-opt %t/valid.mlir --flash-expand-to-cpu=ablate=qk,exp 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ABLATE
// BAD-ABLATE: error: flash-expand-to-cpu: unknown phase 'exp' in ablate; expected a comma-separated list of qk, softmax, pv
// Errors, one per rule of the pass:
// RUN: flashc-opt %t/invalid.mlir --split-input-file --flash-expand-to-cpu -verify-diagnostics

//--- valid.mlir

//===----------------------------------------------------------------------===//
// attention_step
//===----------------------------------------------------------------------===//

// A causal GQA tile: 2 heads x 5 rows (one block of 4 rows and one single
// row), D = 64, Dv = 40 (16 + 16 + an 8-wide tail), f16 operands.
// CHECK-LABEL: func.func @step_masked
// CHECK-SAME: (%[[Q:.+]]: memref<2x5x64xf16>, %[[K:.+]]: memref<?x64xf16>, %[[V:.+]]: memref<?x40xf16>, %[[ACC:.+]]: memref<2x5x40xf32>, %[[M:.+]]: memref<2x5xf32>, %[[L:.+]]: memref<2x5xf32>, %[[OFF:.+]]: index)
// The scratch lives on the stack for the step only.
// CHECK: %[[SP:.+]] = llvm.intr.stacksave : !llvm.ptr
// CHECK: %[[N:.+]] = memref.dim %[[K]], %{{.+}} : memref<?x64xf16>
// Without key_transposed, K has no transposed copy: the f32 scratch holds
// the rows of Q of one row block instead.
// CHECK: %[[QP:.+]] = memref.alloca() : memref<4x64xf32>
// The scores of up to 64 rows (n rounded up to whole vectors) and their
// alphas; the rows are taken 64 at a time, and a row block of 4 works on
// a view of its 4 rows.
// CHECK: %[[S:.+]] = memref.alloca(%{{.+}}) : memref<64x?xf32>
// CHECK: %[[ALPHA:.+]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64
// CHECK: %[[SV:.+]] = memref.subview %[[S]][%{{.+}}, 0] [4, %{{.+}}] [1, 1] : memref<64x?xf32> to memref<4x?xf32, strided<[?, 1], offset: ?>>
// Row r sees the columns below min(n, row + offset + 1).
// CHECK: arith.addi %{{.+}}, %[[OFF]] : index
// CHECK: vector.load %[[Q]]{{.+}} : memref<2x5x64xf16>, vector<16xf16>
// CHECK: vector.store %{{.+}}, %[[QP]]
// Lane 4 r + j of a group's sums is row r against key j: the row ends by
// lane for the mask.
// CHECK: vector.from_elements {{.+}} : vector<16xindex>
// CHECK: %[[LANEEND:.+]] = vector.from_elements {{.+}} : vector<16xindex>
// Groups of 4 keys, K rows prefetched ahead (the same rows of V into L2)
// and read in place (two 64-byte lines a row, so 8 prefetches each), one
// accumulator per (row, key) through the D loop.
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<16xf32>)
// CHECK-COUNT-8: memref.prefetch %[[K]]{{.+}}, read, locality<3>, data : memref<?x64xf16>
// CHECK-COUNT-8: memref.prefetch %[[V]]{{.+}}, read, locality<2>, data : memref<?x40xf16>
// CHECK-NOT: memref.prefetch
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %[[QP]]
// CHECK: vector.load %[[K]]{{.+}} : memref<?x64xf16>, vector<16xf16>
// CHECK: arith.extf %{{.+}} : vector<16xf16> to vector<16xf32>
// CHECK: vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>
// The 16 sums in 4 halving steps of two shuffles and an add.
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29]
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30]
// Scaled, masked, 4 columns stored per row, maxima carried by lane.
// CHECK: arith.mulf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.cmpi slt, %{{.+}}, %[[LANEEND]] : vector<16xindex>
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<16xi1>, vector<16xf32>
// CHECK: vector.extract_strided_slice %{{.+}} {offsets = [4], sizes = [4], strides = [1]} : vector<16xf32> to vector<4xf32>
// CHECK: vector.store %{{.+}}, %[[SV]]{{.+}} : memref<4x?xf32, strided<[?, 1], offset: ?>>, vector<4xf32>
// The maxima are one compare and select each (one vmaxps), a row's four
// lanes reduced by halving shuffles.
// CHECK: arith.cmpf ogt, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<16xi1>, vector<16xf32>
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [2, 3] : vector<4xf32>, vector<4xf32>
// CHECK: arith.cmpf ogt, %{{.+}}, %{{.+}} : vector<2xf32>
// CHECK: vector.extract %{{.+}}[0] : f32 from vector<1xf32>
// The keys past the last group one at a time, then -inf padding.
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<1xf32>
// CHECK: memref.store %{{.+}}, %[[SV]]
// CHECK: memref.store %{{.+}}, %[[SV]]
// CHECK: memref.load %[[M]]
// CHECK: memref.load %[[L]]
// alpha = exp(m - m'), guarded against -inf, for the block's 4 rows
// before their exponential loops (the rows' scalar chains overlap).
// CHECK: arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK-COUNT-4: math.exp %{{.+}} : f32
// CHECK: memref.store %{{.+}}, %[[M]]
// CHECK: memref.store %{{.+}}, %[[ALPHA]]
// p = 2^(s log2(e) - m log2(e)): the exponent clamped at -127 (so -inf
// scores give exactly 0, with no select), rounded by adding and
// subtracting 1.5 * 2^23 + 127, a polynomial of the remainder, and 2^n
// from the bits of the rounded sum shifted into the exponent.
// CHECK-NOT: math.exp
// CHECK: %[[X:.+]] = vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK-NOT: arith.cmpf oeq
// CHECK: %[[BELOW:.+]] = arith.cmpf olt, %[[X]], %[[LO:.+]] : vector<16xf32>
// CHECK: %[[XC:.+]] = arith.select %[[BELOW]], %[[LO]], %[[X]]
// CHECK: %[[T:.+]] = arith.addf %[[XC]], %[[RC:.+]] : vector<16xf32>
// CHECK: %[[NR:.+]] = arith.subf %[[T]], %[[RC]] : vector<16xf32>
// CHECK: %[[F:.+]] = arith.subf %[[XC]], %[[NR]] : vector<16xf32>
// CHECK-COUNT-5: vector.fma %{{.+}}, %[[F]], %{{.+}} : vector<16xf32>
// CHECK: %[[TB:.+]] = arith.bitcast %[[T]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[E:.+]] = arith.shli %[[TB]], %{{.+}} : vector<16xi32>
// CHECK: %[[P2N:.+]] = arith.bitcast %[[E]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[P:.+]] = arith.mulf %{{.+}}, %[[P2N]] : vector<16xf32>
// CHECK-NOT: arith.select
// CHECK: vector.store %[[P]]
// The row sum by a halving tree of shuffles and adds (vector.reduction's
// ordered f32 sum is a chain of scalar adds).
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<1xf32>
// CHECK: memref.store %{{.+}}, %[[L]]
// Then acc += P . V in blocks of 256 keys (V rows of 80 bytes: 32 KiB of
// them at most), every row block reading the same block of V. The 8-wide
// tail included. acc = alpha * acc has no pass of its own: the first key
// block scales the accumulators it loads by the rows' alphas.
// CHECK-NOT: vector.store %{{.+}}, %[[ACC]]
// CHECK: scf.for %[[K0:.+]] = %{{.+}} to %[[N]] step %c256
// CHECK: %[[PV:.+]] = memref.subview %[[S]][%{{.+}}, 0] [4, %{{.+}}] [1, 1]
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[K0]], %{{.+}} : index
// CHECK: %[[A16:.+]] = vector.load %[[ACC]]{{.+}} : memref<2x5x40xf32>, vector<16xf32>
// CHECK: %[[A8:.+]] = vector.load %[[ACC]]{{.+}} : memref<2x5x40xf32>, vector<8xf32>
// CHECK: scf.if %[[FIRST]] -> (vector<16xf32>,
// CHECK: %[[AL:.+]] = memref.load %[[ALPHA]]
// CHECK: %[[ALV:.+]] = vector.broadcast %[[AL]] : f32 to vector<16xf32>
// CHECK: arith.mulf %[[A16]], %[[ALV]] : vector<16xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[A16]],
// Two keys an iteration, then the odd one.
// CHECK: %[[PAIRS:.+]]:3 = scf.for %[[C:.+]] = %[[K0]] to %[[MID:.+]] step %c2{{.*}} iter_args
// CHECK: memref.prefetch %[[V]]
// CHECK: memref.load %[[PV]][%{{.+}}, %[[C]]]
// CHECK: %[[C1:.+]] = arith.addi %[[C]], %c1
// CHECK: memref.prefetch %[[V]]
// CHECK: memref.load %[[PV]][%{{.+}}, %[[C1]]]
// CHECK: scf.for %[[CODD:.+]] = %[[MID]] to %{{.+}} step %c1{{.*}} iter_args(%{{.+}} = %[[PAIRS]]#0, %{{.+}} = %[[PAIRS]]#1, %{{.+}} = %[[PAIRS]]#2)
// CHECK: memref.prefetch %[[V]]
// CHECK: vector.load %[[V]][%[[CODD]], %{{.+}}] : memref<?x40xf16>, vector<8xf16>
// CHECK: memref.load %[[PV]][%{{.+}}, %[[CODD]]]
// CHECK: vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK: vector.store %{{.+}}, %[[ACC]]{{.+}} : memref<2x5x40xf32>, vector<8xf32>
// CHECK: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK-NEXT: return
// CHECK-NOT: flash.
func.func @step_masked(%q: memref<2x5x64xf16>, %k: memref<?x64xf16>, %v: memref<?x40xf16>,
                       %acc: memref<2x5x40xf32>, %m: memref<2x5xf32>, %l: memref<2x5xf32>,
                       %off: index) {
  flash.attention_step ins(%q, %k, %v : memref<2x5x64xf16>, memref<?x64xf16>, memref<?x40xf16>)
      mask(%off) outs(%acc, %m, %l : memref<2x5x40xf32>, memref<2x5xf32>, memref<2x5xf32>)
      scale = 0.125
  return
}

// 4 rows x 2 keys per group, summed in 3 halving steps.
// L8-LABEL: func.func @step_masked
// L8: memref.alloca() : memref<4x64xf32>
// L8: scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// L8: vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<8xf32>
// L8: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 8, 9, 10, 11]
// L8: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 8, 9, 4, 5, 12, 13]
// L8: vector.shuffle %{{.+}}, %{{.+}} [0, 2, 8, 10, 4, 6, 12, 14]
// L8: vector.extract_strided_slice %{{.+}} {offsets = [2], sizes = [2], strides = [1]} : vector<8xf32> to vector<2xf32>
// L8: arith.shli %{{.+}}, %{{.+}} : vector<8xi32>
// P . V in groups of 2 vectors of 8 columns: 8 accumulators for 4 rows.
// L8: scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// L8: llvm.intr.stackrestore

// With P . V left out, so is acc = alpha * acc (its first key block).
// ABLATE-LABEL: func.func @step_masked
// ABLATE-NOT: vector.fma
// ABLATE-NOT: arith.shli
// ABLATE-NOT: memref<2x5x40xf32>, vector<16xf32>
// ABLATE: return

// ABLATE-SM-LABEL: func.func @step_masked
// ABLATE-SM: vector.fma
// ABLATE-SM-NOT: arith.shli
// ABLATE-SM: return

// CANON-LABEL: func.func @step_masked
// CANON: llvm.intr.stacksave
// CANON: vector.fma
// CANON: arith.cmpf ogt
// CANON: arith.shli
// CANON: llvm.intr.stackrestore
// CANON-NOT: flash.

// -----

// f32 operands in the strided layout bufferization gives slices (unit
// innermost stride), without a mask: every column below n is visible, so
// the sums are not masked; the -inf padding up to whole vectors remains.
// CHECK-LABEL: func.func @step_unmasked_strided
// CHECK-SAME: %[[K:[^:]+]]: memref<?x64xf32, strided<[?, 1], offset: ?>>
// CHECK: llvm.intr.stacksave
// CHECK: %[[N:.+]] = memref.dim %[[K]], %{{.+}}
// CHECK: memref.alloca() : memref<4x64xf32>
// CHECK: memref.alloca(%{{.+}}) : memref<64x?xf32>
// CHECK-NOT: arith.extf
// CHECK-NOT: vector.from_elements
// CHECK: vector.fma
// CHECK: vector.shuffle
// CHECK-NOT: arith.cmpi
// CHECK: arith.cmpf ogt
// CHECK: arith.shli %{{.+}}, %{{.+}} : vector<16xi32>
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<1xf32>
// CHECK: llvm.intr.stackrestore
// CHECK-NOT: flash.
func.func @step_unmasked_strided(
    %q: memref<1x8x64xf32, strided<[?, ?, 1], offset: ?>>,
    %k: memref<?x64xf32, strided<[?, 1], offset: ?>>,
    %v: memref<?x64xf32, strided<[?, 1], offset: ?>>,
    %acc: memref<1x8x64xf32>, %m: memref<1x8xf32>, %l: memref<1x8xf32>) {
  flash.attention_step ins(%q, %k, %v : memref<1x8x64xf32, strided<[?, ?, 1], offset: ?>>, memref<?x64xf32, strided<[?, 1], offset: ?>>, memref<?x64xf32, strided<[?, 1], offset: ?>>)
      outs(%acc, %m, %l : memref<1x8x64xf32>, memref<1x8xf32>, memref<1x8xf32>)
      scale = 0.125
  return
}

// -----

// With key_transposed, K is already [D, Bc]: it is read in place, without
// a transposed copy.
// CHECK-LABEL: func.func @step_key_transposed
// CHECK-SAME: %[[K:[^:]+]]: memref<32x?xf32>
// CHECK: llvm.intr.stacksave
// CHECK: memref.dim %[[K]], %{{.+}} : memref<32x?xf32>
// CHECK-NOT: memref.alloca({{.+}}) : memref<32x?xf32>
// CHECK: %[[S:.+]] = memref.alloca(%{{.+}}) : memref<64x?xf32>
// CHECK: %[[MAXES:.+]] = memref.alloca() : memref<64x16xf32>
// The scores are stored as the FMA loop leaves them: the positive scale is
// applied once to each row maximum, and in the softmax's FMA, whose factor
// is 0.125 log2(e).
// The columns that every row sees (without a mask, all whole chunks of 4
// vectors) go chunk by chunk, each chunk across all the blocks of 4 rows,
// so that the chunk of K is read from L1 by every row block. Each block
// first fetches the 16 S lines it will store, for writing. Each row's
// running maximum over these columns, lane by lane, is kept in a vector of
// its own (from -inf).
// CHECK: arith.divsi %{{.+}}, %c64
// CHECK-NEXT: %[[SHARED:.+]] = arith.muli %{{.+}}, %c64
// CHECK: %[[NINF:.+]] = vector.broadcast %{{.+}} : f32 to vector<16xf32>
// CHECK: scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: vector.store %[[NINF]], %[[MAXES]][%[[R]], %{{.+}}]
// CHECK: scf.for %[[C0:.+]] = %{{.+}} to %[[SHARED]] step %{{.+}} {
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-COUNT-16: memref.prefetch %[[S]][{{.+}}], write, locality<3>, data : memref<64x?xf32>
// CHECK: %[[QK0:.+]]:16 = scf.for
// CHECK: vector.load %[[K]][%{{.+}}, %[[C0]]]
// CHECK: }
// CHECK-NOT: arith.mulf
// CHECK: %[[M0:.+]] = vector.load %[[MAXES]][%[[I]], %{{.+}}]
// CHECK: vector.store %[[QK0]]#0, %[[S]][%[[I]], %[[C0]]] : memref<64x?xf32>, vector<16xf32>
// CHECK: arith.cmpf ogt, %[[QK0]]#0, %[[M0]] : vector<16xf32>
// CHECK-COUNT-3: arith.select
// CHECK: vector.store %{{.+}}, %[[MAXES]][%[[I]], %{{.+}}]
// Then each row block takes those columns' maxima from there and computes
// the rest of its columns.
// CHECK: memref.subview %[[S]]
// CHECK-NOT: scf.for
// CHECK-COUNT-4: vector.load %[[MAXES]]
// CHECK: scf.for %{{.+}} = %[[SHARED]] to
// CHECK-COUNT-16: memref.prefetch %{{.+}}, write, locality<3>, data : memref<4x?xf32
// CHECK: %[[QK:.+]]:16 = scf.for
// CHECK: vector.load %[[K]]
// CHECK: }
// CHECK-NOT: arith.mulf
// CHECK: vector.store %[[QK]]#0, %{{.+}} : memref<4x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
// The columns past the last whole chunk of 4 vectors: two vectors at a
// time (4 rows x 2 accumulators), then one, then the masked last one.
// CHECK-COUNT-8: memref.prefetch %{{.+}}, write, locality<3>, data : memref<4x?xf32
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: memref.prefetch %{{.+}}, write, locality<3>, data : memref<4x?xf32
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: vector.maskedload %[[K]]
// CHECK: %[[MAX:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: %[[LOG2E:.+]] = arith.constant dense<0.180336878> : vector<16xf32>
// CHECK: vector.fma %{{.+}}, %[[LOG2E]], %{{.+}} : vector<16xf32>
// CHECK: llvm.intr.stackrestore
// CHECK-NOT: flash.
// L8-LABEL: func.func @step_key_transposed
// L8: scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// L8: vector.load %{{.+}} : memref<32x?xf32>, vector<8xf32>
// L8-NOT: vector<16xf32>
// L8-LABEL: func.func @finalize_lse
func.func @step_key_transposed(%q: memref<1x4x32xf32>, %k: memref<32x?xf32>,
    %v: memref<?x16xf32>, %acc: memref<1x4x16xf32>, %m: memref<1x4xf32>,
    %l: memref<1x4xf32>) {
  flash.attention_step ins(%q, %k, %v : memref<1x4x32xf32>, memref<32x?xf32>, memref<?x16xf32>)
      outs(%acc, %m, %l : memref<1x4x16xf32>, memref<1x4xf32>, memref<1x4xf32>)
      scale = 0.125 key_transposed
  return
}

// -----

// A run-time scale factor: the scale is `scale` times the function's
// argument, applied where the constant was (to each row maximum, and
// times log2(e) in the softmax's FMA), computed in f32 at run time.
// CHECK-LABEL: func.func @step_scale_factor
// CHECK-SAME: %[[FACTOR:[^:]+]]: f32
// CHECK: %[[SCALE:.+]] = arith.mulf %{{.+}}, %[[FACTOR]] : f32
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: %[[L2E:.+]] = arith.mulf %[[SCALE]], %{{.+}} : f32
// CHECK: %[[L2EV:.+]] = vector.broadcast %[[L2E]] : f32 to vector<16xf32>
// CHECK: vector.fma %{{.+}}, %[[L2EV]], %{{.+}} : vector<16xf32>
// CHECK-NOT: flash.
func.func @step_scale_factor(%q: memref<1x4x32xf32>, %k: memref<32x?xf32>,
    %v: memref<?x16xf32>, %acc: memref<1x4x16xf32>, %m: memref<1x4xf32>,
    %l: memref<1x4xf32>, %factor: f32) {
  flash.attention_step ins(%q, %k, %v : memref<1x4x32xf32>, memref<32x?xf32>, memref<?x16xf32>)
      outs(%acc, %m, %l : memref<1x4x16xf32>, memref<1x4xf32>, memref<1x4xf32>)
      scale = 0.125 scale_factor(%factor) key_transposed
  return
}

// -----

// A key block whose length is min(rest, 256), as tiling makes it: S is laid
// out for 256 keys, so that its rows are a constant stride apart.
// CHECK-LABEL: func.func @step_bounded_block
// CHECK: %[[S:.+]] = memref.alloca() : memref<64x256xf32>
// CHECK: memref.subview %[[S]][%{{.+}}, 0] [4, %{{.+}}] [1, 1] : memref<64x256xf32> to memref<4x?xf32, strided<[256, 1], offset: ?>>
func.func @step_bounded_block(%q: memref<1x4x32xf32>, %k: memref<32x?xf32>,
    %v: memref<?x16xf32>, %acc: memref<1x4x16xf32>, %m: memref<1x4xf32>,
    %l: memref<1x4xf32>, %k0: index) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %n = memref.dim %k, %c1 : memref<32x?xf32>
  %rest = arith.subi %n, %k0 : index
  %len = arith.minsi %rest, %c256 : index
  %kb = memref.subview %k[0, %k0] [32, %len] [1, 1]
      : memref<32x?xf32> to memref<32x?xf32, strided<[?, 1], offset: ?>>
  %vb = memref.subview %v[%k0, 0] [%len, 16] [1, 1]
      : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
  flash.attention_step ins(%q, %kb, %vb : memref<1x4x32xf32>, memref<32x?xf32, strided<[?, 1], offset: ?>>, memref<?x16xf32, strided<[16, 1], offset: ?>>)
      outs(%acc, %m, %l : memref<1x4x16xf32>, memref<1x4xf32>, memref<1x4xf32>)
      scale = 0.125 key_transposed
  return
}

// -----

// Under a causal mask, the columns every row sees end at the smallest
// row's end. The 96 rows are two heads of 48, in super-blocks of 64 rows:
// a super-block's smallest row is its first, or row 0 of the next head
// where it reaches into it (the first one does).
// With kt-reuse=false, every row block computes all its columns itself:
// no scores are stored into the 64-row S outside a row block's view.
// NOREUSE-LABEL: func.func @step_transposed_masked
// NOREUSE-NOT: vector.store {{.+}} : memref<64x?xf32>, vector<16xf32>
// NOREUSE: llvm.intr.stackrestore
// CANON-LABEL: func.func @step_transposed_masked
// CANON-SAME: %[[K:[^:]+]]: memref<32x?xf32>
// CANON-SAME: %[[OFF:[^:]+]]: index)
// CANON: %[[N:.+]] = memref.dim %[[K]], %c1
// CANON: scf.for %[[SB0:.+]] = %c0 to %c96 step %c64 {
// CANON: %[[LAST:.+]] = arith.subi %{{.+}}, %c1
// CANON: %[[LASTHEAD:.+]] = arith.divui %[[LAST]], %c48
// CANON: %[[FIRSTHEAD:.+]] = arith.divui %[[SB0]], %c48
// CANON: %[[SAME:.+]] = arith.cmpi eq, %[[FIRSTHEAD]], %[[LASTHEAD]]
// CANON: %[[FIRSTROW:.+]] = arith.remui %[[SB0]], %c48
// CANON: %[[MINROW:.+]] = arith.select %[[SAME]], %[[FIRSTROW]], %c0
// CANON: %[[LIM0:.+]] = arith.addi %[[MINROW]], %[[OFF]]
// CANON: %[[LIM:.+]] = arith.addi %[[LIM0]], %c1
// CANON: %[[END:.+]] = arith.minsi %[[N]], %[[LIM]]
// CANON: %[[END0:.+]] = arith.maxsi %[[END]], %c0
// CANON: %[[CHUNKS:.+]] = arith.divsi %[[END0]], %c64
// CANON: %[[SHARED:.+]] = arith.muli %[[CHUNKS]], %c64
// CANON: scf.for %{{.+}} = %c0 to %[[SHARED]] step %c64 {
// CANON-NEXT: scf.for %{{.+}} = %c0 to %{{.+}} step %c4 {
func.func @step_transposed_masked(%q: memref<2x48x32xf32>, %k: memref<32x?xf32>,
    %v: memref<?x16xf32>, %acc: memref<2x48x16xf32>, %m: memref<2x48xf32>,
    %l: memref<2x48xf32>, %off: index) {
  flash.attention_step ins(%q, %k, %v : memref<2x48x32xf32>, memref<32x?xf32>, memref<?x16xf32>)
      mask(%off) outs(%acc, %m, %l : memref<2x48x16xf32>, memref<2x48xf32>, memref<2x48xf32>)
      scale = 0.125 key_transposed
  return
}

// -----

//===----------------------------------------------------------------------===//
// finalize
//===----------------------------------------------------------------------===//

// out = l > 0 ? acc / l : 0 in bf16 (16 + 4 lanes), lse = l > 0 ? m + log(l) : -inf.
// CHECK-LABEL: func.func @finalize_lse
// CHECK-SAME: (%[[ACC:.+]]: memref<2x3x20xf32>, %[[M:.+]]: memref<2x3xf32>, %[[L:.+]]: memref<2x3xf32>, %[[OUT:.+]]: memref<2x3x20xbf16>, %[[LSE:.+]]: memref<2x3xf32>)
// CHECK: scf.for %[[I:.+]] =
// CHECK: scf.for %[[J:.+]] =
// CHECK: %[[LV:.+]] = memref.load %[[L]][%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK: %[[POS:.+]] = arith.cmpf une, %[[LV]], %{{.+}} : f32
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[LV]] : f32
// CHECK: arith.select %[[POS]], %[[INV]], %{{.+}} : f32
// CHECK: vector.load %[[ACC]][%[[I]], %[[J]], %{{.+}}] : memref<2x3x20xf32>, vector<16xf32>
// CHECK: arith.truncf %{{.+}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.store %{{.+}}, %[[OUT]][%[[I]], %[[J]], %{{.+}}] : memref<2x3x20xbf16>, vector<16xbf16>
// CHECK: vector.load %[[ACC]][%[[I]], %[[J]], %{{.+}}] : memref<2x3x20xf32>, vector<4xf32>
// CHECK: vector.store %{{.+}}, %[[OUT]][%[[I]], %[[J]], %{{.+}}] : memref<2x3x20xbf16>, vector<4xbf16>
// CHECK: %[[MV:.+]] = memref.load %[[M]][%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK: %[[LOG:.+]] = math.log %[[LV]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[MV]], %[[LOG]] : f32
// CHECK: %[[V:.+]] = arith.select %[[POS]], %[[SUM]], %{{.+}} : f32
// CHECK: memref.store %[[V]], %[[LSE]][%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NOT: flash.
func.func @finalize_lse(%acc: memref<2x3x20xf32>, %m: memref<2x3xf32>, %l: memref<2x3xf32>,
                        %out: memref<2x3x20xbf16>, %lse: memref<2x3xf32>) {
  flash.finalize ins(%acc, %m, %l : memref<2x3x20xf32>, memref<2x3xf32>, memref<2x3xf32>)
      outs(%out, %lse : memref<2x3x20xbf16>, memref<2x3xf32>)
  return
}

// -----

// Without the log-sum-exp, no log is computed.
// CHECK-LABEL: func.func @finalize
// CHECK: arith.divf
// CHECK: vector.store %{{.+}} : memref<64x32xf32>, vector<16xf32>
// CHECK-NOT: math.log
// CHECK-NOT: flash.
func.func @finalize(%acc: memref<64x32xf32>, %m: memref<64xf32>, %l: memref<64xf32>,
                    %out: memref<64x32xf32>) {
  flash.finalize ins(%acc, %m, %l : memref<64x32xf32>, memref<64xf32>, memref<64xf32>)
      outs(%out : memref<64x32xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// combine
//===----------------------------------------------------------------------===//

// lse = log(sum_s exp(plse[s])), out = sum_s exp(plse[s] - lse) * parts[s].
// CHECK-LABEL: func.func @combine
// CHECK-SAME: (%[[P:.+]]: memref<4x2x1x32xf32>, %[[PL:.+]]: memref<4x2x1xf32>, %[[OUT:.+]]: memref<2x1x32xf16>, %[[LSE:.+]]: memref<2x1xf32>)
// The maximum over the splits.
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (f32)
// CHECK: memref.load %[[PL]]
// CHECK: arith.maximumf
// The sum of exponentials, then its log.
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (f32)
// CHECK: math.exp %{{.+}} : f32
// CHECK: math.log %{{.+}} : f32
// CHECK: memref.store %{{.+}}, %[[LSE]]
// Weighted sum of the partial outputs, two 16-lane vectors.
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>)
// CHECK: math.exp %{{.+}} : f32
// CHECK: vector.load %[[P]]{{.+}} : memref<4x2x1x32xf32>, vector<16xf32>
// CHECK: vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.truncf %{{.+}} : vector<16xf32> to vector<16xf16>
// CHECK: vector.store %{{.+}}, %[[OUT]]{{.+}} : memref<2x1x32xf16>, vector<16xf16>
// CHECK-NOT: flash.
func.func @combine(%parts: memref<4x2x1x32xf32>, %plse: memref<4x2x1xf32>,
                   %out: memref<2x1x32xf16>, %lse: memref<2x1xf32>) {
  flash.combine ins(%parts, %plse : memref<4x2x1x32xf32>, memref<4x2x1xf32>)
      outs(%out, %lse : memref<2x1x32xf16>, memref<2x1xf32>)
  return
}

// -----

// Functions without flash ops are left unchanged.
// CHECK-LABEL: func.func @no_flash_ops
// CHECK-SAME: (%[[A:.+]]: memref<4xf32>)
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[C0]]] : memref<4xf32>
// CHECK-NEXT: return %[[X]] : f32
func.func @no_flash_ops(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  return %x : f32
}

// -----

// bf16 Q and K in decode form (K rows read in place), head dimension 40:
// by default, widened to f32 as the other types. With bf16-dot, Q is packed
// as bf16 (zero-padded to 64) and S = Q . K^T takes 32 elements of a K row
// per vdpbf16ps, as loaded; the last 8 by a masked load.
// CHECK-LABEL: func.func @step_bf16
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
// DOT-LABEL: func.func @step_bf16
// DOT: memref.alloca() : memref<4x64xbf16>
// DOT: vector.load %{{.+}} : memref<1x3x40xbf16>, vector<32xbf16>
// DOT: vector.store %{{.+}} : memref<4x64xbf16>, vector<32xbf16>
// DOT: arith.constant dense<0.000000e+00> : vector<24xbf16>
// DOT: vector.load %[[K:.+]][%{{.+}}, %{{.+}}] : memref<?x40xbf16>, vector<32xbf16>
// DOT-NEXT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.+}}, %{{.+}}, %{{.+}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// DOT: vector.constant_mask [8] : vector<32xi1>
// DOT: vector.maskedload %{{.+}} : memref<?x40xbf16>, vector<32xi1>, vector<32xbf16> into vector<32xbf16>
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT: return
func.func @step_bf16(%q: memref<1x3x40xbf16>, %k: memref<?x40xbf16>, %v: memref<?x40xbf16>,
                     %acc: memref<1x3x40xf32>, %m: memref<1x3xf32>, %l: memref<1x3xf32>) {
  flash.attention_step ins(%q, %k, %v : memref<1x3x40xbf16>, memref<?x40xbf16>, memref<?x40xbf16>)
      outs(%acc, %m, %l : memref<1x3x40xf32>, memref<1x3xf32>, memref<1x3xf32>)
      scale = 0.15
  return
}

// -----

// The f32 copies of flash-cpu-widen-operands: in parallel over batch and
// head, a loop over rows, and the row (40 wide) as 16 + 16 + 8 lanes, each
// loaded, extended and stored. A copy between equal types is not one of
// them and is left to linalg's lowering.
// CHECK-LABEL: func.func @widen
// CHECK-SAME: (%[[IN:.+]]: memref<?x2x?x40xbf16>, %[[OUT:.+]]: memref<?x2x?x40xf32>, %[[SAME:.+]]: memref<4x40xf32>, %[[SAMEOUT:.+]]: memref<4x40xf32>)
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) in (%{{.+}}, 2)
// CHECK: scf.for %[[R:.+]] =
// CHECK: %[[X0:.+]] = vector.load %[[IN]][%[[B]], %[[H]], %[[R]], %{{.+}}] : memref<?x2x?x40xbf16>, vector<16xbf16>
// CHECK: %[[W0:.+]] = arith.extf %[[X0]] : vector<16xbf16> to vector<16xf32>
// CHECK: vector.store %[[W0]], %[[OUT]][%[[B]], %[[H]], %[[R]], %{{.+}}] : memref<?x2x?x40xf32>, vector<16xf32>
// CHECK: vector.load %[[IN]]{{.+}} vector<16xbf16>
// CHECK: vector.load %[[IN]]{{.+}} vector<8xbf16>
// CHECK: vector.store %{{.+}}, %[[OUT]]{{.+}} vector<8xf32>
// CHECK-NOT: linalg.copy ins(%[[IN]]
// CHECK: linalg.copy ins(%[[SAME]] : memref<4x40xf32>) outs(%[[SAMEOUT]] : memref<4x40xf32>)
func.func @widen(%in: memref<?x2x?x40xbf16>, %out: memref<?x2x?x40xf32>,
                 %same: memref<4x40xf32>, %sameOut: memref<4x40xf32>) {
  linalg.copy ins(%in : memref<?x2x?x40xbf16>) outs(%out : memref<?x2x?x40xf32>)
  linalg.copy ins(%same : memref<4x40xf32>) outs(%sameOut : memref<4x40xf32>)
  return
}

// -----

// The transposed copy of K: in parallel over batch and head, blocks of 16
// keys x 16 columns of D, each 16 row loads, a transpose in 4 rounds of 16
// two-source shuffles (the h x h blocks swapped at h = 8, 4, 2, 1) and 16
// row stores; the keys past the last whole block element by element. LLVM
// is asked to leave every one of these loops as written.
// CHECK-LABEL: func.func @key_transpose
// CHECK-SAME: (%[[K:.+]]: memref<?x2x?x32xf32>, %[[KT:.+]]: memref<?x2x32x?xf32>)
// CHECK-NOT: vector.transpose
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) in (%{{.+}}, 2)
// CHECK: scf.for %[[C0:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: scf.for %[[D0:.+]] = %{{.+}} to %c32 step %c16
// CHECK-COUNT-16: vector.load %[[K]][%[[B]], %[[H]], %{{.+}}, %[[D0]]] : memref<?x2x?x32xf32>, vector<16xf32>
// CHECK: vector.shuffle %[[ROW0:.+]], %[[ROW8:.+]] [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %[[ROW0]], %[[ROW8]] [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
// CHECK-COUNT-14: vector.shuffle
// CHECK-NEXT: vector.shuffle {{.+}} [0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27]
// CHECK-COUNT-15: vector.shuffle
// CHECK-NEXT: vector.shuffle {{.+}} [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29]
// CHECK-COUNT-15: vector.shuffle
// CHECK-NEXT: vector.shuffle {{.+}} [0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30]
// CHECK-COUNT-15: vector.shuffle
// CHECK-NOT: vector.shuffle
// CHECK-COUNT-16: vector.store %{{.+}}, %[[KT]][%[[B]], %[[H]], %{{.+}}, %[[C0]]] : memref<?x2x32x?xf32>, vector<16xf32>
// CHECK-NEXT: } {loop_annotation = #[[AS_WRITTEN:.+]]}
// CHECK-NEXT: } {loop_annotation = #[[AS_WRITTEN]]}
// The keys past the last block of 16.
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %[[K]]
// CHECK: memref.store %{{.+}}, %[[KT]]
// CHECK-NEXT: } {loop_annotation = #[[AS_WRITTEN]]}
// CHECK-NEXT: } {loop_annotation = #[[AS_WRITTEN]]}
func.func @key_transpose(%k: memref<?x2x?x32xf32>, %kt: memref<?x2x32x?xf32>) {
  linalg.transpose ins(%k : memref<?x2x?x32xf32>) outs(%kt : memref<?x2x32x?xf32>)
      permutation = [0, 1, 3, 2]
  return
}

//--- invalid.mlir

// A step on tensors has not been bufferized.
func.func @tensor_step(%q: tensor<1x16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>,
    %acc: tensor<1x16x8xf32>, %m: tensor<1x16xf32>, %l: tensor<1x16xf32>)
    -> (tensor<1x16x8xf32>, tensor<1x16xf32>, tensor<1x16xf32>) {
  // expected-error @+1 {{'flash.attention_step' op must be bufferized (on memrefs) before flash-expand-to-cpu}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
      outs(%acc, %m, %l : tensor<1x16x8xf32>, tensor<1x16xf32>, tensor<1x16xf32>)
      scale = 0.125 -> tensor<1x16x8xf32>, tensor<1x16xf32>, tensor<1x16xf32>
  return %r#0, %r#1, %r#2 : tensor<1x16x8xf32>, tensor<1x16xf32>, tensor<1x16xf32>
}

// -----

// So has a finalize on tensors.
func.func @tensor_finalize(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>,
                           %out: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'flash.finalize' op must be bufferized (on memrefs) before flash-expand-to-cpu}}
  %o = flash.finalize ins(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
      outs(%out : tensor<4x8xf16>) -> tensor<4x8xf16>
  return %o : tensor<4x8xf16>
}

// -----

// The untiled [B, Hkv, G, Nq, D] step of flash-online-softmax.
func.func @rank5_query(%q: memref<2x8x1x16x64xf32>, %k: memref<2x8x32x64xf32>,
    %v: memref<2x8x32x64xf32>, %acc: memref<2x8x1x16x64xf32>,
    %m: memref<2x8x1x16xf32>, %l: memref<2x8x1x16xf32>) {
  // expected-error @+1 {{query must be a [G, Br, D] tile (rank 3) for the CPU expansion, got rank 5; run flash-tile first}}
  flash.attention_step ins(%q, %k, %v : memref<2x8x1x16x64xf32>, memref<2x8x32x64xf32>, memref<2x8x32x64xf32>)
      outs(%acc, %m, %l : memref<2x8x1x16x64xf32>, memref<2x8x1x16xf32>, memref<2x8x1x16xf32>)
      scale = 0.125
  return
}

// -----

// Head dims beyond what the CPU kernels unroll.
func.func @huge_head_dim(%q: memref<1x16x100000xf32>, %k: memref<16x100000xf32>,
    %v: memref<16x8xf32>, %acc: memref<1x16x8xf32>, %m: memref<1x16xf32>,
    %l: memref<1x16xf32>) {
  // expected-error @+1 {{head dimension 100000 exceeds the 512 the CPU kernels unroll}}
  flash.attention_step ins(%q, %k, %v : memref<1x16x100000xf32>, memref<16x100000xf32>, memref<16x8xf32>)
      outs(%acc, %m, %l : memref<1x16x8xf32>, memref<1x16xf32>, memref<1x16xf32>)
      scale = 0.125
  return
}

// -----

// K read transposed through its layout.
func.func @strided_innermost(%q: memref<1x16x8xf32>, %k: memref<16x8xf32, strided<[1, 16]>>,
    %v: memref<16x8xf32>, %acc: memref<1x16x8xf32>, %m: memref<1x16xf32>,
    %l: memref<1x16xf32>) {
  // expected-error @+1 {{needs unit stride in the innermost dimension, got 'memref<16x8xf32, strided<[1, 16]>>'}}
  flash.attention_step ins(%q, %k, %v : memref<1x16x8xf32>, memref<16x8xf32, strided<[1, 16]>>, memref<16x8xf32>)
      outs(%acc, %m, %l : memref<1x16x8xf32>, memref<1x16xf32>, memref<1x16xf32>)
      scale = 0.125
  return
}

//--- step-loops.mlir
func.func @step_loops(%q: memref<2x48x32xf32>, %k: memref<32x?xf32>,
                      %v: memref<?x32xf32>, %acc: memref<2x48x32xf32>,
                      %m: memref<2x48xf32>, %l: memref<2x48xf32>, %off: index) {
  flash.attention_step ins(%q, %k, %v : memref<2x48x32xf32>, memref<32x?xf32>, memref<?x32xf32>)
      mask(%off) outs(%acc, %m, %l : memref<2x48x32xf32>, memref<2x48xf32>, memref<2x48xf32>)
      scale = 0.125 key_transposed
  return
}
