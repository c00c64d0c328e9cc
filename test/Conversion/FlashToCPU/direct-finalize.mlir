// flash-cpu-direct-finalize: with one split at run time, the tiles finalize
// into the output and the combine is skipped.
// RUN: flashc-opt %s --split-input-file --flash-cpu-direct-finalize | FileCheck %s

// With an LSE output: both the output and the LSE are written in place when
// S == 1; the partial buffers get 0 rows then, and the combine runs only when
// S != 1.
// CHECK-LABEL: func.func @with_lse
// CHECK-SAME: (%[[ACC:[^:]+]]: memref<4x?x64xf32>, %[[M:[^:]+]]: memref<4x?xf32>, %[[L:[^:]+]]: memref<4x?xf32>, %[[OUT:[^:]+]]: memref<?x8x?x64xf32{{.*}}>, %[[LSE:[^:]+]]: memref<?x8x?xf32{{.*}}>, %[[S:[^:]+]]: index {flash.split_count}
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[SINGLE:.+]] = arith.cmpi eq, %[[S]], %[[ONE]] : index
// CHECK: %[[ROWS:.+]] = arith.select %[[SINGLE]], %[[ZERO]], %[[S]] : index
// CHECK: %[[P:.+]] = memref.alloc(%[[ROWS]], %{{.+}}, %{{.+}}) {{.*}} : memref<?x?x8x?x64xf32>
// CHECK: %[[PL:.+]] = memref.alloc(%[[ROWS]], %{{.+}}, %{{.+}}) {{.*}} : memref<?x?x8x?xf32>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[I:.+]], %[[SPLIT:.+]]) in
// CHECK: scf.if %[[SINGLE]] {
// CHECK-NEXT: %[[O:.+]] = memref.subview %[[OUT]][%[[B]], %[[H]], %[[I]], 0] [1, 4, %{{.+}}, 64] [1, 1, 1, 1] : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>> to memref<4x?x64xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-NEXT: %[[OL:.+]] = memref.subview %[[LSE]][%[[B]], %[[H]], %[[I]]] [1, 4, %{{.+}}] [1, 1, 1] : memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>> to memref<4x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: flash.finalize ins(%[[ACC]], %[[M]], %[[L]] : {{.+}}) outs(%[[O]], %[[OL]] :
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[PS:.+]] = memref.subview %[[P]][%[[SPLIT]], %[[B]], %[[H]], %[[I]], 0]
// CHECK-NEXT: %[[PLS:.+]] = memref.subview %[[PL]][%[[SPLIT]], %[[B]], %[[H]], %[[I]]]
// CHECK-NEXT: flash.finalize ins(%[[ACC]], %[[M]], %[[L]] : {{.+}}) outs(%[[PS]], %[[PLS]] :
// CHECK-NEXT: }
// CHECK: %[[SEVERAL:.+]] = arith.cmpi ne, %[[S]], %[[ONE]] : index
// CHECK-NEXT: scf.if %[[SEVERAL]] {
// CHECK-NEXT: flash.combine ins(%[[P]], %[[PL]] : {{.+}}) outs(%[[OUT]], %[[LSE]] :
// CHECK-NEXT: }
// CHECK: memref.dealloc %[[P]]
// CHECK: memref.dealloc %[[PL]]
func.func @with_lse(%acc: memref<4x?x64xf32>, %m: memref<4x?xf32>, %l: memref<4x?xf32>,
                    %out: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>,
                    %lse: memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>,
                    %s: index {flash.split_count}, %nb: index, %n: index, %nq: index) {
  %p = memref.alloc(%s, %nb, %n) {alignment = 64 : i64} : memref<?x?x8x?x64xf32>
  %pl = memref.alloc(%s, %nb, %n) {alignment = 64 : i64} : memref<?x?x8x?xf32>
  scf.forall (%b, %h, %i, %split) in (%nb, 8, %nq, %s) {
    %ps = memref.subview %p[%split, %b, %h, %i, 0] [1, 1, 4, %n, 64] [1, 1, 1, 1, 1] : memref<?x?x8x?x64xf32> to memref<4x?x64xf32, strided<[?, 64, 1], offset: ?>>
    %pls = memref.subview %pl[%split, %b, %h, %i] [1, 1, 4, %n] [1, 1, 1, 1] : memref<?x?x8x?xf32> to memref<4x?xf32, strided<[?, 1], offset: ?>>
    flash.finalize ins(%acc, %m, %l : memref<4x?x64xf32>, memref<4x?xf32>, memref<4x?xf32>)
        outs(%ps, %pls : memref<4x?x64xf32, strided<[?, 64, 1], offset: ?>>, memref<4x?xf32, strided<[?, 1], offset: ?>>)
  }
  flash.combine ins(%p, %pl : memref<?x?x8x?x64xf32>, memref<?x?x8x?xf32>)
      outs(%out, %lse : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>, memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>)
  memref.dealloc %p : memref<?x?x8x?x64xf32>
  memref.dealloc %pl : memref<?x?x8x?xf32>
  return
}

// -----

