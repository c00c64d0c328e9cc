// Tests of flash-causal-skip on the tiled (and untiled) online form. The
// inputs are the parts below the `//---` markers, written out by split-file.
//
// RUN: split-file %s %t
//
// Causal prefill, FA2 tiles of 64 rows x 64 keys.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=PREFILL
// With split-diagonal=never, or decode outside functions marked
// flash.decode (the CPU's pipeline): one bounded loop of masked steps.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-causal-skip=split-diagonal=never \
// RUN:   | FileCheck %s --check-prefix=BOUNDED
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-causal-skip=split-diagonal=decode \
// RUN:   | FileCheck %s --check-prefix=BOUNDED
// A function marked flash.decode is split with split-diagonal=decode.
// RUN: flashc-opt %t/decode-marked.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-causal-skip=split-diagonal=decode \
// RUN:   | FileCheck %s --check-prefix=DECODE
// With split-diagonal=prefill (the GPU's), a prefill loop is split and a
// loop over one KV split of a flash-decoding kernel (its tile loop's
// partial results merged by flash.combine) is only bounded; a decode whose
// KV loop was not split (no combine) is split as a prefill is.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-causal-skip=split-diagonal=prefill \
// RUN:   | FileCheck %s --check-prefix=PREFILL
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-split-kv="splits=4" \
// RUN:   --flash-causal-skip=split-diagonal=prefill \
// RUN:   | FileCheck %s --check-prefix=SPLIT-KV
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" \
// RUN:   --flash-causal-skip=split-diagonal=prefill \
// RUN:   | FileCheck %s --check-prefix=DECODE
// RUN: not flashc-opt %t/prefill.mlir \
// RUN:   --flash-causal-skip=split-diagonal=sometimes 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-SPLIT
// BAD-SPLIT: error: flash-causal-skip: split-diagonal must be always, decode, prefill or never, got 'sometimes'
// The same after canonicalization: the offset is still matched.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" --canonicalize --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=CANON
//
// The untiled loop of flash-online-softmax is split too; with constant
// bounds canonicalization shows the split point.
// RUN: flashc-opt %t/untiled.mlir --flash-online-softmax=block-kv=32 --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=UNTILED
// RUN: flashc-opt %t/untiled.mlir --flash-online-softmax=block-kv=32 --flash-causal-skip \
// RUN:   --canonicalize | FileCheck %s --check-prefix=UNTILED-FOLD
//
// Decode: one query row against a longer cache sees every key.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=DECODE
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-causal-skip --canonicalize \
// RUN:   | FileCheck %s --check-prefix=DECODE-FOLD
//
// Loops without a causal mask, or with a mask the pass cannot analyse, are
// left unchanged.
// RUN: flashc-opt %t/noncausal.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=NONCAUSAL
// RUN: flashc-opt %t/unknown-offset.mlir --flash-causal-skip \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN

//===----------------------------------------------------------------------===//
// Causal prefill.
//===----------------------------------------------------------------------===//

