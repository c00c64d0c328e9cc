// The statistics of flash-split-kv on the inputs of split-kv.mlir: the
// attentions split (and into how many ranges), split at launch, left
// whole, and the tile loops it does not recognise.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/split-kv.mlir %t
//
// Decode, 8 KV blocks: 4 splits as asked; 100 capped at the 8 blocks.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-split-kv="splits=4" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOUR
// FOUR: {{^ *}}FlashSplitKV{{$}}
// FOUR-NEXT: (S) 0 num-dynamic -
// FOUR-NEXT: (S) 1 num-split -
// FOUR-NEXT: (S) 4 num-splits -
// FOUR-NEXT: (S) 0 num-unmatched -
// FOUR-NEXT: (S) 0 num-whole -
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-split-kv="splits=100" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=CAP
// CAP: {{^ *}}FlashSplitKV{{$}}
// CAP-NEXT: (S) 0 num-dynamic -
// CAP-NEXT: (S) 1 num-split -
// CAP-NEXT: (S) 8 num-splits -
//
// The wave model's choice on sm_80.
// RUN: flashc-opt %t/wave.mlir --flash-online-softmax --flash-tile="target=sm_80" \
// RUN:   --flash-split-kv="target=sm_80" -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WAVE
// WAVE: {{^ *}}FlashSplitKV{{$}}
// WAVE-NEXT: (S) 0 num-dynamic -
// WAVE-NEXT: (S) 1 num-split -
// WAVE-NEXT: (S) 16 num-splits -
//
// A launch-time count.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=128" --flash-split-kv="dynamic-splits=1" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=LAUNCH
// LAUNCH: {{^ *}}FlashSplitKV{{$}}
// LAUNCH-NEXT: (S) 1 num-dynamic -
// LAUNCH-NEXT: (S) 0 num-split -
// LAUNCH-NEXT: (S) 0 num-splits -
// LAUNCH-NEXT: (S) 0 num-unmatched -
// LAUNCH-NEXT: (S) 0 num-whole -
//
// Prefill is longer than max-seq-q; a forall with one output is not the
// form flash-tile builds.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=64 block-kv=64" --flash-split-kv="splits=4" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHOLE
// WHOLE: {{^ *}}FlashSplitKV{{$}}
// WHOLE-NEXT: (S) 0 num-dynamic -
// WHOLE-NEXT: (S) 0 num-split -
// WHOLE-NEXT: (S) 0 num-splits -
// WHOLE-NEXT: (S) 0 num-unmatched -
// WHOLE-NEXT: (S) 1 num-whole -
// RUN: flashc-opt %t/one-output.mlir --flash-split-kv="splits=2" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// UNMATCHED: {{^ *}}FlashSplitKV{{$}}
// UNMATCHED-NEXT: (S) 0 num-dynamic -
// UNMATCHED-NEXT: (S) 0 num-split -
// UNMATCHED-NEXT: (S) 0 num-splits -
// UNMATCHED-NEXT: (S) 1 num-unmatched -
// UNMATCHED-NEXT: (S) 0 num-whole -
