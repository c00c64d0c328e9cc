// The statistics of flash-tile on the inputs of tile.mlir: one loop tiled
// in each order, and none of the loops that are not the online form.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/tile.mlir %t
// RUN: flashc-opt %t/mha.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=32 block-kv=64" -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FA2
// RUN: flashc-opt %t/gqa.mlir --flash-online-softmax \
// RUN:   --flash-tile="loop-order=algorithm1 target=sm_80" -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALG1
// RUN: flashc-opt %t/unchanged.mlir --flash-tile="block-q=16 block-kv=16" \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE

// FA2: {{^ *}}FlashTile{{$}}
// FA2-NEXT: (S) 0 num-tiled-algorithm1 -
// FA2-NEXT: (S) 1 num-tiled-fa2 -

// ALG1: {{^ *}}FlashTile{{$}}
// ALG1-NEXT: (S) 1 num-tiled-algorithm1 -
// ALG1-NEXT: (S) 0 num-tiled-fa2 -

// NONE: {{^ *}}FlashTile{{$}}
// NONE-NEXT: (S) 0 num-tiled-algorithm1 -
// NONE-NEXT: (S) 0 num-tiled-fa2 -
