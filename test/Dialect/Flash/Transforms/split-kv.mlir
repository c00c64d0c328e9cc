// Tests of flash-split-kv (flash-decoding) on the FA2 form built by
// flash-online-softmax and flash-tile. The inputs are the parts below the
// `//---` markers, written out by split-file.
//
// RUN: split-file %s %t
//
// Decode (Nq = 1, Nk = 1000 in blocks of 128 = 8 blocks), 4 splits.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-split-kv="splits=4" | FileCheck %s --check-prefix=DECODE
// More splits than KV blocks: capped at 8, one block each.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-split-kv="splits=100" | FileCheck %s --check-prefix=CAP
// One split, or a query longer than max-seq-q, leaves the IR unchanged.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-split-kv="splits=1" | FileCheck %s --check-prefix=UNSPLIT
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-split-kv="splits=4 max-seq-q=0" | FileCheck %s --check-prefix=UNSPLIT
//
// Prefill (Nq = 128 > max-seq-q = 16) is not split, unless max-seq-q allows.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-split-kv="splits=4" | FileCheck %s --check-prefix=PREFILL
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-split-kv="splits=4 max-seq-q=128" | FileCheck %s --check-prefix=PREFILL-SPLIT
//
// Dynamic batch and key length with the log-sum-exp; causal skipping after
// the split bounds each split's own range.
// RUN: flashc-opt %t/dynamic.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=64" \
// RUN:   --flash-split-kv="splits=3" | FileCheck %s --check-prefix=DYN
// RUN: flashc-opt %t/dynamic.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=64" \
// RUN:   --flash-split-kv="splits=3" --flash-causal-skip | FileCheck %s --check-prefix=DYN-SKIP
//
// The wave model on sm_80 picks 32 splits for the decode shape of
// report-cost.mlir (2 KV heads x 32 splits = 64 CTAs in one wave).
// RUN: flashc-opt %t/wave.mlir --flash-online-softmax --flash-tile="target=sm_80" \
// RUN:   --flash-split-kv="target=sm_80" | FileCheck %s --check-prefix=WAVE
//
// Bad options.
// RUN: not flashc-opt %t/decode.mlir --flash-split-kv="target=sm_99" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TARGET
// RUN: not flashc-opt %t/decode.mlir --flash-split-kv="splits=-2" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SPLITS
// RUN: not flashc-opt %t/decode.mlir --flash-split-kv="max-seq-q=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SEQ
// RUN: not flashc-opt %t/decode.mlir --flash-split-kv="splits=9223372036854775807" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE-SPLITS
// A finalize with an LSE result inside a forall with one shared output is
// not the structure flash-tile builds: left unchanged (the pass read past
// the forall's outputs here).
// RUN: flashc-opt %t/one-output.mlir --flash-split-kv="splits=2" \
// RUN:   | FileCheck %s --check-prefix=ONE-OUTPUT

// BAD-TARGET: error: flash-split-kv: unknown target 'sm_99'; known targets: cpu, sm_80, sm_90a
// BAD-SPLITS: error: flash-split-kv: splits and max-seq-q must be non-negative, got -2 and 16{{$}}
// BAD-SEQ: error: flash-split-kv: splits and max-seq-q must be non-negative, got 0 and -1{{$}}
// HUGE-SPLITS: error: flash-split-kv: splits must be from 0 to 65536, got 9223372036854775807{{$}}

//===----------------------------------------------------------------------===//
// Decode.
//===----------------------------------------------------------------------===//