// With c = (Nk - Nq) + q0 the offset of the Q block at key 0 and Br rows:
// end = min(Nk, max(0, c + Br)), fullEnd = min(end, 0 + max(0, c + 1 - 0)
// floordiv Bc * Bc), or end when Nk <= c + 1.
// PREFILL-LABEL: func.func @prefill
// PREFILL: scf.forall
// PREFILL: %[[QT:.+]] = tensor.extract_slice %{{.+}} : tensor<1x2x256x32xf32> to tensor<1x?x32xf32>
// PREFILL: %[[ACC0:.+]] = linalg.fill
// PREFILL: %[[M0:.+]] = linalg.fill
// PREFILL: %[[L0:.+]] = linalg.fill
// PREFILL: %[[LB:.+]] = arith.constant 0 : index
// PREFILL-NEXT: %[[BC:.+]] = arith.constant 64 : index
// PREFILL-NEXT: %[[NK:.+]] = arith.constant 256 : index
// PREFILL-NEXT: %[[C:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// The rows of the Q tile bound the keys any row can see.
// PREFILL: %[[ROWS:.+]] = tensor.dim %[[QT]], %{{.+}} : tensor<1x?x32xf32>
// PREFILL: %[[REACH:.+]] = arith.addi %[[C]], %[[ROWS]] : index
// PREFILL-NEXT: %[[REACH0:.+]] = arith.maxsi %[[LB]], %[[REACH]] : index
// PREFILL-NEXT: %[[END:.+]] = arith.minsi %[[NK]], %[[REACH0]] : index
// PREFILL: arith.floordivsi %{{.+}}, %[[BC]] : index
// PREFILL: %[[PREFIX:.+]] = arith.minsi %[[END]], %{{.+}} : index
// PREFILL: %[[ALL:.+]] = arith.cmpi sle, %[[NK]], %{{.+}} : index
// PREFILL-NEXT: %[[FULL:.+]] = arith.select %[[ALL]], %[[END]], %[[PREFIX]] : index
// Fully visible blocks [0, fullEnd): no mask; the last block is clamped to
// fullEnd.
// PREFILL-NEXT: %[[R0:.+]]:3 = scf.for %[[J0:.+]] = %[[LB]] to %[[FULL]] step %[[BC]] iter_args(%{{.+}} = %[[ACC0]], %{{.+}} = %[[M0]], %{{.+}} = %[[L0]])
// PREFILL-NEXT: %[[REST0:.+]] = arith.subi %[[FULL]], %[[J0]] : index
// PREFILL-NEXT: %[[N0:.+]] = arith.minsi %[[BC]], %[[REST0]] : index
// PREFILL: tensor.extract_slice %{{.+}}[%{{.+}}, %{{.+}}, %[[J0]], 0] [1, 1, %[[N0]], 32]
// PREFILL-NOT: mask(
// PREFILL: flash.attention_step ins(%[[QT]], %{{.+}}, %{{.+}} : tensor<1x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) outs(
// PREFILL: } {flash.kv_loop}
// Diagonal blocks [fullEnd, end): the mask stays, the state flows on.
// PREFILL-NEXT: %[[R1:.+]]:3 = scf.for %[[J1:.+]] = %[[FULL]] to %[[END]] step %[[BC]] iter_args(%{{.+}} = %[[R0]]#0, %{{.+}} = %[[R0]]#1, %{{.+}} = %[[R0]]#2)
// PREFILL-NEXT: %[[REST1:.+]] = arith.subi %[[END]], %[[J1]] : index
// PREFILL-NEXT: %[[N1:.+]] = arith.minsi %[[BC]], %[[REST1]] : index
// PREFILL: tensor.extract_slice %{{.+}}[%{{.+}}, %{{.+}}, %[[J1]], 0] [1, 1, %[[N1]], 32]
// PREFILL: %[[OFF:.+]] = arith.subi %[[C]], %[[J1]] : index
// PREFILL-NEXT: flash.attention_step ins(%[[QT]], %{{.+}}, %{{.+}} : {{.+}}) mask(%[[OFF]]) outs(
// PREFILL: } {flash.kv_loop}
// PREFILL-NOT: scf.for %
// PREFILL: flash.finalize ins(%[[R1]]#0, %[[R1]]#1, %[[R1]]#2 :
// PREFILL: } {flash.tile_loop}

// Unsplit, the loop keeps its lower bound and its mask and ends at `end`:
// no prefix is computed.
// BOUNDED-LABEL: func.func @prefill
// BOUNDED: %[[QT:.+]] = tensor.extract_slice %{{.+}} : tensor<1x2x256x32xf32> to tensor<1x?x32xf32>
// BOUNDED: %[[ACC0:.+]] = linalg.fill
// BOUNDED: %[[M0:.+]] = linalg.fill
// BOUNDED: %[[L0:.+]] = linalg.fill
// BOUNDED: %[[LB:.+]] = arith.constant 0 : index
// BOUNDED-NEXT: %[[BC:.+]] = arith.constant 64 : index
// BOUNDED-NEXT: %[[NK:.+]] = arith.constant 256 : index
// BOUNDED-NEXT: %[[C:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// BOUNDED: %[[REACH:.+]] = arith.addi %[[C]], %{{.+}} : index
// BOUNDED-NEXT: %[[REACH0:.+]] = arith.maxsi %[[LB]], %[[REACH]] : index
// BOUNDED-NEXT: %[[END:.+]] = arith.minsi %[[NK]], %[[REACH0]] : index
// BOUNDED-NOT: arith.floordivsi
// BOUNDED-NEXT: %[[R:.+]]:3 = scf.for %[[J:.+]] = %[[LB]] to %[[END]] step %[[BC]] iter_args(%{{.+}} = %[[ACC0]], %{{.+}} = %[[M0]], %{{.+}} = %[[L0]])
// BOUNDED-NEXT: %[[REST:.+]] = arith.subi %[[END]], %[[J]] : index
// BOUNDED-NEXT: %[[N:.+]] = arith.minsi %[[BC]], %[[REST]] : index
// BOUNDED: tensor.extract_slice %{{.+}}[%{{.+}}, %{{.+}}, %[[J]], 0] [1, 1, %[[N]], 32]
// BOUNDED: %[[OFF:.+]] = arith.subi %[[C]], %[[J]] : index
// BOUNDED-NEXT: flash.attention_step ins(%[[QT]], %{{.+}}, %{{.+}} : {{.+}}) mask(%[[OFF]]) outs(
// BOUNDED: } {flash.kv_loop}
// BOUNDED-NOT: scf.for %
// BOUNDED: flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2 :
// BOUNDED: } {flash.tile_loop}

