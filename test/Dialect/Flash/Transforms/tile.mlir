// Tests of flash-tile on the online form built by flash-online-softmax. The
// inputs are the parts below the `//---` markers, written out by split-file.
// Sizes the target derives are checked only where they are deterministic
// (GPU targets, or an explicit sram-bytes): the CPU default depends on the
// host's L2 cache.
//
// RUN: split-file %s %t
//
// FA2 order with explicit blocks, multi-head attention.
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax --flash-tile="block-q=32 block-kv=64" \
// RUN:   | FileCheck %s --check-prefix=MHA
//
// GQA (G = 4) packed into one tile, causal, with tails in Nq and Nk.
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=64" \
// RUN:   | FileCheck %s --check-prefix=GQA
//
// Dynamic batch and sequence lengths, with the log-sum-exp.
// RUN: flashc-opt %t/dynamic.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=32" \
// RUN:   | FileCheck %s --check-prefix=DYN
//
// Sizes from the target (see chooseTileSizes in AttentionSchedule.cpp).
// sm_80, f16, D = 64, G = 4: the GPU kernels' prefill tile of 64 packed
// rows (4 warps x 16) gives Br = 64 / 4 = 16, and Bc = 128 for D <= 64
// (flashc::chooseGPUTiles).
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax --flash-tile="target=sm_80" \
// RUN:   | FileCheck %s --check-prefix=SM80
// With wide-warps (the flash_tile path's kernels, 32 rows per warp up to
// D = 64): 128 packed rows, Br = 128 / 4 = 32, Bc = 64.
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax --flash-tile="target=sm_80 wide-warps=1" \
// RUN:   | FileCheck %s --check-prefix=WIDE
// sm_80, f16, D = 64, G = 4, one query: the decode tile of 4 rows a head
// and 4 kv warps x 64 keys (Bc = 256) fits 2 stages of K and V (2 x 2 x
// 256 x 72 x 2 bytes); 3 stages do not, and the block is halved to 128.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80 wide-warps=1" \
// RUN:   | FileCheck %s --check-prefix=DECODE2
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80 wide-warps=1 stages=3" \
// RUN:   | FileCheck %s --check-prefix=DECODE3
// RUN: not flashc-opt %t/decode.mlir --flash-tile="stages=5" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-STAGES
// BAD-STAGES: error: flash-tile: stages is 2 to 4, not 5
// DECODE2-LABEL: func.func @decode
// DECODE2: scf.for %{{.+}} = %c0 to %c4096 step %c256
// DECODE3-LABEL: func.func @decode
// DECODE3: scf.for %{{.+}} = %c0 to %c4096 step %c128
// A decode kernel for tensors aligned to an element only copies element
// by element (a load and a store each, where cp.async copies 4 bytes and
// more): 16 keys a kv warp, 64 a block. At 4 bytes, cp.async: 256 still.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80 wide-warps=1 alignment=2" \
// RUN:   | FileCheck %s --check-prefix=DECODE-A2
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_80 wide-warps=1 alignment=4" \
// RUN:   | FileCheck %s --check-prefix=DECODE2
// RUN: not flashc-opt %t/decode.mlir --flash-tile="alignment=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ALIGN
// BAD-ALIGN: error: flash-tile: alignment is 16, 8, 4 or 2 bytes, not 3
// DECODE-A2-LABEL: func.func @decode
// DECODE-A2: scf.for %{{.+}} = %c0 to %c4096 step %c64
// CPU with 64 KiB: M = 65536 / 4 = 16384 f32 elements; Br = 64;
// Bc = (16384 - 2*64*64) / (2*64 + 64) = 42 -> 32.
// RUN: flashc-opt %t/sram.mlir --flash-online-softmax --flash-tile="target=cpu sram-bytes=65536" \
// RUN:   | FileCheck %s --check-prefix=SRAM-CPU
// sm_80 with 64 KiB and f32 operands (4 bytes): the GPU kernels' tiles
// (Br = 64 rows, Bc = 128 keys for D = 64) need 16 KiB for Q and
// 2 stages x 2 x Bc x 64 x 4 bytes for K and V, so Bc halves to 32
// (16 + 32 KiB) to fit.
// RUN: flashc-opt %t/sram.mlir --flash-online-softmax --flash-tile="target=sm_80 sram-bytes=65536" \
// RUN:   | FileCheck %s --check-prefix=SRAM-SM80
// sm_90a, D = 192, 150000 bytes: the warpgroup MMAs' rows are unpadded (Q
// 128 x 192 x 2 = 48 KiB, 2 stages x 2 x 64 x 192 x 2 = 96 KiB, and 1096
// bytes of alignment and mbarriers), so Bc = 64 fits; mma.sync kernels
// (warpgroup-mma=0) pad a row by a 16-byte chunk to 200 elements (50 KiB +
// 100 KiB), and Bc halves to 32.
// RUN: flashc-opt %t/wide.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_90a wide-warps=1 sram-bytes=150000" \
// RUN:   | FileCheck %s --check-prefix=SRAM-WGMMA
// RUN: flashc-opt %t/wide.mlir --flash-online-softmax \
// RUN:   --flash-tile="target=sm_90a wide-warps=1 sram-bytes=150000 warpgroup-mma=0" \
// RUN:   | FileCheck %s --check-prefix=SRAM-MMA-SYNC
// Explicit sizes override the target's.
// RUN: flashc-opt %t/sram.mlir --flash-online-softmax --flash-tile="target=sm_80 sram-bytes=65536 block-q=8 block-kv=48" \
// RUN:   | FileCheck %s --check-prefix=SRAM-EXPLICIT
//
// Algorithm-1 order; sm_80: Bc = ceil(83456 / (4*64)) = 326, Br = min(326, 64).
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax --flash-tile="loop-order=algorithm1 target=sm_80" \
// RUN:   | FileCheck %s --check-prefix=ALG1
// `alg1` is accepted as a short name.
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax --flash-tile="loop-order=alg1 block-q=16 block-kv=64" \
// RUN:   | FileCheck %s --check-prefix=ALG1-EXPLICIT
//
// Input that is not the online form is left unchanged.
// RUN: flashc-opt %t/unchanged.mlir --flash-tile="block-q=16 block-kv=16" \
// RUN:   | FileCheck %s --check-prefix=UNCHANGED
//
// Bad options.
// RUN: not flashc-opt %t/mha.mlir --flash-tile="target=sm_99" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TARGET
// RUN: not flashc-opt %t/mha.mlir --flash-tile="loop-order=fa3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ORDER
// RUN: not flashc-opt %t/mha.mlir --flash-tile="block-q=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SIZE
// RUN: not flashc-opt %t/mha.mlir --flash-tile="block-kv=-16" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-KV
// RUN: not flashc-opt %t/mha.mlir --flash-tile="sram-bytes=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SRAM
// Dynamic head counts (hand-written online IR; flash.attention's verifier
// forbids them) are a diagnostic, not INT64_MIN loop bounds.
// RUN: flashc-opt %t/dynamic-heads.mlir --flash-tile -verify-diagnostics
// Tiles are compile-time buffers: absurd block sizes are rejected.
// RUN: not flashc-opt %t/mha.mlir --flash-tile="block-kv=9223372036854775807" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE-KV
// A run-time scale factor is carried to the tiled steps.
// RUN: flashc-opt %t/scale-factor.mlir --flash-online-softmax --flash-tile="block-q=16 block-kv=32" \
// RUN:   | FileCheck %s --check-prefix=FACTOR
// RUN: not flashc-opt %t/mha.mlir --flash-tile="block-q=65537" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE-Q