// DECODE-LABEL: func.func @decode
// DECODE: %[[OUT:.+]] = tensor.empty() : tensor<1x8x1x64xf16>
// DECODE: %[[TQ:.+]] = arith.ceildivsi
// chunk = ceil(ceil(Nk / Bc) / S) * Bc keys per split.
// DECODE: %[[NK:.+]] = arith.constant 1000 : index
// DECODE-NEXT: %[[BC:.+]] = arith.constant 128 : index
// DECODE-NEXT: %[[S:.+]] = arith.constant 4 : index
// DECODE-NEXT: %[[BLOCKS:.+]] = arith.ceildivsi %[[NK]], %[[BC]] : index
// DECODE-NEXT: %[[PER:.+]] = arith.ceildivsi %[[BLOCKS]], %[[S]] : index
// DECODE-NEXT: %[[CHUNK:.+]] = arith.muli %[[PER]], %[[BC]] : index
// f32 partials with a leading split dimension.
// DECODE-NEXT: %[[PARTS:.+]] = tensor.empty() : tensor<4x1x8x1x64xf32>
// DECODE-NEXT: %[[PLSE:.+]] = tensor.empty() : tensor<4x1x8x1xf32>
// DECODE-NEXT: %[[R:.+]]:2 = scf.forall (%[[B:.+]], %[[H:.+]], %[[QI:.+]], %[[SI:.+]]) in (1, 2, %[[TQ]], 4) shared_outs(%[[SP:.+]] = %[[PARTS]], %[[SL:.+]] = %[[PLSE]]) -> (tensor<4x1x8x1x64xf32>, tensor<4x1x8x1xf32>) {
// Split s covers keys [s * chunk, min(Nk, (s + 1) * chunk)).
// DECODE-NEXT: %[[LO:.+]] = arith.muli %[[SI]], %[[CHUNK]] : index
// DECODE-NEXT: %[[LOC:.+]] = arith.addi %[[LO]], %[[CHUNK]] : index
// DECODE-NEXT: %[[HI:.+]] = arith.minsi %[[NK]], %[[LOC]] : index
// DECODE: %[[Q0:.+]] = arith.muli %[[QI]], %{{.+}} : index
// DECODE: %[[QBR:.+]] = arith.minsi
// DECODE: %[[HEAD:.+]] = arith.muli %[[H]], %{{.+}} : index
// DECODE: %[[QT:.+]] = tensor.extract_slice %{{.+}}[%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 4, %[[QBR]], 64]
// DECODE: %[[ST:.+]]:3 = scf.for %[[J:.+]] = %[[LO]] to %[[HI]] step %{{.+}} iter_args
// DECODE-NEXT: %[[REST:.+]] = arith.subi %[[HI]], %[[J]] : index
// DECODE: flash.attention_step ins(%[[QT]], {{.+}}) mask(%{{.+}}) outs(
// DECODE: } {flash.kv_loop}
// The split's partial output and log-sum-exp, in f32, behind index s.
// DECODE-NEXT: %[[PT:.+]] = tensor.extract_slice %[[SP]][%[[SI]], %[[B]], %[[HEAD]], %[[Q0]], 0] [1, 1, 4, %[[QBR]], 64] [1, 1, 1, 1, 1] : tensor<4x1x8x1x64xf32> to tensor<4x?x64xf32>
// DECODE-NEXT: %[[LT:.+]] = tensor.extract_slice %[[SL]][%[[SI]], %[[B]], %[[HEAD]], %[[Q0]]] [1, 1, 4, %[[QBR]]] [1, 1, 1, 1] : tensor<4x1x8x1xf32> to tensor<4x?xf32>
// DECODE-NEXT: %[[F:.+]]:2 = flash.finalize ins(%[[ST]]#0, %[[ST]]#1, %[[ST]]#2 : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) outs(%[[PT]], %[[LT]] : tensor<4x?x64xf32>, tensor<4x?xf32>) -> tensor<4x?x64xf32>, tensor<4x?xf32>
// DECODE-NEXT: scf.forall.in_parallel {
// DECODE-NEXT: tensor.parallel_insert_slice %[[F]]#0 into %[[SP]][%[[SI]], %[[B]], %[[HEAD]], %[[Q0]], 0] [1, 1, 4, %[[QBR]], 64] [1, 1, 1, 1, 1] : tensor<4x?x64xf32> into tensor<4x1x8x1x64xf32>
// DECODE-NEXT: tensor.parallel_insert_slice %[[F]]#1 into %[[SL]][%[[SI]], %[[B]], %[[HEAD]], %[[Q0]]] [1, 1, 4, %[[QBR]]] [1, 1, 1, 1] : tensor<4x?xf32> into tensor<4x1x8x1xf32>
// DECODE-NEXT: }
// DECODE-NEXT: } {flash.tile_loop}
// The partials are merged into the original output.
// DECODE-NEXT: %[[O:.+]] = flash.combine ins(%[[R]]#0, %[[R]]#1 : tensor<4x1x8x1x64xf32>, tensor<4x1x8x1xf32>) outs(%[[OUT]] : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
// DECODE-NEXT: return %[[O]] : tensor<1x8x1x64xf16>

