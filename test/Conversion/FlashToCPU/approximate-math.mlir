// RUN: flashc-opt %s --split-input-file --flash-approximate-math | FileCheck %s

// exp and log on vector<16xf32> become polynomials (fma chains and bit
// manipulation on vector<16xi32>); other math ops are left alone.
// CHECK-LABEL: func.func @vector_exp_log
// CHECK-SAME: (%[[X:.+]]: vector<16xf32>)
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK: math.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK: %[[T:.+]] = math.tanh %[[X]] : vector<16xf32>
// CHECK-NEXT: %[[S:.+]] = math.sqrt %[[X]] : vector<16xf32>
// CHECK-NEXT: return %{{.+}}, %{{.+}}, %[[T]], %[[S]]
func.func @vector_exp_log(%x: vector<16xf32>)
    -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %e = math.exp %x : vector<16xf32>
  %l = math.log %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  %s = math.sqrt %x : vector<16xf32>
  return %e, %l, %t, %s : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// -----

// Scalar f32 (the finalize's log, the combine's exp) is approximated too;
// f16 goes through f32; f64 is left alone.
// CHECK-LABEL: func.func @other_types
// CHECK-SAME: (%{{.+}}: f32, %[[D:.+]]: vector<8xf64>, %[[H:.+]]: vector<16xf16>)
// CHECK-NOT: math.exp %{{.+}} : f32
// CHECK: %[[E64:.+]] = math.exp %[[D]] : vector<8xf64>
// CHECK-NEXT: arith.extf %[[H]] : vector<16xf16> to vector<16xf32>
// CHECK-NOT: math.exp
// CHECK: arith.truncf %{{.+}} : vector<16xf32> to vector<16xf16>
// CHECK-NOT: math.log
// CHECK: return %{{.+}}, %[[E64]], %{{.+}}, %{{.+}} : f32, vector<8xf64>, vector<16xf16>, f32
func.func @other_types(%x: f32, %d: vector<8xf64>, %h: vector<16xf16>)
    -> (f32, vector<8xf64>, vector<16xf16>, f32) {
  %e = math.exp %x : f32
  %e64 = math.exp %d : vector<8xf64>
  %eh = math.exp %h : vector<16xf16>
  %l = math.log %x : f32
  return %e, %e64, %eh, %l : f32, vector<8xf64>, vector<16xf16>, f32
}

// -----

// No exp or log: unchanged.
// CHECK-LABEL: func.func @untouched
// CHECK-SAME: (%[[X:.+]]: vector<16xf32>)
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[X]] : vector<16xf32>
// CHECK-NEXT: %[[R:.+]] = math.rsqrt %[[T]] : vector<16xf32>
// CHECK-NEXT: return %[[R]]
func.func @untouched(%x: vector<16xf32>) -> vector<16xf32> {
  %t = math.tanh %x : vector<16xf32>
  %r = math.rsqrt %t : vector<16xf32>
  return %r : vector<16xf32>
}
