// The statistics of flash-causal-skip on the inputs of causal-skip.mlir and
// split-kv.mlir: the loops it splits and keeps, and, where the bounds are
// known when compiling, the KV blocks that run unmasked, masked or not at
// all, summed over the tiles.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/causal-skip.mlir %t
// RUN: split-file %S/split-kv.mlir %t.split
//
// Prefill, Nq = Nk = 256 in 64 x 64 tiles, 2 heads: Q block i sees i
// blocks in full and 1 masked, and skips 3 - i; summed over i = 0..3 and
// the heads, 12 full, 8 masked, 12 skipped.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" --flash-causal-skip \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=PREFILL
// PREFILL: {{^ *}}FlashCausalSkip{{$}}
// PREFILL-NEXT: (S) 12 num-blocks-full -
// PREFILL-NEXT: (S) 8 num-blocks-masked -
// PREFILL-NEXT: (S) 12 num-blocks-skipped -
// PREFILL-NEXT: (S) 0 num-loops-bounded -
// PREFILL-NEXT: (S) 0 num-loops-kept -
// PREFILL-NEXT: (S) 1 num-loops-split -
//
// The same unsplit: the 12 blocks seen in full run masked too.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" \
// RUN:   --flash-causal-skip=split-diagonal=never \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOUNDED
// BOUNDED: {{^ *}}FlashCausalSkip{{$}}
// BOUNDED-NEXT: (S) 0 num-blocks-full -
// BOUNDED-NEXT: (S) 20 num-blocks-masked -
// BOUNDED-NEXT: (S) 12 num-blocks-skipped -
// BOUNDED-NEXT: (S) 1 num-loops-bounded -
// BOUNDED-NEXT: (S) 0 num-loops-kept -
// BOUNDED-NEXT: (S) 0 num-loops-split -
//
// Untiled, 64 rows against 96 keys in blocks of 32 (c = 32): [0, 32) in
// full, [32, 96) masked.
// RUN: flashc-opt %t/untiled.mlir --flash-online-softmax=block-kv=32 \
// RUN:   --flash-causal-skip -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNTILED
// UNTILED: {{^ *}}FlashCausalSkip{{$}}
// UNTILED-NEXT: (S) 1 num-blocks-full -
// UNTILED-NEXT: (S) 2 num-blocks-masked -
// UNTILED-NEXT: (S) 0 num-blocks-skipped -
// UNTILED-NEXT: (S) 0 num-loops-bounded -
// UNTILED-NEXT: (S) 0 num-loops-kept -
// UNTILED-NEXT: (S) 1 num-loops-split -
//
// Decode, one row against 1000 keys in blocks of 128, 2 KV heads: every
// block of each head in full, the partial last one included.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-causal-skip \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=DECODE
// DECODE: {{^ *}}FlashCausalSkip{{$}}
// DECODE-NEXT: (S) 16 num-blocks-full -
// DECODE-NEXT: (S) 0 num-blocks-masked -
// DECODE-NEXT: (S) 0 num-blocks-skipped -
// DECODE-NEXT: (S) 0 num-loops-bounded -
// DECODE-NEXT: (S) 0 num-loops-kept -
// DECODE-NEXT: (S) 1 num-loops-split -
//
// Dynamic sizes: the loop is split, its blocks are counted at run time.
// RUN: flashc-opt %t.split/dynamic.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=64" --flash-split-kv="splits=3" \
// RUN:   --flash-causal-skip -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DYNAMIC
// DYNAMIC: {{^ *}}FlashCausalSkip{{$}}
// DYNAMIC-NEXT: (S) 0 num-blocks-full -
// DYNAMIC-NEXT: (S) 0 num-blocks-masked -
// DYNAMIC-NEXT: (S) 0 num-blocks-skipped -
// DYNAMIC-NEXT: (S) 0 num-loops-bounded -
// DYNAMIC-NEXT: (S) 0 num-loops-kept -
// DYNAMIC-NEXT: (S) 1 num-loops-split -
//
// A mask offset the pass cannot analyse keeps its loop.
// RUN: flashc-opt %t/unknown-offset.mlir --flash-causal-skip \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: {{^ *}}FlashCausalSkip{{$}}
// UNKNOWN-NEXT: (S) 0 num-blocks-full -
// UNKNOWN-NEXT: (S) 0 num-blocks-masked -
// UNKNOWN-NEXT: (S) 0 num-blocks-skipped -
// UNKNOWN-NEXT: (S) 0 num-loops-bounded -
// UNKNOWN-NEXT: (S) 1 num-loops-kept -
// UNKNOWN-NEXT: (S) 0 num-loops-split -