// CANON-LABEL: func.func @prefill
// CANON: scf.forall
// CANON: %[[Q0:.+]] = arith.muli
// CANON: arith.cmpi sle
// CANON: %[[R0:.+]]:3 = scf.for
// CANON-NOT: mask(
// CANON: } {flash.kv_loop}
// CANON-NEXT: %[[R1:.+]]:3 = scf.for %[[J1:.+]] = {{.+}} iter_args(%{{.+}} = %[[R0]]#0, %{{.+}} = %[[R0]]#1, %{{.+}} = %[[R0]]#2)
// Nq = Nk: the offset is q0 - j.
// CANON: %[[OFF:.+]] = arith.subi %[[Q0]], %[[J1]] : index
// CANON-NEXT: flash.attention_step {{.+}} mask(%[[OFF]])
// CANON: } {flash.kv_loop}
// CANON-NOT: scf.for %
// CANON: flash.finalize ins(%[[R1]]#0, %[[R1]]#1, %[[R1]]#2 :

//--- prefill.mlir
func.func @prefill(%q: tensor<1x2x256x32xf32>, %k: tensor<1x2x256x32xf32>,
                   %v: tensor<1x2x256x32xf32>) -> tensor<1x2x256x32xf32> {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>
      -> tensor<1x2x256x32xf32>
  return %o : tensor<1x2x256x32xf32>
}

// Untiled: Nq = 64 rows against Nk = 96 keys, blocks of 32; c = 96 - 64 = 32.
// UNTILED-LABEL: func.func @untiled
// UNTILED: %[[R0:.+]]:3 = scf.for
// UNTILED-NOT: mask(
// UNTILED: } {flash.kv_loop}
// UNTILED-NEXT: %[[R1:.+]]:3 = scf.for {{.+}} iter_args(%{{.+}} = %[[R0]]#0, %{{.+}} = %[[R0]]#1, %{{.+}} = %[[R0]]#2)
// UNTILED: flash.attention_step {{.+}} mask(
// UNTILED: } {flash.kv_loop}
// UNTILED-NOT: scf.for %
// UNTILED: flash.finalize ins(%[[R1]]#0, %[[R1]]#1, %[[R1]]#2 :

// fullEnd = floor(33 / 32) * 32 = 32: the single unmasked block [0, 32) is
// folded out of its loop; keys [32, 96) keep the mask.
// UNTILED-FOLD-LABEL: func.func @untiled
// UNTILED-FOLD-DAG: %[[C32:.+]] = arith.constant 32 : index
// UNTILED-FOLD-DAG: %[[C96:.+]] = arith.constant 96 : index
// UNTILED-FOLD: flash.attention_step ins({{[^)]+}}) outs(
// UNTILED-FOLD: scf.for %{{.+}} = %[[C32]] to %[[C96]] step %[[C32]]
// UNTILED-FOLD: flash.attention_step {{.+}} mask(
// UNTILED-FOLD: } {flash.kv_loop}
// UNTILED-FOLD-NOT: scf.for %

//--- untiled.mlir
func.func @untiled(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x96x16xf32>,
                   %v: tensor<1x1x96x16xf32>) -> tensor<1x1x64x16xf32> {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x1x64x16xf32>, tensor<1x1x96x16xf32>, tensor<1x1x96x16xf32>
      -> tensor<1x1x64x16xf32>
  return %o : tensor<1x1x64x16xf32>
}

//===----------------------------------------------------------------------===//
// Decode.
//===----------------------------------------------------------------------===//

// Nq = 1, Nk = 1000: c = 999 and every key below Nk <= c + 1 is visible, so
// the select takes end (including the partial last block) for the unmasked
// loop and leaves the masked loop empty.
// DECODE-LABEL: func.func @decode
// DECODE: %[[BC:.+]] = arith.constant 128 : index
// DECODE-NEXT: %[[NK:.+]] = arith.constant 1000 : index
// DECODE-NEXT: %[[C:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// DECODE: %[[END:.+]] = arith.minsi %[[NK]], %{{.+}} : index
// DECODE: arith.floordivsi
// DECODE: %[[ONE:.+]] = arith.addi %[[C]], %{{.+}} : index
// DECODE-NEXT: %[[ALL:.+]] = arith.cmpi sle, %[[NK]], %[[ONE]] : index
// DECODE-NEXT: %[[FULL:.+]] = arith.select %[[ALL]], %[[END]], %{{.+}} : index
// DECODE-NEXT: scf.for %{{.+}} = %{{.+}} to %[[FULL]] step %[[BC]]
// DECODE-NOT: mask(
// DECODE: } {flash.kv_loop}
// DECODE-NEXT: scf.for %{{.+}} = %[[FULL]] to %[[END]] step %[[BC]]
// DECODE: mask(
// DECODE: } {flash.kv_loop}