// BAD-TARGET: error: flash-tile: unknown target 'sm_99'; known targets: cpu, sm_80, sm_90a
// BAD-ORDER: error: flash-tile: unknown loop-order 'fa3'; expected fa2 or algorithm1
// BAD-SIZE: error: flash-tile: sram-bytes, block-q and block-kv must be non-negative, got 0, -1, 0{{$}}
// BAD-KV: error: flash-tile: sram-bytes, block-q and block-kv must be non-negative, got 0, 0, -16{{$}}
// BAD-SRAM: error: flash-tile: sram-bytes, block-q and block-kv must be non-negative, got -1, 0, 0{{$}}
// HUGE-KV: error: flash-tile: block-kv must be from 0 to 65536, got 9223372036854775807{{$}}
// HUGE-Q: error: flash-tile: block-q must be from 0 to 65536, got 65537{{$}}

//===----------------------------------------------------------------------===//
// FA2 order.
//===----------------------------------------------------------------------===//

// MHA-LABEL: func.func @mha
// MHA-SAME: (%[[Q:.+]]: tensor<1x4x128x64xf32>, %[[K:.+]]: tensor<1x4x256x64xf32>, %[[V:.+]]: tensor<1x4x256x64xf32>)
// The shared output is the head-major [B, Hq, Nq, Dv] result itself.
// MHA: %[[OUT:.+]] = tensor.empty() : tensor<1x4x128x64xf32>
// The parallel space (B, Hkv, ceil(Nq / Br)).
// MHA: %[[BR:.+]] = arith.constant 32 : index
// MHA-NEXT: %[[NQ:.+]] = arith.constant 128 : index
// MHA-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// MHA-NEXT: %[[R:.+]] = scf.forall (%[[B:.+]], %[[H:.+]], %[[QI:.+]]) in (1, 4, %[[TQ]]) shared_outs(%[[SOUT:.+]] = %[[OUT]]) -> (tensor<1x4x128x64xf32>) {
// The Q block [q0, q0 + br) with br = min(Br, Nq - q0).
// MHA: %[[Q0:.+]] = arith.muli %[[QI]], %{{.+}} : index
// MHA: %[[QREST:.+]] = arith.subi %{{.+}}, %[[Q0]] : index
// MHA: %[[QBR:.+]] = arith.minsi %{{.+}}, %[[QREST]] : index
// The first query head of the group: h * G with G = 1.
// MHA: %[[HEAD:.+]] = arith.muli %[[H]], %{{.+}} : index
// MHA: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 1, %[[QBR]], 64] [1, 1, 1, 1] : tensor<1x4x128x64xf32> to tensor<1x?x64xf32>
// Tile-sized f32 state.
// MHA: %[[ACC0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
// MHA: %[[M0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x?xf32>) -> tensor<1x?xf32>
// MHA: %[[L0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x?xf32>) -> tensor<1x?xf32>
// The KV loop over blocks of Bc = 64 keys, run to the end in the work item.
// MHA: %[[BC:.+]] = arith.constant 64 : index
// MHA: %[[NK:.+]] = arith.constant 256 : index
// MHA: %[[S:.+]]:3 = scf.for %[[J:.+]] = %{{.+}} to %[[NK]] step %[[BC]] iter_args(%{{.+}} = %[[ACC0]], %{{.+}} = %[[M0]], %{{.+}} = %[[L0]]) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
// MHA: %[[N:.+]] = arith.minsi %[[BC]], %{{.+}} : index
// MHA: %[[KB:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %[[N]], 64] [1, 1, 1, 1] : tensor<1x4x256x64xf32> to tensor<?x64xf32>
// MHA: %[[VB:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %[[N]], 64] [1, 1, 1, 1] : tensor<1x4x256x64xf32> to tensor<?x64xf32>
// MHA: flash.attention_step ins(%[[QT]], %[[KB]], %[[VB]] : tensor<1x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs({{.+}}) scale = 1.250000e-01
// MHA: } {flash.kv_loop}
// Finalize into the work item's slice of the output.
// MHA: %[[OT:.+]] = tensor.extract_slice %[[SOUT]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 1, %[[QBR]], 64] [1, 1, 1, 1] : tensor<1x4x128x64xf32> to tensor<1x?x64xf32>
// MHA: %[[F:.+]] = flash.finalize ins(%[[S]]#0, %[[S]]#1, %[[S]]#2 : {{.+}}) outs(%[[OT]] : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
// MHA: scf.forall.in_parallel {
// MHA-NEXT: tensor.parallel_insert_slice %[[F]] into %[[SOUT]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 1, %[[QBR]], 64] [1, 1, 1, 1] : tensor<1x?x64xf32> into tensor<1x4x128x64xf32>
// MHA-NEXT: }
// MHA-NEXT: } {flash.tile_loop}
// No reshape between the loop and the result; one finalize only.
// MHA-NEXT: return %[[R]] : tensor<1x4x128x64xf32>
// MHA-NOT: flash.finalize
// MHA-NOT: tensor.collapse_shape

