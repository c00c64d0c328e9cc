// The statistics of flash-tile-assign-layouts on flash-to-tile's kernels
// for inputs of flash-to-tile.mlir: the forward kernel gets its layouts and
// one conversion (P as PV's A operand); a split decode's combine kernel
// comes with its layouts and is not counted.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/../../../Conversion/FlashToTile/flash-to-tile.mlir %t
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts \
// RUN:     -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:     -o /dev/null 2>&1 | FileCheck %s
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4" \
// RUN:   | flashc-opt --flash-to-tile --flash-tile-assign-layouts \
// RUN:     -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:     -o /dev/null 2>&1 | FileCheck %s

// CHECK: {{^ *}}FlashTileAssignLayouts{{$}}
// CHECK-DAG: (S) 1 num-conversions - Layout conversions inserted
// CHECK-DAG: (S) 1 num-kernels - Kernels given layouts
// CHECK-DAG: (S) {{[1-9][0-9]*}} num-tiles - Tiles given a layout
