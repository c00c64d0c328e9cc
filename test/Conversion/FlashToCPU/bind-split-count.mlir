// flash-cpu-bind-split-count: flash.split_count becomes the function's
// argument marked {flash.split_count}.
// RUN: flashc-opt %s --split-input-file --flash-cpu-bind-split-count -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @bound
// CHECK-SAME: (%[[N:.+]]: index, %[[S:.+]]: index {flash.split_count})
// CHECK-NOT: flash.split_count
// CHECK: %[[C:.+]] = arith.ceildivsi %[[N]], %[[S]] : index
// CHECK: scf.forall (%{{.+}}) in (%[[S]])
// CHECK: return %[[C]]
func.func @bound(%n: index, %s: index {flash.split_count}) -> index {
  %0 = flash.split_count
  %1 = arith.ceildivsi %n, %0 : index
  %2 = flash.split_count
  scf.forall (%i) in (%2) {
  }
  return %1 : index
}

// -----

// A function without a split count keeps its arguments as they are.
// CHECK-LABEL: func.func @untouched
// CHECK-SAME: (%{{.+}}: index {flash.split_count}) -> index
// CHECK: arith.constant 3
func.func @untouched(%s: index {flash.split_count}) -> index {
  %c3 = arith.constant 3 : index
  return %c3 : index
}

// -----

func.func @unbound(%n: index) -> index {
  // expected-error @+1 {{'flash.split_count' op needs an index argument of its function marked flash.split_count to bind to (the count is chosen by the caller on the CPU)}}
  %0 = flash.split_count
  return %0 : index
}

// -----

// expected-error @+1 {{'func.func' op has more than one argument marked flash.split_count (0 and 1)}}
func.func @twice(%a: index {flash.split_count}, %b: index {flash.split_count}) -> index {
  %0 = flash.split_count
  return %0 : index
}

// -----

// expected-error @+1 {{'func.func' op argument 0 marked flash.split_count must be an index, got 'i64'}}
func.func @not_index(%a: i64 {flash.split_count}) -> index {
  %0 = flash.split_count
  return %0 : index
}