// CAP-LABEL: func.func @decode
// CAP: %[[S:.+]] = arith.constant 8 : index
// CAP: arith.ceildivsi %{{.+}}, %[[S]] : index
// CAP: tensor.empty() : tensor<8x1x8x1x64xf32>
// CAP: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %{{.+}}, 8)
// CAP: flash.combine ins(%{{.+}}, %{{.+}} : tensor<8x1x8x1x64xf32>, tensor<8x1x8x1xf32>)

// UNSPLIT-LABEL: func.func @decode
// UNSPLIT: %[[OUT:.+]] = tensor.empty() : tensor<1x8x1x64xf16>
// UNSPLIT: %[[R:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %{{.+}}) shared_outs(%{{.+}} = %[[OUT]]) -> (tensor<1x8x1x64xf16>)
// UNSPLIT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// UNSPLIT: flash.finalize
// UNSPLIT-SAME: -> tensor<4x?x64xf16>
// UNSPLIT: } {flash.tile_loop}
// UNSPLIT-NEXT: return %[[R]]
// UNSPLIT-NOT: flash.combine

//--- decode.mlir
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x1000x64xf16>,
                  %v: tensor<1x2x1000x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x8x1x64xf16>, tensor<1x2x1000x64xf16>, tensor<1x2x1000x64xf16>
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

//===----------------------------------------------------------------------===//
// Prefill.
//===----------------------------------------------------------------------===//

// PREFILL-LABEL: func.func @prefill
// PREFILL: %[[R:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x4x128x32xf32>)
// PREFILL: } {flash.tile_loop}
// PREFILL-NEXT: return %[[R]]
// PREFILL-NOT: flash.combine

// PREFILL-SPLIT-LABEL: func.func @prefill
// PREFILL-SPLIT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}, 4) shared_outs(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x1x4x128x32xf32>, tensor<4x1x4x128xf32>)
// PREFILL-SPLIT: flash.combine

//--- prefill.mlir
func.func @prefill(%q: tensor<1x4x128x32xf32>, %k: tensor<1x4x512x32xf32>,
                   %v: tensor<1x4x512x32xf32>) -> tensor<1x4x128x32xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<1x4x128x32xf32>, tensor<1x4x512x32xf32>, tensor<1x4x512x32xf32>
      -> tensor<1x4x128x32xf32>
  return %o : tensor<1x4x128x32xf32>
}

//===----------------------------------------------------------------------===//
// Dynamic sizes and the log-sum-exp.
//===----------------------------------------------------------------------===//

// DYN-LABEL: func.func @dynamic_lse
// DYN-SAME: (%{{.+}}: tensor<?x4x1x32xbf16>, %[[K:.+]]: tensor<?x4x?x32xbf16>, %{{.+}}: tensor<?x4x?x32xbf16>)
// DYN: %[[OUT:.+]] = tensor.empty(%{{.+}}) : tensor<?x4x1x32xbf16>
// DYN-NEXT: %[[LSE:.+]] = tensor.empty(%{{.+}}) : tensor<?x4x1xf32>
// DYN: %[[NK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x4x?x32xbf16>
// Nk is not known: the split count is not capped.
// DYN: %[[S:.+]] = arith.constant 3 : index
// DYN-NEXT: %[[BLOCKS:.+]] = arith.ceildivsi %[[NK]], %{{.+}} : index
// DYN-NEXT: arith.ceildivsi %[[BLOCKS]], %[[S]] : index
// DYN: %[[PARTS:.+]] = tensor.empty(%{{.+}}) : tensor<3x?x4x1x32xf32>
// DYN: %[[PLSE:.+]] = tensor.empty(%{{.+}}) : tensor<3x?x4x1xf32>
// DYN-NEXT: %[[R:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 4, %{{.+}}, 3) shared_outs(%{{.+}} = %[[PARTS]], %{{.+}} = %[[PLSE]])
// DYN: %[[HI:.+]] = arith.minsi %[[NK]], %{{.+}} : index
// DYN: scf.for %{{.+}} = %{{.+}} to %[[HI]] step
// DYN: flash.finalize {{.+}} -> tensor<1x?x32xf32>, tensor<1x?xf32>
// DYN: } {flash.tile_loop}
// Both results come from the combine.
// DYN-NEXT: %[[O:.+]]:2 = flash.combine ins(%[[R]]#0, %[[R]]#1 : tensor<3x?x4x1x32xf32>, tensor<3x?x4x1xf32>) outs(%[[OUT]], %[[LSE]] : tensor<?x4x1x32xbf16>, tensor<?x4x1xf32>) -> tensor<?x4x1x32xbf16>, tensor<?x4x1xf32>
// DYN-NEXT: return %[[O]]#0, %[[O]]#1

