// flash-cpu-dynamic-schedule: every omp.wsloop without a schedule hands its
// iterations out dynamically; a loop with a schedule keeps it.
// RUN: flashc-opt %s --flash-cpu-dynamic-schedule | FileCheck %s

// CHECK-LABEL: func.func @tiles
// CHECK: omp.wsloop schedule(dynamic) {
// CHECK: omp.wsloop schedule(static) {
func.func @tiles(%n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i, %j) : index = (%c0, %c0) to (%n, %m) step (%c1, %c1) collapse(2) {
        omp.yield
      }
    }
    omp.wsloop schedule(static) {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