//--- mha.mlir
func.func @mha(%q: tensor<1x4x128x64xf32>, %k: tensor<1x4x256x64xf32>,
               %v: tensor<1x4x256x64xf32>) -> tensor<1x4x128x64xf32> {
  %o = flash.attention %q, %k, %v scale = 0.125
      : tensor<1x4x128x64xf32>, tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>
      -> tensor<1x4x128x64xf32>
  return %o : tensor<1x4x128x64xf32>
}

// 8 query heads on 2 KV heads: each work item packs the 4 heads of its group
// into one [4, br, D] tile, read straight from the head-major query.
// GQA-LABEL: func.func @gqa
// GQA-SAME: (%[[Q:.+]]: tensor<2x8x100x64xf16>, %[[K:.+]]: tensor<2x2x1000x64xf16>, %[[V:.+]]: tensor<2x2x1000x32xf16>)
// GQA: %[[OUT:.+]] = tensor.empty() : tensor<2x8x100x32xf16>
// GQA: %[[DIAG:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// GQA: %[[BR:.+]] = arith.constant 16 : index
// GQA-NEXT: %[[NQ:.+]] = arith.constant 100 : index
// GQA-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// GQA-NEXT: %[[R:.+]] = scf.forall (%[[B:.+]], %[[H:.+]], %[[QI:.+]]) in (2, 2, %[[TQ]]) shared_outs(%[[SOUT:.+]] = %[[OUT]]) -> (tensor<2x8x100x32xf16>) {
// GQA: %[[Q0:.+]] = arith.muli %[[QI]], %{{.+}} : index
// GQA: %[[QBR:.+]] = arith.minsi
// GQA: %[[G:.+]] = arith.constant 4 : index
// GQA-NEXT: %[[HEAD:.+]] = arith.muli %[[H]], %[[G]] : index
// GQA-NEXT: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 4, %[[QBR]], 64] [1, 1, 1, 1] : tensor<2x8x100x64xf16> to tensor<4x?x64xf16>
// GQA: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x?x32xf32>)
// GQA: %[[BC:.+]] = arith.constant 64 : index
// The causal offset of the Q block at key 0: (Nk - Nq) + q0.
// GQA: %[[BASE:.+]] = arith.addi %[[DIAG]], %[[Q0]] : index
// GQA: %[[S:.+]]:3 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// GQA: %[[KB:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<2x2x1000x64xf16> to tensor<?x64xf16>
// GQA: %[[VB:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %{{.+}}, 32] [1, 1, 1, 1] : tensor<2x2x1000x32xf16> to tensor<?x32xf16>
// GQA: %[[OFF:.+]] = arith.subi %[[BASE]], %[[J]] : index
// GQA: flash.attention_step ins(%[[QT]], %[[KB]], %[[VB]] : tensor<4x?x64xf16>, tensor<?x64xf16>, tensor<?x32xf16>) mask(%[[OFF]]) outs(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4x?x32xf32>, tensor<4x?xf32>, tensor<4x?xf32>) scale = 1.250000e-01
// GQA: } {flash.kv_loop}
// GQA: %[[OT:.+]] = tensor.extract_slice %[[SOUT]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 4, %[[QBR]], 32] [1, 1, 1, 1] : tensor<2x8x100x32xf16> to tensor<4x?x32xf16>
// GQA: %[[F:.+]] = flash.finalize ins(%[[S]]#0, %[[S]]#1, %[[S]]#2 : tensor<4x?x32xf32>, tensor<4x?xf32>, tensor<4x?xf32>) outs(%[[OT]] : tensor<4x?x32xf16>) -> tensor<4x?x32xf16>
// GQA: tensor.parallel_insert_slice %[[F]] into %[[SOUT]][%[[B]], %[[HEAD]], %[[Q0]], 0] [1, 4, %[[QBR]], 32] [1, 1, 1, 1] : tensor<4x?x32xf16> into tensor<2x8x100x32xf16>
// GQA: } {flash.tile_loop}
// GQA-NEXT: return %[[R]]