// Each split's loop is split again into unmasked and diagonal blocks within
// [lo, hi).
// DYN-SKIP-LABEL: func.func @dynamic_lse
// DYN-SKIP: scf.forall
// DYN-SKIP: %[[LO:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// DYN-SKIP-NEXT: %[[LOC:.+]] = arith.addi %[[LO]], %{{.+}} : index
// DYN-SKIP-NEXT: %[[HI:.+]] = arith.minsi %{{.+}}, %[[LOC]] : index
// DYN-SKIP: %[[END:.+]] = arith.minsi %[[HI]], %{{.+}} : index
// DYN-SKIP: %[[ALL:.+]] = arith.cmpi sle, %[[HI]], %{{.+}} : index
// DYN-SKIP-NEXT: %[[FULL:.+]] = arith.select %[[ALL]], %[[END]], %{{.+}} : index
// DYN-SKIP-NEXT: scf.for %{{.+}} = %[[LO]] to %[[FULL]] step
// DYN-SKIP: flash.attention_step ins({{[^)]+}}) outs(
// DYN-SKIP: } {flash.kv_loop}
// DYN-SKIP-NEXT: scf.for %{{.+}} = %[[FULL]] to %[[END]] step
// DYN-SKIP: flash.attention_step {{.+}} mask(
// DYN-SKIP: } {flash.kv_loop}
// DYN-SKIP: flash.combine

//--- dynamic.mlir
func.func @dynamic_lse(%q: tensor<?x4x1x32xbf16>, %k: tensor<?x4x?x32xbf16>,
                       %v: tensor<?x4x?x32xbf16>)
    -> (tensor<?x4x1x32xbf16>, tensor<?x4x1xf32>) {
  %o, %l = flash.attention %q, %k, %v causal
      : tensor<?x4x1x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?x32xbf16>
      -> tensor<?x4x1x32xbf16>, tensor<?x4x1xf32>
  return %o, %l : tensor<?x4x1x32xbf16>, tensor<?x4x1xf32>
}

//===----------------------------------------------------------------------===//
// Split count from the wave model.
//===----------------------------------------------------------------------===//

// WAVE-LABEL: func.func @wave
// WAVE: %[[NK:.+]] = arith.constant 65536 : index
// WAVE-NEXT: %[[BC:.+]] = arith.constant 128 : index
// WAVE-NEXT: %[[S:.+]] = arith.constant 16 : index
// WAVE: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %{{.+}}, 16)
// WAVE: flash.combine ins(%{{.+}}, %{{.+}} : tensor<16x1x16x1x128xf32>, tensor<16x1x16x1xf32>) outs(%{{.+}} : tensor<1x16x1x128xf16>)

//--- wave.mlir
func.func @wave(%q: tensor<1x16x1x128xf16>, %k: tensor<1x2x65536x128xf16>,
                %v: tensor<1x2x65536x128xf16>) -> tensor<1x16x1x128xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x16x1x128xf16>, tensor<1x2x65536x128xf16>, tensor<1x2x65536x128xf16>
      -> tensor<1x16x1x128xf16>
  return %o : tensor<1x16x1x128xf16>
}