// Without an LSE output the direct finalize computes none; a bf16 output
// takes the f32 accumulator directly (finalize converts).
// CHECK-LABEL: func.func @without_lse
// CHECK-SAME: %[[OUT:[^:]+]]: memref<?x4x?x32xbf16>
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: %[[O:.+]] = memref.subview %[[OUT]]{{.+}} to memref<1x?x32xbf16, strided<[?, 32, 1], offset: ?>>
// CHECK-NEXT: flash.finalize ins({{.+}}) outs(%[[O]] : memref<1x?x32xbf16, strided<[?, 32, 1], offset: ?>>)
// CHECK-NEXT: } else {
// CHECK: flash.finalize
// CHECK: scf.if
// CHECK-NEXT: flash.combine
func.func @without_lse(%acc: memref<1x?x32xf32>, %m: memref<1x?xf32>, %l: memref<1x?xf32>,
                       %out: memref<?x4x?x32xbf16>, %s: index, %nb: index, %n: index) {
  %p = memref.alloc(%s, %nb, %n) : memref<?x?x4x?x32xf32>
  %pl = memref.alloc(%s, %nb, %n) : memref<?x?x4x?xf32>
  scf.forall (%b, %h, %split) in (%nb, 4, %s) {
    %ps = memref.subview %p[%split, %b, %h, 0, 0] [1, 1, 1, %n, 32] [1, 1, 1, 1, 1] : memref<?x?x4x?x32xf32> to memref<1x?x32xf32, strided<[?, 32, 1], offset: ?>>
    %pls = memref.subview %pl[%split, %b, %h, 0] [1, 1, 1, %n] [1, 1, 1, 1] : memref<?x?x4x?xf32> to memref<1x?xf32, strided<[?, 1], offset: ?>>
    flash.finalize ins(%acc, %m, %l : memref<1x?x32xf32>, memref<1x?xf32>, memref<1x?xf32>)
        outs(%ps, %pls : memref<1x?x32xf32, strided<[?, 32, 1], offset: ?>>, memref<1x?xf32, strided<[?, 1], offset: ?>>)
  }
  flash.combine ins(%p, %pl : memref<?x?x4x?x32xf32>, memref<?x?x4x?xf32>)
      outs(%out : memref<?x4x?x32xbf16>)
  return
}

// -----

// A partial buffer read by anything but the combine is left as it is.
// CHECK-LABEL: func.func @other_reader
// CHECK-NOT: scf.if
// CHECK: memref.alloc(%{{.+}}) : memref<?x2x8xf32>
// CHECK-NOT: scf.if
// CHECK: flash.combine
func.func @other_reader(%acc: memref<2x8xf32>, %m: memref<2xf32>, %l: memref<2xf32>,
                        %out: memref<2x8xf32>, %s: index) -> f32 {
  %c0 = arith.constant 0 : index
  %p = memref.alloc(%s) : memref<?x2x8xf32>
  %pl = memref.alloc(%s) : memref<?x2xf32>
  scf.forall (%split) in (%s) {
    %ps = memref.subview %p[%split, 0, 0] [1, 2, 8] [1, 1, 1] : memref<?x2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: ?>>
    %pls = memref.subview %pl[%split, 0] [1, 2] [1, 1] : memref<?x2xf32> to memref<2xf32, strided<[1], offset: ?>>
    flash.finalize ins(%acc, %m, %l : memref<2x8xf32>, memref<2xf32>, memref<2xf32>)
        outs(%ps, %pls : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<2xf32, strided<[1], offset: ?>>)
  }
  flash.combine ins(%p, %pl : memref<?x2x8xf32>, memref<?x2xf32>) outs(%out : memref<2x8xf32>)
  %x = memref.load %p[%c0, %c0, %c0] : memref<?x2x8xf32>
  return %x : f32
}

// -----

// A static split count is left as it is (there is nothing to decide at run
// time).
// CHECK-LABEL: func.func @static_splits
// CHECK-NOT: scf.if
func.func @static_splits(%acc: memref<2x8xf32>, %m: memref<2xf32>, %l: memref<2xf32>,
                         %out: memref<2x8xf32>) {
  %p = memref.alloc() : memref<3x2x8xf32>
  %pl = memref.alloc() : memref<3x2xf32>
  scf.forall (%split) in (3) {
    %ps = memref.subview %p[%split, 0, 0] [1, 2, 8] [1, 1, 1] : memref<3x2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: ?>>
    %pls = memref.subview %pl[%split, 0] [1, 2] [1, 1] : memref<3x2xf32> to memref<2xf32, strided<[1], offset: ?>>
    flash.finalize ins(%acc, %m, %l : memref<2x8xf32>, memref<2xf32>, memref<2xf32>)
        outs(%ps, %pls : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<2xf32, strided<[1], offset: ?>>)
  }
  flash.combine ins(%p, %pl : memref<3x2x8xf32>, memref<3x2xf32>) outs(%out : memref<2x8xf32>)
  return
}

// -----

// A destination defined after the tiles (not visible at the finalize) is
// left as it is.
// CHECK-LABEL: func.func @late_destination
// CHECK-NOT: scf.if
// CHECK: flash.combine
func.func @late_destination(%acc: memref<2x8xf32>, %m: memref<2xf32>, %l: memref<2xf32>,
                            %s: index) {
  %p = memref.alloc(%s) : memref<?x2x8xf32>
  %pl = memref.alloc(%s) : memref<?x2xf32>
  scf.forall (%split) in (%s) {
    %ps = memref.subview %p[%split, 0, 0] [1, 2, 8] [1, 1, 1] : memref<?x2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: ?>>
    %pls = memref.subview %pl[%split, 0] [1, 2] [1, 1] : memref<?x2xf32> to memref<2xf32, strided<[1], offset: ?>>
    flash.finalize ins(%acc, %m, %l : memref<2x8xf32>, memref<2xf32>, memref<2xf32>)
        outs(%ps, %pls : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<2xf32, strided<[1], offset: ?>>)
  }
  %out = memref.alloc() : memref<2x8xf32>
  flash.combine ins(%p, %pl : memref<?x2x8xf32>, memref<?x2xf32>) outs(%out : memref<2x8xf32>)
  return
}