// WIDE-LABEL: func.func @gqa
// WIDE: %[[BR:.+]] = arith.constant 32 : index
// WIDE-NEXT: %[[NQ:.+]] = arith.constant 100 : index
// WIDE-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// WIDE-NEXT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 2, %[[TQ]])
// WIDE: tensor.extract_slice %{{.+}} : tensor<2x8x100x64xf16> to tensor<4x?x64xf16>
// WIDE: %[[BC:.+]] = arith.constant 64 : index

// SM80-LABEL: func.func @gqa
// SM80: %[[BR:.+]] = arith.constant 16 : index
// SM80-NEXT: %[[NQ:.+]] = arith.constant 100 : index
// SM80-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// SM80-NEXT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 2, %[[TQ]])
// SM80: tensor.extract_slice %{{.+}} : tensor<2x8x100x64xf16> to tensor<4x?x64xf16>
// SM80: linalg.fill
// SM80: %[[BC:.+]] = arith.constant 128 : index
// SM80: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// SM80: } {flash.kv_loop}
// SM80: } {flash.tile_loop}

//===----------------------------------------------------------------------===//
// Algorithm-1 order.
//===----------------------------------------------------------------------===//

// A sequential loop over KV blocks carries the full-size [B, Hkv, G, Nq, *]
// state; inside it an untagged scf.forall over (B, Hkv, ceil(Nq / Br))
// updates one tile of that state; the finalize stays after the loop.
// ALG1-LABEL: func.func @gqa
// ALG1-SAME: (%[[Q:.+]]: tensor<2x8x100x64xf16>, %[[K:.+]]: tensor<2x2x1000x64xf16>, %[[V:.+]]: tensor<2x2x1000x32xf16>)
// ALG1: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{.+}} into tensor<2x2x4x100x64xf16>
// ALG1: %[[ACC0:.+]] = linalg.fill {{.+}} -> tensor<2x2x4x100x32xf32>
// ALG1: %[[M0:.+]] = linalg.fill {{.+}} -> tensor<2x2x4x100xf32>
// ALG1: %[[L0:.+]] = linalg.fill {{.+}} -> tensor<2x2x4x100xf32>
// ALG1: %[[BC:.+]] = arith.constant 326 : index
// ALG1: %[[BR:.+]] = arith.constant 64 : index
// ALG1-NEXT: %[[NQ:.+]] = arith.constant 100 : index
// ALG1-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// ALG1-NEXT: %[[S:.+]]:3 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %[[BC]] iter_args(%[[ACC:.+]] = %[[ACC0]], %[[M:.+]] = %[[M0]], %[[L:.+]] = %[[L0]]) -> (tensor<2x2x4x100x32xf32>, tensor<2x2x4x100xf32>, tensor<2x2x4x100xf32>) {
// ALG1: %[[N:.+]] = arith.minsi %[[BC]], %{{.+}} : index
// ALG1: %[[P:.+]]:3 = scf.forall (%[[B:.+]], %[[H:.+]], %[[QI:.+]]) in (2, 2, %[[TQ]]) shared_outs(%[[SACC:.+]] = %[[ACC]], %[[SM:.+]] = %[[M]], %[[SL:.+]] = %[[L]])
// ALG1: %[[Q0:.+]] = arith.muli %[[QI]], %{{.+}} : index
// ALG1: %[[QBR:.+]] = arith.minsi
// ALG1: %[[QT:.+]] = tensor.extract_slice %[[QE]][%[[B]], %[[H]], 0, %[[Q0]], 0] [1, 1, 4, %[[QBR]], 64] [1, 1, 1, 1, 1] : tensor<2x2x4x100x64xf16> to tensor<4x?x64xf16>
// ALG1: %[[AT:.+]] = tensor.extract_slice %[[SACC]][%[[B]], %[[H]], 0, %[[Q0]], 0] [1, 1, 4, %[[QBR]], 32] [1, 1, 1, 1, 1] : tensor<2x2x4x100x32xf32> to tensor<4x?x32xf32>
// ALG1: %[[MT:.+]] = tensor.extract_slice %[[SM]][%[[B]], %[[H]], 0, %[[Q0]]] [1, 1, 4, %[[QBR]]] [1, 1, 1, 1] : tensor<2x2x4x100xf32> to tensor<4x?xf32>
// ALG1: %[[LT:.+]] = tensor.extract_slice %[[SL]][%[[B]], %[[H]], 0, %[[Q0]]] [1, 1, 4, %[[QBR]]] [1, 1, 1, 1] : tensor<2x2x4x100xf32> to tensor<4x?xf32>
// ALG1: %[[KB:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %[[N]], 64] [1, 1, 1, 1] : tensor<2x2x1000x64xf16> to tensor<?x64xf16>
// ALG1: %[[VB:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[H]], %[[J]], 0] [1, 1, %[[N]], 32] [1, 1, 1, 1] : tensor<2x2x1000x32xf16> to tensor<?x32xf16>
// ALG1: %[[U:.+]]:3 = flash.attention_step ins(%[[QT]], %[[KB]], %[[VB]] : {{.+}}) mask(%{{.+}}) outs(%[[AT]], %[[MT]], %[[LT]] : tensor<4x?x32xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
// ALG1: scf.forall.in_parallel {
// ALG1-NEXT: tensor.parallel_insert_slice %[[U]]#0 into %[[SACC]][%[[B]], %[[H]], 0, %[[Q0]], 0] [1, 1, 4, %[[QBR]], 32]
// ALG1-NEXT: tensor.parallel_insert_slice %[[U]]#1 into %[[SM]][%[[B]], %[[H]], 0, %[[Q0]]] [1, 1, 4, %[[QBR]]]
// ALG1-NEXT: tensor.parallel_insert_slice %[[U]]#2 into %[[SL]][%[[B]], %[[H]], 0, %[[Q0]]] [1, 1, 4, %[[QBR]]]
// ALG1-NEXT: }
// The parallel loop is not tagged: flash.tile_loop marks the FA2 order only.
// ALG1-NEXT: {{^ +}}}{{$}}
// ALG1-NEXT: scf.yield %[[P]]#0, %[[P]]#1, %[[P]]#2
// ALG1-NEXT: } {flash.kv_loop}
// ALG1: %[[F:.+]] = flash.finalize ins(%[[S]]#0, %[[S]]#1, %[[S]]#2 : tensor<2x2x4x100x32xf32>, tensor<2x2x4x100xf32>, tensor<2x2x4x100xf32>) outs(%{{.+}} : tensor<2x2x4x100x32xf16>)
// ALG1: %[[O:.+]] = tensor.collapse_shape %[[F]] {{.+}} into tensor<2x8x100x32xf16>
// ALG1-NEXT: return %[[O]]