// ONE-OUTPUT-LABEL: func.func @one_output
// ONE-OUTPUT: scf.forall {{.*}} shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x1x1x8xf32>)
// ONE-OUTPUT-NOT: flash.combine
// ONE-OUTPUT: flash.finalize

//--- one-output.mlir
func.func @one_output(%arg0: tensor<1x1x1x8xf32>, %arg1: tensor<1x1x64x8xf32>, %arg2: tensor<1x1x64x8xf32>) -> (tensor<1x1x1x8xf32>, tensor<1x1x1xf32>) {
  %0 = tensor.empty() : tensor<1x1x1x8xf32>
  %1 = tensor.empty() : tensor<1x1x1xf32>
  %c1 = arith.constant 1 : index
  %c1_0 = arith.constant 1 : index
  %2 = arith.ceildivsi %c1_0, %c1 : index
  %3 = scf.forall (%arg3, %arg4, %arg5) in (1, 1, %2) shared_outs(%arg6 = %0) -> (tensor<1x1x1x8xf32>) {
    %c1_1 = arith.constant 1 : index
    %4 = arith.muli %arg5, %c1_1 : index
    %c1_2 = arith.constant 1 : index
    %5 = arith.subi %c1_2, %4 : index
    %6 = arith.minsi %c1_1, %5 : index
    %c1_3 = arith.constant 1 : index
    %7 = arith.muli %arg4, %c1_3 : index
    %extracted_slice = tensor.extract_slice %arg0[%arg3, %7, %4, 0] [1, 1, %6, 8] [1, 1, 1, 1] : tensor<1x1x1x8xf32> to tensor<1x?x8xf32>
    %8 = tensor.empty(%6) : tensor<1x?x8xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
    %10 = tensor.empty(%6) : tensor<1x?xf32>
    %cst_4 = arith.constant 0xFF800000 : f32
    %11 = linalg.fill ins(%cst_4 : f32) outs(%10 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12 = tensor.empty(%6) : tensor<1x?xf32>
    %cst_5 = arith.constant 0.000000e+00 : f32
    %13 = linalg.fill ins(%cst_5 : f32) outs(%12 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %14:3 = scf.for %arg8 = %c0 to %c64 step %c16 iter_args(%arg9 = %9, %arg10 = %11, %arg11 = %13) -> (tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %16 = arith.subi %c64, %arg8 : index
      %17 = arith.minsi %c16, %16 : index
      %extracted_slice_8 = tensor.extract_slice %arg1[%arg3, %arg4, %arg8, 0] [1, 1, %17, 8] [1, 1, 1, 1] : tensor<1x1x64x8xf32> to tensor<?x8xf32>
      %extracted_slice_9 = tensor.extract_slice %arg2[%arg3, %arg4, %arg8, 0] [1, 1, %17, 8] [1, 1, 1, 1] : tensor<1x1x64x8xf32> to tensor<?x8xf32>
      %18:3 = flash.attention_step ins(%extracted_slice, %extracted_slice_8, %extracted_slice_9 : tensor<1x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) outs(%arg9, %arg10, %arg11 : tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 0.353553385 -> tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %18#0, %18#1, %18#2 : tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %extracted_slice_6 = tensor.extract_slice %arg6[%arg3, %7, %4, 0] [1, 1, %6, 8] [1, 1, 1, 1] : tensor<1x1x1x8xf32> to tensor<1x?x8xf32>
    %extracted_slice_7 = tensor.extract_slice %1[%arg3, %7, %4] [1, 1, %6] [1, 1, 1] : tensor<1x1x1xf32> to tensor<1x?xf32>
    %15:2 = flash.finalize ins(%14#0, %14#1, %14#2 : tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%extracted_slice_6, %extracted_slice_7 : tensor<1x?x8xf32>, tensor<1x?xf32>) -> tensor<1x?x8xf32>, tensor<1x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %15#0 into %arg6[%arg3, %7, %4, 0] [1, 1, %6, 8] [1, 1, 1, 1] : tensor<1x?x8xf32> into tensor<1x1x1x8xf32>
    }
  } {flash.tile_loop}
  return %3, %1 : tensor<1x1x1x8xf32>, tensor<1x1x1xf32>
}
