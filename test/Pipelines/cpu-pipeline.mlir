// End-to-end tests of the named pipelines of flashc-opt. The inputs are the
// parts below the `//---` markers, written out by split-file; the memref
// functions have the form the JIT builds (lib/Compiler/KernelModule.h).
//
// RUN: split-file %s %t
//
// The naive matmul-softmax-matmul graph to the LLVM dialect. Nothing of the
// flash, scf, memref, math or bufferization dialects is left, and exp/log
// are polynomials (no llvm.intr.exp or llvm.intr.log).
// RUN: flashc-opt %t/graph.mlir --flash-cpu-pipeline="num-threads=2 vector-lanes=16 scalef=off" \
// RUN:   | FileCheck %s --check-prefix=GRAPH \
// RUN:       --implicit-check-not=flash. --implicit-check-not=scf. \
// RUN:       --implicit-check-not=memref. --implicit-check-not=math. \
// RUN:       --implicit-check-not=bufferization. --implicit-check-not=unrealized_conversion_cast \
// RUN:       --implicit-check-not=llvm.intr.exp --implicit-check-not=llvm.intr.log
// The OpenMP dialect becomes calls into the OpenMP runtime in LLVM IR
// (mlir-translate ships with mlir-tblgen, which the build needs).
// RUN: flashc-opt %t/graph.mlir --flash-cpu-pipeline="num-threads=2" \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=GRAPH-IR
//
// flash.attention (GQA, causal, f16, with the log-sum-exp) with explicit
// tiles and 4 KV splits.
// RUN: flashc-opt %t/attention.mlir \
// RUN:   --flash-cpu-pipeline="num-threads=2 block-q=16 block-kv=32 splits=4 vector-lanes=16 scalef=off" \
// RUN:   | FileCheck %s --check-prefix=ATTN \
// RUN:       --implicit-check-not=flash. --implicit-check-not=scf. \
// RUN:       --implicit-check-not=memref. --implicit-check-not=math. \
// RUN:       --implicit-check-not=bufferization. --implicit-check-not=unrealized_conversion_cast \
// RUN:       --implicit-check-not=llvm.intr.exp --implicit-check-not=llvm.intr.log
// RUN: flashc-opt %t/attention.mlir \
// RUN:   --flash-cpu-pipeline="num-threads=2 block-q=16 block-kv=32 splits=4" \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=ATTN-IR
//
// --flash-attention-pipeline stops at tiled tensors.
// RUN: flashc-opt %t/tensor.mlir --flash-attention-pipeline="block-q=16 block-kv=16" \
// RUN:   | FileCheck %s --check-prefix=TILED --implicit-check-not=memref
// RUN: flashc-opt %t/tensor.mlir --flash-attention-pipeline="target=sm_80 block-q=16 block-kv=16" \
// RUN:   | FileCheck %s --check-prefix=TILED-GPU --implicit-check-not=memref
// RUN: flashc-opt %t/attention.mlir --flash-attention-pipeline="block-q=16 block-kv=32 splits=4" \
// RUN:   | FileCheck %s --check-prefix=TILED-SPLIT
//
// Invalid options are reported as an error, for both pipelines.
// RUN: not flashc-opt %t/tensor.mlir --flash-attention-pipeline="target=sm_99" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TARGET
// Each pipeline takes only its own options (PipelineOptions.def): the CPU
// pipeline has no target or chip, nor the GPU's PTX options; the GPU
// pipeline names its chip and has no CPU option; --help lists each one's
// with the values of the enum-like ones.
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="target=sm_99" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CPU-NO-TARGET
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="chip=sm_90a" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CPU-NO-CHIP
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="ptx=ptx80" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CPU-NO-PTX
// RUN: not flashc-opt %t/graph.mlir --flash-gpu-pipeline="vector-lanes=8" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=GPU-NO-LANES
// RUN: flashc-opt --help | FileCheck %s --check-prefix=HELP
// RUN: not flashc-opt %t/tensor.mlir --flash-attention-pipeline="loop-order=x" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ORDER
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="loop-order=x" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ORDER
// RUN: not flashc-opt %t/tensor.mlir --flash-attention-pipeline="block-q=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-BLOCK
// RUN: not flashc-opt %t/tensor.mlir --flash-cpu-pipeline="splits=-3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SPLITS
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="vector-lanes=32" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-LANES
//
// vector-lanes=8 blocks the kernels for AVX2's 16 registers of 8 lanes: no
// f32 vector is wider.
// RUN: flashc-opt %t/attention.mlir \
// RUN:   --flash-cpu-pipeline="num-threads=2 block-q=16 block-kv=32 splits=4 vector-lanes=8" \
// RUN:   | FileCheck %s --check-prefix=LANES8 --implicit-check-not="vector<16xf32>"