// After folding, one unmasked loop over all 1000 keys remains.
// One loop over the split's visible blocks, every step masked.
// SPLIT-KV-LABEL: func.func @decode
// SPLIT-KV: scf.forall
// SPLIT-KV-NOT: arith.floordivsi
// SPLIT-KV: scf.for
// SPLIT-KV: flash.attention_step {{.+}} mask(
// SPLIT-KV: } {flash.kv_loop}
// SPLIT-KV-NOT: scf.for %
// SPLIT-KV: flash.combine

// DECODE-FOLD-LABEL: func.func @decode
// DECODE-FOLD-DAG: %[[C0:.+]] = arith.constant 0 : index
// DECODE-FOLD-DAG: %[[BC:.+]] = arith.constant 128 : index
// DECODE-FOLD-DAG: %[[NK:.+]] = arith.constant 1000 : index
// DECODE-FOLD: scf.for %{{.+}} = %[[C0]] to %[[NK]] step %[[BC]]
// DECODE-FOLD-NOT: mask(
// DECODE-FOLD: } {flash.kv_loop}
// DECODE-FOLD-NOT: scf.for %
// DECODE-FOLD-NOT: mask(
// DECODE-FOLD: return

//--- decode.mlir
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x1000x64xf16>,
                  %v: tensor<1x2x1000x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x8x1x64xf16>, tensor<1x2x1000x64xf16>, tensor<1x2x1000x64xf16>
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

//--- decode-marked.mlir
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x1000x64xf16>,
                  %v: tensor<1x2x1000x64xf16>) -> tensor<1x8x1x64xf16>
    attributes {flash.decode} {
  %o = flash.attention %q, %k, %v causal
      : tensor<1x8x1x64xf16>, tensor<1x2x1000x64xf16>, tensor<1x2x1000x64xf16>
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

//===----------------------------------------------------------------------===//
// Left unchanged.
//===----------------------------------------------------------------------===//

// Exactly one KV loop, without a mask and without bound computations.
// NONCAUSAL-LABEL: func.func @noncausal
// NONCAUSAL: scf.forall
// NONCAUSAL-NOT: arith.cmpi
// NONCAUSAL-NOT: arith.select
// NONCAUSAL: %[[R:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// NONCAUSAL-NOT: mask(
// NONCAUSAL: } {flash.kv_loop}
// NONCAUSAL-NOT: scf.for %
// NONCAUSAL: flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2 :
// NONCAUSAL: } {flash.tile_loop}

//--- noncausal.mlir
func.func @noncausal(%q: tensor<1x2x256x32xf32>, %k: tensor<1x2x256x32xf32>,
                     %v: tensor<1x2x256x32xf32>) -> tensor<1x2x256x32xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>, tensor<1x2x256x32xf32>
      -> tensor<1x2x256x32xf32>
  return %o : tensor<1x2x256x32xf32>
}

// The mask offset is not `c - j` for a c defined outside the loop.
// UNKNOWN-LABEL: func.func @unknown_offset
// UNKNOWN-SAME: %[[OFF:[^:]+]]: index)
// UNKNOWN: %[[R:.+]]:3 = scf.for
// UNKNOWN: flash.attention_step {{.+}} mask(%[[OFF]])
// UNKNOWN: } {flash.kv_loop}
// UNKNOWN-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2
// UNKNOWN-NOT: arith.cmpi

//--- unknown-offset.mlir
func.func @unknown_offset(%q: tensor<2x16x8xf32>, %k: tensor<64x8xf32>, %v: tensor<64x8xf32>,
                          %acc: tensor<2x16x8xf32>, %m: tensor<2x16xf32>, %l: tensor<2x16xf32>,
                          %off: index)
    -> (tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %r:3 = scf.for %j = %c0 to %c64 step %c16 iter_args(%a = %acc, %mm = %m, %ll = %l)
      -> (tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
    %kb = tensor.extract_slice %k[%j, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %vb = tensor.extract_slice %v[%j, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
        mask(%off) outs(%a, %mm, %ll : tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>)
        scale = 0.35 -> tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>
    scf.yield %s#0, %s#1, %s#2 : tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  } {flash.kv_loop}
  return %r#0, %r#1, %r#2 : tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}