// ALG1-EXPLICIT-LABEL: func.func @gqa
// ALG1-EXPLICIT: %[[BC:.+]] = arith.constant 64 : index
// ALG1-EXPLICIT: %[[BR:.+]] = arith.constant 16 : index
// ALG1-EXPLICIT-NEXT: %[[NQ:.+]] = arith.constant 100 : index
// ALG1-EXPLICIT-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// ALG1-EXPLICIT-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// ALG1-EXPLICIT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 2, %[[TQ]])
// ALG1-EXPLICIT: flash.attention_step
// ALG1-EXPLICIT: } {flash.kv_loop}
// ALG1-EXPLICIT: flash.finalize

//--- gqa.mlir
func.func @gqa(%q: tensor<2x8x100x64xf16>, %k: tensor<2x2x1000x64xf16>,
               %v: tensor<2x2x1000x32xf16>) -> tensor<2x8x100x32xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<2x8x100x64xf16>, tensor<2x2x1000x64xf16>, tensor<2x2x1000x32xf16>
      -> tensor<2x8x100x32xf16>
  return %o : tensor<2x8x100x32xf16>
}

// DYN-LABEL: func.func @dynamic_lse
// DYN-SAME: (%[[Q:.+]]: tensor<?x8x?x64xbf16>, %[[K:.+]]: tensor<?x2x?x64xbf16>, %[[V:.+]]: tensor<?x2x?x64xbf16>)
// Both results are shared outputs in their head-major shapes.
// DYN: %[[OUT:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x8x?x64xbf16>
// DYN: %[[LSE:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x8x?xf32>
// DYN: %[[B:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x2x4x?x64xbf16>
// DYN: %[[NQ:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x2x4x?x64xbf16>
// DYN: %[[NK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x2x?x64xbf16>
// DYN: %[[BR:.+]] = arith.constant 16 : index
// DYN-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// DYN-NEXT: %[[R:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%[[B]], 2, %[[TQ]]) shared_outs(%[[SOUT:.+]] = %[[OUT]], %[[SLSE:.+]] = %[[LSE]]) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
// DYN: tensor.extract_slice %[[Q]]{{.+}} : tensor<?x8x?x64xbf16> to tensor<4x?x64xbf16>
// DYN: %[[BC:.+]] = arith.constant 32 : index
// DYN: %[[S:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[NK]] step %[[BC]] iter_args
// No mask without causal.
// DYN-NOT: mask(
// DYN: } {flash.kv_loop}
// DYN: %[[OT:.+]] = tensor.extract_slice %[[SOUT]]{{.+}} : tensor<?x8x?x64xbf16> to tensor<4x?x64xbf16>
// DYN: %[[LT:.+]] = tensor.extract_slice %[[SLSE]]{{.+}} : tensor<?x8x?xf32> to tensor<4x?xf32>
// DYN: %[[F:.+]]:2 = flash.finalize ins(%[[S]]#0, %[[S]]#1, %[[S]]#2 : {{.+}}) outs(%[[OT]], %[[LT]] : tensor<4x?x64xbf16>, tensor<4x?xf32>) -> tensor<4x?x64xbf16>, tensor<4x?xf32>
// DYN: scf.forall.in_parallel {
// DYN-NEXT: tensor.parallel_insert_slice %[[F]]#0 into %[[SOUT]]
// DYN-NEXT: tensor.parallel_insert_slice %[[F]]#1 into %[[SLSE]]
// DYN: } {flash.tile_loop}
// DYN-NEXT: return %[[R]]#0, %[[R]]#1