//
// alloc-hooks=1 (what the JIT compiles) allocates heap buffers through the
// hooks the JIT binds to its scratch allocator, never malloc.
// RUN: flashc-opt %t/attention.mlir \
// RUN:   --flash-cpu-pipeline="num-threads=2 block-q=16 block-kv=32 splits=4 alloc-hooks=1" \
// RUN:   | FileCheck %s --check-prefix=HOOKS --implicit-check-not=@malloc \
// RUN:       --implicit-check-not=@free

// HOOKS-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// HOOKS-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// HOOKS: llvm.func @flash_attention(
// HOOKS: llvm.call @_mlir_memref_to_llvm_alloc(
// HOOKS: llvm.call @_mlir_memref_to_llvm_free(

//
// scalef=on: the softmax's 2^x takes x - floor(x) by vreduceps and scales
// by vscalefps, with no rounding, clamp or exponent-bit shift.
// RUN: flashc-opt %t/graph.mlir --flash-cpu-pipeline="num-threads=2 vector-lanes=16 scalef=on" \
// RUN:   | FileCheck %s --check-prefix=SCALEF --implicit-check-not="llvm.shl {{.+}} : vector<16xi32>" \
// RUN:     --implicit-check-not=llvm.intr.roundeven
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="scalef=maybe" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SCALEF
// RUN: not flashc-opt %t/graph.mlir --flash-cpu-pipeline="scalef=on vector-lanes=8" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SCALEF-LANES

// SCALEF-LABEL: llvm.func @naive(
// SCALEF: llvm.call_intrinsic "llvm.x86.avx512.mask.reduce.ps.512"({{.+}}) : (vector<16xf32>, i32, vector<16xf32>, i16, i32) -> vector<16xf32>
// SCALEF: llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"({{.+}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>, i16, i32) -> vector<16xf32>
// BAD-SCALEF: error: invalid flash pipeline options: scalef must be off, host or on, got 'maybe'
// SCALEF-LANES: error: invalid flash pipeline options: scalef=on needs 16-lane vectors (AVX-512); vector-lanes is 8

// BAD-TARGET: error: invalid flash pipeline options: unknown target 'sm_99'; known targets: cpu, sm_80, sm_90a
// CPU-NO-TARGET: no such option target
// CPU-NO-CHIP: no such option chip
// CPU-NO-PTX: no such option ptx
// GPU-NO-LANES: no such option vector-lanes

// HELP:      --flash-attention-pipeline
// HELP-NOT:  --flash-
// HELP:        --target=<cpu|sm_80|sm_90a>
// HELP:      --flash-cpu-pipeline
// HELP-NOT:  --target=
// HELP-NOT:  --chip=
// HELP:        --bf16-dot=<off|host|on>
// HELP-NOT:  --ptx=
// HELP:        --vector-lanes=<0|8|16>
// HELP:      --flash-gpu-pipeline
// HELP:        --chip=<sm_80|sm_90a>
// HELP-NOT:  --vector-lanes
// HELP:        --format=<isa|bin>
// HELP-NOT:  --vector-lanes
// BAD-ORDER: error: invalid flash pipeline options: unknown loop order 'x'; expected fa2 or algorithm1
// BAD-BLOCK: error: invalid flash pipeline options: block-q must be non-negative, got -1
// BAD-SPLITS: error: invalid flash pipeline options: splits must be non-negative, got -3
// BAD-LANES: error: invalid flash pipeline options: vector-lanes must be 0 (the host's), 8 or 16, got 32
// LANES8: llvm.func @flash_attention(
// LANES8: llvm.intr.fmuladd{{.+}}vector<8xf32>
// LANES8: llvm.shufflevector {{.+}} : vector<8xf32>
// LANES8: llvm.fcmp "ogt" {{.+}} : vector<8xf32>
// LANES8: llvm.shl {{.+}} : vector<8xi32>

//===----------------------------------------------------------------------===//
// The naive graph.
//===----------------------------------------------------------------------===//

