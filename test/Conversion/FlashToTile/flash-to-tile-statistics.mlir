// The statistics of flash-to-tile on inputs of flash-to-tile.mlir: a
// forward kernel per tiled attention, and a combine kernel when its KV
// loop is split; none for a module without attention.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/flash-to-tile.mlir %t
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile -mlir-pass-statistics \
// RUN:     -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MHA
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4" \
// RUN:   | flashc-opt --flash-to-tile -mlir-pass-statistics \
// RUN:     -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPLIT
// RUN: flashc-opt %t/none.mlir --flash-to-tile -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NONE

// MHA: {{^ *}}FlashToTile{{$}}
// MHA-NEXT: (S) 0 num-combine-kernels -
// MHA-NEXT: (S) 1 num-forward-kernels -

// SPLIT: {{^ *}}FlashToTile{{$}}
// SPLIT-NEXT: (S) 1 num-combine-kernels -
// SPLIT-NEXT: (S) 1 num-forward-kernels -

// NONE: {{^ *}}FlashToTile{{$}}
// NONE-NEXT: (S) 0 num-combine-kernels -
// NONE-NEXT: (S) 0 num-forward-kernels -