//--- decode.mlir
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x4096x64xf16>,
                  %v: tensor<1x2x4096x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x8x1x64xf16>, tensor<1x2x4096x64xf16>, tensor<1x2x4096x64xf16>
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

//--- dynamic.mlir
func.func @dynamic_lse(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                       %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %l = flash.attention %q, %k, %v
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %l : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// SRAM-CPU-LABEL: func.func @sram
// SRAM-CPU: %[[BR:.+]] = arith.constant 64 : index
// SRAM-CPU-NEXT: %[[NQ:.+]] = arith.constant 512 : index
// SRAM-CPU-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// SRAM-CPU-NEXT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %[[TQ]])
// SRAM-CPU: linalg.fill
// SRAM-CPU: %[[BC:.+]] = arith.constant 32 : index
// SRAM-CPU: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// SRAM-CPU: } {flash.tile_loop}

// SRAM-SM80-LABEL: func.func @sram
// SRAM-SM80: %[[BR:.+]] = arith.constant 64 : index
// SRAM-SM80-NEXT: %[[NQ:.+]] = arith.constant 512 : index
// SRAM-SM80-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// SRAM-SM80-NEXT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %[[TQ]])
// SRAM-SM80: linalg.fill
// SRAM-SM80: %[[BC:.+]] = arith.constant 32 : index
// SRAM-SM80: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// SRAM-SM80: } {flash.tile_loop}

// SRAM-EXPLICIT-LABEL: func.func @sram
// SRAM-EXPLICIT: %[[BR:.+]] = arith.constant 8 : index
// SRAM-EXPLICIT-NEXT: %[[NQ:.+]] = arith.constant 512 : index
// SRAM-EXPLICIT-NEXT: %[[TQ:.+]] = arith.ceildivsi %[[NQ]], %[[BR]] : index
// SRAM-EXPLICIT-NEXT: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, %[[TQ]])
// SRAM-EXPLICIT: linalg.fill
// SRAM-EXPLICIT: %[[BC:.+]] = arith.constant 48 : index
// SRAM-EXPLICIT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// SRAM-EXPLICIT: } {flash.tile_loop}

// SRAM-WGMMA-LABEL: func.func @wide
// SRAM-WGMMA: %[[BC:.+]] = arith.constant 64 : index
// SRAM-WGMMA: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args
// SRAM-MMA-SYNC-LABEL: func.func @wide
// SRAM-MMA-SYNC: %[[BC:.+]] = arith.constant 32 : index
// SRAM-MMA-SYNC: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BC]] iter_args

//--- wide.mlir
func.func @wide(%q: tensor<1x8x4096x192xf16>, %k: tensor<1x8x4096x192xf16>,
                %v: tensor<1x8x4096x192xf16>) -> tensor<1x8x4096x192xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x8x4096x192xf16>, tensor<1x8x4096x192xf16>,
        tensor<1x8x4096x192xf16> -> tensor<1x8x4096x192xf16>
  return %o : tensor<1x8x4096x192xf16>
}