// GRAPH: module
// GRAPH-DAG: llvm.func @malloc(
// GRAPH-DAG: llvm.func @free(
// GRAPH-LABEL: llvm.func @naive(
// GRAPH-SAME: attributes {llvm.emit_c_interface}
// The parallel loop over (batch, head, Q block) runs on OpenMP threads.
// GRAPH: omp.parallel num_threads(
// GRAPH: omp.wsloop schedule(dynamic)
// GRAPH: omp.loop_nest
// The register-blocked step: scratch on the stack. The Q tile holds the
// whole query, so K has no transposed copy: its rows are prefetched and
// read in place, one FMA accumulator per (row, key), summed by shuffles.
// GRAPH: llvm.intr.stacksave
// GRAPH: llvm.intr.prefetch
// GRAPH: llvm.intr.fmuladd{{.+}}vector<16xf32>
// GRAPH: llvm.shufflevector
// GRAPH: llvm.fcmp "ogt" {{.+}} : vector<16xf32>
// GRAPH: llvm.shl {{.+}} : vector<16xi32>
// GRAPH: llvm.fadd {{.+}} : vector<1xf32>
// GRAPH: llvm.intr.stackrestore
// GRAPH: omp.yield
// GRAPH: omp.terminator
// GRAPH: llvm.return
// GRAPH-LABEL: llvm.func @_mlir_ciface_naive(
// GRAPH: llvm.call @naive(
// GRAPH: llvm.return

// GRAPH-IR-LABEL: define void @naive(
// GRAPH-IR: call void (ptr, i32, ptr, ...) @__kmpc_fork_call(
// GRAPH-IR-LABEL: define void @_mlir_ciface_naive(
// GRAPH-IR: declare {{.*}}void @__kmpc_fork_call(ptr, i32, ptr, ...)