//--- sram.mlir
func.func @sram(%q: tensor<1x2x512x64xf32>, %k: tensor<1x2x512x64xf32>,
                %v: tensor<1x2x512x64xf32>) -> tensor<1x2x512x64xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>
      -> tensor<1x2x512x64xf32>
  return %o : tensor<1x2x512x64xf32>
}

// A flash.attention that flash-online-softmax has not rewritten, and a loop
// without the flash.kv_loop tag, are not the online form.
// UNCHANGED-LABEL: func.func @not_online
// UNCHANGED-NEXT: %[[O:.+]] = flash.attention %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x1x32x16xf32>
// UNCHANGED-NEXT: return %[[O]]
// UNCHANGED-NOT: scf.forall

// UNCHANGED-LABEL: func.func @untagged_loop
// UNCHANGED-NOT: scf.forall
// UNCHANGED: %[[R:.+]]:3 = scf.for
// UNCHANGED: flash.attention_step
// UNCHANGED: scf.yield
// UNCHANGED-NEXT: {{^ +}}}{{$}}
// UNCHANGED-NEXT: flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2
// UNCHANGED-NOT: scf.forall

//--- unchanged.mlir
func.func @not_online(%q: tensor<1x1x32x16xf32>, %k: tensor<1x1x32x16xf32>,
                      %v: tensor<1x1x32x16xf32>) -> tensor<1x1x32x16xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32>
      -> tensor<1x1x32x16xf32>
  return %o : tensor<1x1x32x16xf32>
}