//--- graph.mlir
func.func @naive(%qm: memref<1x2x32x16xf32, strided<[?, ?, ?, 1], offset: ?>>,
                 %km: memref<1x2x48x16xf32, strided<[?, ?, ?, 1], offset: ?>>,
                 %vm: memref<1x2x48x16xf32, strided<[?, ?, ?, 1], offset: ?>>,
                 %om: memref<1x2x32x16xf32, strided<[?, ?, ?, 1], offset: ?>>)
    attributes {llvm.emit_c_interface} {
  %q = bufferization.to_tensor %qm restrict
      : memref<1x2x32x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x32x16xf32>
  %k = bufferization.to_tensor %km restrict
      : memref<1x2x48x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x48x16xf32>
  %v = bufferization.to_tensor %vm restrict
      : memref<1x2x48x16xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x48x16xf32>
  %s = flash.matmul %q, %k transpose_b
      : tensor<1x2x32x16xf32>, tensor<1x2x48x16xf32> -> tensor<1x2x32x48xf32>
  %p = flash.softmax %s scale = 0.25 : tensor<1x2x32x48xf32> -> tensor<1x2x32x48xf32>
  %o = flash.matmul %p, %v
      : tensor<1x2x32x48xf32>, tensor<1x2x48x16xf32> -> tensor<1x2x32x16xf32>
  bufferization.materialize_in_destination %o in restrict writable %om
      : (tensor<1x2x32x16xf32>, memref<1x2x32x16xf32, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}

//===----------------------------------------------------------------------===//
// flash.attention, split.
//===----------------------------------------------------------------------===//

// ATTN-LABEL: llvm.func @flash_attention(
// ATTN-SAME: attributes {llvm.emit_c_interface}
// ATTN: omp.parallel num_threads(
// ATTN: omp.wsloop schedule(dynamic)
// ATTN: llvm.intr.stacksave
// f16 operands are widened to f32 in the step; K rows are read in place.
// ATTN: llvm.fpext {{.+}} : vector<16xf16> to vector<16xf32>
// ATTN: llvm.intr.prefetch
// ATTN: llvm.intr.fmuladd{{.+}}vector<16xf32>
// ATTN: llvm.shufflevector
// ATTN: llvm.fcmp "ogt" {{.+}} : vector<16xf32>
// ATTN: llvm.shl {{.+}} : vector<16xi32>
// ATTN: llvm.intr.stackrestore
// ATTN: omp.terminator
// The combine of the 4 splits runs after the parallel region.
// ATTN: llvm.fptrunc {{.+}} to vector<16xf16>
// ATTN: llvm.return
// ATTN-LABEL: llvm.func @_mlir_ciface_flash_attention(
// ATTN: llvm.call @flash_attention(

// ATTN-IR-LABEL: define void @flash_attention(
// ATTN-IR: call void (ptr, i32, ptr, ...) @__kmpc_fork_call(

// TILED-SPLIT-LABEL: func.func @flash_attention
// TILED-SPLIT: bufferization.to_tensor
// TILED-SPLIT-NOT: memref.
// TILED-SPLIT: scf.forall (%{{.+}}, %{{.+}}) in (2, 4)
// Causal skipping ran after the split: each split's KV range [S0, S1) is
// bounded to the keys its rows see, min(S1, max(S0, 200)), in one loop of
// masked steps.
// TILED-SPLIT: %[[S0:.+]] = arith.muli %{{.+}}, %c64 : index
// TILED-SPLIT: %[[S1:.+]] = arith.minsi %{{.+}}, %c200 : index
// TILED-SPLIT: %[[REACH:.+]] = arith.maxsi %[[S0]], %c200 : index
// TILED-SPLIT-NEXT: %[[END:.+]] = arith.minsi %[[S1]], %[[REACH]] : index
// TILED-SPLIT-NEXT: scf.for %{{.+}} = %[[S0]] to %[[END]] step %c32
// TILED-SPLIT: flash.attention_step {{.+}} mask(
// TILED-SPLIT: } {flash.kv_loop}
// TILED-SPLIT-NOT: scf.for
// TILED-SPLIT: flash.finalize
// TILED-SPLIT: } {flash.tile_loop}
// TILED-SPLIT: %[[C:.+]]:2 = flash.combine
// TILED-SPLIT-NOT: memref.
// TILED-SPLIT: bufferization.materialize_in_destination %[[C]]#0
// TILED-SPLIT: bufferization.materialize_in_destination %[[C]]#1

//--- attention.mlir
func.func @flash_attention(%qm: memref<1x4x8x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                           %km: memref<1x2x200x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                           %vm: memref<1x2x200x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                           %om: memref<1x4x8x32xf16, strided<[?, ?, ?, 1], offset: ?>>,
                           %lm: memref<1x4x8xf32, strided<[?, ?, 1], offset: ?>>)
    attributes {llvm.emit_c_interface} {
  %q = bufferization.to_tensor %qm restrict
      : memref<1x4x8x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x4x8x32xf16>
  %k = bufferization.to_tensor %km restrict
      : memref<1x2x200x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x200x32xf16>
  %v = bufferization.to_tensor %vm restrict
      : memref<1x2x200x32xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<1x2x200x32xf16>
  %o, %l = flash.attention %q, %k, %v scale = 1.767766953e-01 causal
      : tensor<1x4x8x32xf16>, tensor<1x2x200x32xf16>, tensor<1x2x200x32xf16>
      -> tensor<1x4x8x32xf16>, tensor<1x4x8xf32>
  bufferization.materialize_in_destination %o in restrict writable %om
      : (tensor<1x4x8x32xf16>, memref<1x4x8x32xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %lm
      : (tensor<1x4x8xf32>, memref<1x4x8xf32, strided<[?, ?, 1], offset: ?>>) -> ()
  return
}

//===----------------------------------------------------------------------===//
// Stopping at the tiled tensor level.
//===----------------------------------------------------------------------===//

// The graph is fused, rewritten online, tiled and its causal loop bounded
// to the blocks its rows see: for the CPU one loop of masked steps, for a
// GPU split into the blocks seen in full (unmasked) and the diagonal ones.
// TILED-LABEL: func.func @naive
// TILED-SAME: -> tensor<1x2x32x16xf32>
// TILED-NOT: flash.matmul
// TILED-NOT: flash.softmax
// TILED-NOT: flash.attention {{.+}}:
// TILED: %[[R:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (2, 2) shared_outs
// TILED: scf.for
// TILED: flash.attention_step {{.+}} mask(
// TILED: } {flash.kv_loop}
// TILED-NOT: scf.for
// TILED: flash.finalize
// TILED: tensor.parallel_insert_slice
// TILED: } {flash.tile_loop}
// TILED-NEXT: return %[[R]]

// TILED-GPU-LABEL: func.func @naive
// TILED-GPU: scf.forall
// TILED-GPU: scf.for
// TILED-GPU: flash.attention_step ins({{[^)]+}}) outs(
// TILED-GPU: } {flash.kv_loop}
// TILED-GPU: scf.for
// TILED-GPU: flash.attention_step {{.+}} mask(
// TILED-GPU: } {flash.kv_loop}
// TILED-GPU: flash.finalize

//--- tensor.mlir
func.func @naive(%q: tensor<1x2x32x16xf32>, %k: tensor<1x2x48x16xf32>,
                 %v: tensor<1x2x48x16xf32>) -> tensor<1x2x32x16xf32> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<1x2x32x16xf32>, tensor<1x2x48x16xf32> -> tensor<1x2x32x48xf32>
  %p = flash.softmax %s scale = 0.25 causal : tensor<1x2x32x48xf32> -> tensor<1x2x32x48xf32>
  %o = flash.matmul %p, %v
      : tensor<1x2x32x48xf32>, tensor<1x2x48x16xf32> -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}