func.func @untagged_loop(%q: tensor<1x1x1x32x16xf32>, %k: tensor<1x1x32x16xf32>,
                         %v: tensor<1x1x32x16xf32>, %acc: tensor<1x1x1x32x16xf32>,
                         %m: tensor<1x1x1x32xf32>, %l: tensor<1x1x1x32xf32>,
                         %out: tensor<1x1x1x32x16xf32>) -> tensor<1x1x1x32x16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %r:3 = scf.for %j = %c0 to %c32 step %c16 iter_args(%a = %acc, %mm = %m, %ll = %l)
      -> (tensor<1x1x1x32x16xf32>, tensor<1x1x1x32xf32>, tensor<1x1x1x32xf32>) {
    %kb = tensor.extract_slice %k[0, 0, %j, 0] [1, 1, 16, 16] [1, 1, 1, 1]
        : tensor<1x1x32x16xf32> to tensor<1x1x16x16xf32>
    %vb = tensor.extract_slice %v[0, 0, %j, 0] [1, 1, 16, 16] [1, 1, 1, 1]
        : tensor<1x1x32x16xf32> to tensor<1x1x16x16xf32>
    %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x1x1x32x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>)
        outs(%a, %mm, %ll : tensor<1x1x1x32x16xf32>, tensor<1x1x1x32xf32>, tensor<1x1x1x32xf32>)
        scale = 0.25 -> tensor<1x1x1x32x16xf32>, tensor<1x1x1x32xf32>, tensor<1x1x1x32xf32>
    scf.yield %s#0, %s#1, %s#2 : tensor<1x1x1x32x16xf32>, tensor<1x1x1x32xf32>, tensor<1x1x1x32xf32>
  }
  %o = flash.finalize ins(%r#0, %r#1, %r#2 : tensor<1x1x1x32x16xf32>, tensor<1x1x1x32xf32>, tensor<1x1x1x32xf32>)
      outs(%out : tensor<1x1x1x32x16xf32>) -> tensor<1x1x1x32x16xf32>
  return %o : tensor<1x1x1x32x16xf32>
}

//--- dynamic-heads.mlir
func.func @dynamic_heads(%q: tensor<1x?x1x16x8xf32>, %k: tensor<1x?x16x8xf32>,
    %v: tensor<1x?x16x8xf32>, %acc: tensor<1x?x1x16x8xf32>,
    %m: tensor<1x?x1x16xf32>, %l: tensor<1x?x1x16xf32>,
    %out: tensor<1x?x1x16x8xf32>, %h: index) -> tensor<1x?x1x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  // expected-error @+1 {{flash-tile: head counts and head dims must be static, got query 'tensor<1x?x1x16x8xf32>' and value 'tensor<1x?x16x8xf32>'}}
  %r:3 = scf.for %i = %c0 to %c16 step %c16
      iter_args(%a = %acc, %mm = %m, %ll = %l)
      -> (tensor<1x?x1x16x8xf32>, tensor<1x?x1x16xf32>, tensor<1x?x1x16xf32>) {
    %ks = tensor.extract_slice %k[0, 0, %i, 0] [1, %h, 16, 8] [1, 1, 1, 1]
        : tensor<1x?x16x8xf32> to tensor<1x?x16x8xf32>
    %vs = tensor.extract_slice %v[0, 0, %i, 0] [1, %h, 16, 8] [1, 1, 1, 1]
        : tensor<1x?x16x8xf32> to tensor<1x?x16x8xf32>
    %s:3 = flash.attention_step ins(%q, %ks, %vs : tensor<1x?x1x16x8xf32>, tensor<1x?x16x8xf32>, tensor<1x?x16x8xf32>)
        outs(%a, %mm, %ll : tensor<1x?x1x16x8xf32>, tensor<1x?x1x16xf32>, tensor<1x?x1x16xf32>)
        scale = 0.35 -> tensor<1x?x1x16x8xf32>, tensor<1x?x1x16xf32>, tensor<1x?x1x16xf32>
    scf.yield %s#0, %s#1, %s#2 : tensor<1x?x1x16x8xf32>, tensor<1x?x1x16xf32>, tensor<1x?x1x16xf32>
  } {flash.kv_loop}
  %o = flash.finalize ins(%r#0, %r#1, %r#2 : tensor<1x?x1x16x8xf32>, tensor<1x?x1x16xf32>, tensor<1x?x1x16xf32>)
      outs(%out : tensor<1x?x1x16x8xf32>) -> tensor<1x?x1x16x8xf32>
  return %o : tensor<1x?x1x16x8xf32>
}

//--- scale-factor.mlir
// FACTOR-LABEL: func.func @scale_factor
// FACTOR-SAME: %[[S:[^:]+]]: f32
// FACTOR: scf.forall
// FACTOR: scf.for
// FACTOR: flash.attention_step {{.+}} scale = 2.500000e-01 scale_factor(%[[S]])
func.func @scale_factor(%q: tensor<1x2x40x16xf32>, %k: tensor<1x1x70x16xf32>,
                        %v: tensor<1x1x70x16xf32>, %s: f32) -> tensor<1x2x40x16xf32> {
  %o = flash.attention %q, %k, %v scale = 0.25 scale_factor(%s) causal
      : tensor<1x2x40x16xf32>, tensor<1x1x70x16xf32>, tensor<1x1x70x16xf32> -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
