// RUN: flashc-opt %s --split-input-file --flash-tile-use-tma | FileCheck %s

// A pipelined kernel as flash-tile-pipeline leaves it: Q copied once, K and
// V into two stages, the KV loop copying the next block (a full block's
// copies and a ragged one's in two branches) while it multiplies by
// warpgroups. The copies become TMA copies of three new tensor map
// arguments (`__grid_constant__` parameters, whose positions the kernel
// records), at the coordinates (0, row, head, batch) of the subviews'
// origins plus the copied row. The branch between the full and the ragged
// block's copies folds: they are the same TMA copies. Q's wait becomes its
// stage wait (parity 0); the loop carries each stage's parity, one bit a
// stage, waits for K's and V's stage before each is first read, flips the
// stage's bit, and ends with a barrier instead of its wait.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: %[[B:arg3]]: index, %[[N:arg4]]: index
// CHECK-SAME: %[[ROW0:arg8]]: index
// CHECK-SAME: %[[QMAP:[a-z0-9]+]]: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of Q {{.+}}", name = "q_map", tensor = "q"}, llvm.align = 64 : i64}
// CHECK-SAME: %[[KMAP:[a-z0-9]+]]: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of K {{.+}}", name = "k_map", tensor = "k"}, llvm.align = 64 : i64}
// CHECK-SAME: %[[VMAP:[a-z0-9]+]]: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of V {{.+}}", name = "v_map", tensor = "v"}, llvm.align = 64 : i64})
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 11, 12, 13>}
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[QROW:.+]] = arith.addi %[[ROW0]], %{{.+}} : index
// CHECK: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
// CHECK: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// CHECK: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// CHECK-NOT: flash_tile.async_copy
// CHECK: flash_tile.tma_load %[[QMAP]][%[[ZERO]], %[[QROW]], %[[ZERO]], %[[B]]], %[[QS]][%{{.+}}] box [64, 64, 1, 1]
// CHECK: flash_tile.tma_load %[[KMAP]][%[[ZERO]], %{{.+}}, %[[ZERO]], %[[B]]], %[[KS]][%{{.+}}] box [64, 64, 1, 1]
// CHECK: flash_tile.tma_load %[[VMAP]][%[[ZERO]], %{{.+}}, %[[ZERO]], %[[B]]], %[[VS]][%{{.+}}] box [64, 64, 1, 1]
// CHECK-NOT: flash_tile.async_wait
// CHECK: %[[FALSE:.+]] = arith.constant false
// CHECK: flash_tile.stage_wait %[[QS]][%{{.+}}], %[[FALSE]]
// CHECK: %[[PHASES0:.+]] = arith.constant 0 : i32
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[S:.+]] = %{{.+}}, %[[PHASES:.+]] = %[[PHASES0]]) -> (!flash_tile.tile<64x64xf32>, index, i32) {
// CHECK: %[[S32:.+]] = arith.index_cast %[[S]] : index to i32
// CHECK: %[[BIT:.+]] = arith.shli %{{.+}}, %[[S32]] : i32
// CHECK: %[[AND:.+]] = arith.andi %[[PHASES]], %[[BIT]] : i32
// CHECK: %[[PARITY:.+]] = arith.cmpi ne, %[[AND]], %{{.+}} : i32
// CHECK: %[[NEXT:.+]] = arith.addi %[[J]]
// CHECK: %[[W:.+]] = arith.subi %{{.+}}, %[[S]] : index
// CHECK: scf.if
// CHECK-NOT: scf.if
// CHECK: flash_tile.tma_load %[[KMAP]][%[[ZERO]], %[[NEXT]], %[[ZERO]], %[[B]]], %[[KS]][%[[W]]] box [64, 64, 1, 1]
// CHECK-NEXT: flash_tile.tma_load %[[VMAP]][%[[ZERO]], %[[NEXT]], %[[ZERO]], %[[B]]], %[[VS]][%[[W]]] box [64, 64, 1, 1]
// CHECK-NEXT: }
// CHECK-NEXT: flash_tile.stage_wait %[[KS]][%[[S]]], %[[PARITY]]
// CHECK-NEXT: flash_tile.warpgroup_mma %[[QS]][%{{.+}}], %[[KS]][%[[S]]] transpose
// CHECK-NEXT: flash_tile.stage_wait %[[VS]][%[[S]]], %[[PARITY]]
// CHECK-NEXT: flash_tile.warpgroup_mma %{{.+}}, %[[VS]][%[[S]]]
// CHECK-NEXT: flash_tile.barrier
// CHECK-NEXT: %[[FLIPPED:.+]] = arith.xori %[[PHASES]], %[[BIT]] : i32
// CHECK-NEXT: scf.yield %{{.+}}, %[[W]], %[[FLIPPED]]
// CHECK: } {flash.kv_loop}
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @kernel(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  return %r#0 : !flash_tile.tile<64x64xf32>
}

// -----

// A kernel without a warpgroup MMA keeps its cp.async copies.
// CHECK-LABEL: func.func @no_warpgroup_mma
// CHECK-NOT: !llvm.ptr
// CHECK: flash_tile.async_copy
// CHECK: flash_tile.async_wait pending 0
// CHECK-NOT: flash_tile.tma_load
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @no_warpgroup_mma(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                            %b: index, %n: index, %sb: index, %sh: index,
                            %sn: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, 0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_wait pending 0
  return
}

// -----

// A source only 4-byte aligned (a kernel built for tensors whose
// addresses or strides are not multiples of 16 bytes), which no tensor map
// describes: the kernel keeps its cp.async copies.
// CHECK-LABEL: func.func @under_aligned
// CHECK-NOT: !llvm.ptr
// CHECK: flash_tile.async_copy {{.+}} {alignment = 4 : i64}
// CHECK-NOT: flash_tile.tma_load
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @under_aligned(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                         %b: index, %n: index, %sb: index, %sh: index,
                         %sn: index, %acc: !flash_tile.tile<64x64xf32>,
                         %k: !flash_tile.shared<1x64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, 0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 {alignment = 4} : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_wait pending 0
  %s = flash_tile.warpgroup_mma %qs[%c0], %k[%c0] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<1x64x64xf16>, !flash_tile.tile<64x64xf32>
  return %s : !flash_tile.tile<64x64xf32>
}

// -----

// Rows of 60 elements (120 bytes) may be packed, which no tensor map
// describes: the kernel keeps its cp.async copies (into its 64-column
// stages, the padding zero-filled).
// CHECK-LABEL: func.func @packed_rows
// CHECK-NOT: !llvm.ptr
// CHECK: flash_tile.async_copy
// CHECK-NOT: flash_tile.tma_load
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @packed_rows(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                       %b: index, %n: index, %sb: index, %sh: index,
                       %sn: index, %acc: !flash_tile.tile<64x64xf32>,
                       %k: !flash_tile.shared<1x64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 60], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x60xf16, #wide>
  %qm = memref.subview %qw[%b, 0, 0, 0] [1, 1, %c64, 60] [1, 1, 1, 1] : memref<?x?x?x60xf16, #wide> to memref<?x60xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x60xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_wait pending 0
  %s = flash_tile.warpgroup_mma %qs[%c0], %k[%c0] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<1x64x64xf16>, !flash_tile.tile<64x64xf32>
  return %s : !flash_tile.tile<64x64xf32>
}

// -----

// The output store after the KV loops goes through Q's buffer (filled
// once, of the output tile's shape, which the loops are done reading): a
// local_store into it and a TMA store of it to a fourth tensor map, at
// the output subview's coordinates.
// CHECK-LABEL: func.func @kernel_out
// CHECK-SAME: %[[OUTMAP:[a-z0-9]+]]: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of OUT {{.+}}", name = "out_map", tensor = "out"}, llvm.align = 64 : i64})
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
// CHECK: } {flash.kv_loop}
// CHECK: %[[OROW:.+]] = arith.addi %arg8, %{{.+}} : index
// CHECK-NEXT: flash_tile.local_store %arg12, %[[QS]][%[[ZERO]]] : !flash_tile.tile<64x64xf16>, !flash_tile.shared<1x64x64xf16>
// CHECK-NEXT: flash_tile.tma_store %[[QS]][%[[ZERO]]], %[[OUTMAP]][%[[ZERO]], %[[OROW]], %[[ZERO]], %arg3] box [64, 64, 1, 1]
// CHECK-NOT: flash_tile.store
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @kernel_out(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<?x64xf16, #rows>
  return %r#0 : !flash_tile.tile<64x64xf32>
}

// -----

// An output narrower than Q's buffer (Dv = 128 < D = 192) goes through
// the buffer's first panels: rows of 384 bytes are placed as panels of
// the 128-byte swizzle's 64 columns, so the first two panels are a
// buffer of the output's shape (a flash_tile.view), stored a panel a box.
// CHECK-LABEL: func.func @out_narrower_than_q
// CHECK-SAME: %[[OUTMAP:[a-z0-9_]+]]: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of OUT {{.+}}", name = "out_map", tensor = "out"}
// CHECK: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x64x192xf16>
// CHECK: } {flash.kv_loop}
// CHECK: %[[OROW:.+]] = arith.addi %arg8, %{{.+}} : index
// CHECK-NEXT: %[[OS:.+]] = flash_tile.view %[[QS]] : !flash_tile.shared<1x64x192xf16> to !flash_tile.shared<1x64x128xf16>
// CHECK-NEXT: flash_tile.local_store %arg13, %[[OS]][%[[ZERO:.+]]] : !flash_tile.tile<64x128xf16>, !flash_tile.shared<1x64x128xf16>
// CHECK-NEXT: flash_tile.tma_store %[[OS]][%[[ZERO]]], %[[OUTMAP]][%[[ZERO]], %[[OROW]], %[[ZERO]], %arg3] box [64, 64, 1, 1]
// CHECK-NOT: flash_tile.store
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @out_narrower_than_q(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %oacc: !flash_tile.tile<64x128xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x128xf16>) -> !flash_tile.tile<64x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 192], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x192xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 192] [1, 1, 1, 1] : memref<?x?x?x192xf16, #wide> to memref<?x192xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 192], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x192xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 192] [1, 1, 1, 1] : memref<?x?x?x192xf16, #wide> to memref<?x192xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 128], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x128xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 128] [1, 1, 1, 1] : memref<?x?x?x128xf16, #wide> to memref<?x128xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x192xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x192xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x128xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x192xf16, #rows>, !flash_tile.shared<1x64x192xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x192xf16, #rows>, !flash_tile.shared<2x64x192xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x128xf16, #rows>, !flash_tile.shared<2x64x128xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %oacc, %s = %c0) -> (!flash_tile.tile<64x128xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      flash_tile.async_copy %km[%next], %ks[%s1] valid %c64 : memref<?x192xf16, #rows>, !flash_tile.shared<2x64x192xf16>
      flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64 : memref<?x128xf16, #rows>, !flash_tile.shared<2x64x128xf16>
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x192xf16>, !flash_tile.shared<2x64x192xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x128xf16>, !flash_tile.tile<64x128xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x128xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 128], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x128xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 128] [1, 1, 1, 1] : memref<?x?x?x128xf16, #wide> to memref<?x128xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x128xf16>, memref<?x128xf16, #rows>
  return %r#0 : !flash_tile.tile<64x128xf32>
}

// -----

// Rows of 192 bytes (D = 96) take the 64-byte swizzle, in panels of 32
// columns: an output of 64 columns is two of them, boxes of 32 columns.
// CHECK-LABEL: func.func @out_in_64_byte_panels
// CHECK-SAME: {flash.param = {box = array<i64: 32, 64, 1, 1>, {{.+}} name = "out_map", tensor = "out"}
// CHECK: flash_tile.view %{{.+}} : !flash_tile.shared<1x64x96xf16> to !flash_tile.shared<1x64x64xf16>
// CHECK: flash_tile.tma_store %{{.+}}, %{{.+}} box [32, 64, 1, 1]
// CHECK-NOT: flash_tile.store
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @out_in_64_byte_panels(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %oacc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 96], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x96xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 96] [1, 1, 1, 1] : memref<?x?x?x96xf16, #wide> to memref<?x96xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 96], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x96xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 96] [1, 1, 1, 1] : memref<?x?x?x96xf16, #wide> to memref<?x96xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x96xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x96xf16, #rows>, !flash_tile.shared<1x64x96xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x96xf16, #rows>, !flash_tile.shared<2x64x96xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %oacc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      flash_tile.async_copy %km[%next], %ks[%s1] valid %c64 : memref<?x96xf16, #rows>, !flash_tile.shared<2x64x96xf16>
      flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x96xf16>, !flash_tile.shared<2x64x96xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<?x64xf16, #rows>
  return %r#0 : !flash_tile.tile<64x64xf32>
}

// -----

// An output that is not a whole number of Q's panels (96 columns of
// panels of 64) keeps its store; the copies still go by TMA.
// CHECK-LABEL: func.func @out_not_whole_panels
// CHECK-NOT: name = "out_map"
// CHECK: flash_tile.tma_load
// CHECK-NOT: flash_tile.view
// CHECK-NOT: flash_tile.tma_store
// CHECK: flash_tile.store %arg13
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @out_not_whole_panels(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %oacc: !flash_tile.tile<64x96xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x96xf16>) -> !flash_tile.tile<64x96xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 128], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x128xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 128] [1, 1, 1, 1] : memref<?x?x?x128xf16, #wide> to memref<?x128xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 128], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x128xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 128] [1, 1, 1, 1] : memref<?x?x?x128xf16, #wide> to memref<?x128xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 96], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x96xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 96] [1, 1, 1, 1] : memref<?x?x?x96xf16, #wide> to memref<?x96xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x128xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x128xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x128xf16, #rows>, !flash_tile.shared<1x64x128xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x128xf16, #rows>, !flash_tile.shared<2x64x128xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x96xf16, #rows>, !flash_tile.shared<2x64x96xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %oacc, %s = %c0) -> (!flash_tile.tile<64x96xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      flash_tile.async_copy %km[%next], %ks[%s1] valid %c64 : memref<?x128xf16, #rows>, !flash_tile.shared<2x64x128xf16>
      flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64 : memref<?x96xf16, #rows>, !flash_tile.shared<2x64x96xf16>
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x128xf16>, !flash_tile.shared<2x64x128xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x96xf16>, !flash_tile.tile<64x96xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x96xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 96], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x96xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 96] [1, 1, 1, 1] : memref<?x?x?x96xf16, #wide> to memref<?x96xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x96xf16>, memref<?x96xf16, #rows>
  return %r#0 : !flash_tile.tile<64x96xf32>
}

// -----

// Two kernels of the same arguments that each copy by TMA keep their own
// maps (grid constants 13 - 16 each, none twice); a third of those
// arguments takes the first one's.
// CHECK-LABEL: func.func @first
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
// CHECK-LABEL: func.func @second
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
// CHECK-LABEL: func.func @shared
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @first(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<?x64xf16, #rows>
  return %r#0 : !flash_tile.tile<64x64xf32>
}
func.func @second(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<?x64xf16, #rows>
  return %r#0 : !flash_tile.tile<64x64xf32>
}
func.func @shared(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) {
  return
}
// -----

// The kernels of one module take one argument list (the runtime launches
// a decode variant's forward kernel and its combine with the same
// arguments): the combine, which took the forward kernel's arguments,
// takes its four tensor maps too, unused, as grid constants; a kernel of
// other arguments is left alone.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
// CHECK-LABEL: func.func @combine
// CHECK-SAME: %{{.+}}: !llvm.ptr {flash.param = {box = array<i64: 64, 64, 1, 1>, meaning = "TMA tensor map of Q {{.+}}", name = "q_map", tensor = "q"}, llvm.align = 64 : i64}
// CHECK-SAME: %{{.+}}: !llvm.ptr {flash.param = {{.+}} name = "k_map"
// CHECK-SAME: %{{.+}}: !llvm.ptr {flash.param = {{.+}} name = "v_map"
// CHECK-SAME: %{{.+}}: !llvm.ptr {flash.param = {{.+}} name = "out_map"
// CHECK-SAME: attributes {flash.grid_constants = array<i64: 13, 14, 15, 16>}
// CHECK-NEXT: return
// CHECK-LABEL: func.func @other
// CHECK-SAME: (%{{.+}}: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}}) {
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
func.func @forward(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 1, %c64, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  flash_tile.store %o16, %om[%c0] valid %c64 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<?x64xf16, #rows>
  return %r#0 : !flash_tile.tile<64x64xf32>
}
func.func @combine(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) {
  return
}
func.func @other(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}}) {
  return
}
// -----

// A GQA tile of 3 heads in 64 rows: 3 x 21, the last row no head's, which
// the Q copy's and the output store's `groups` leave out. The boxes are 3
// groups of 21 rows, the stage's last row left alone.
// CHECK-LABEL: func.func @gqa_padding
// CHECK: flash_tile.tma_load %{{.+}}, %{{.+}}[%{{.+}}] box [64, 21, 3, 1]
// CHECK: flash_tile.tma_store %{{.+}}[%{{.+}}], %{{.+}}[%{{.+}}] box [64, 21, 3, 1]
// CHECK-NOT: flash_tile.store
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
#groups = strided<[?, ?, 1], offset: ?>
func.func @gqa_padding(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c21 = arith.constant 21 : index
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 3, %c21, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<3x?x64xf16, #groups>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c21 groups %c3 : memref<3x?x64xf16, #groups>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 3, %c21, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<3x?x64xf16, #groups>
  flash_tile.store %o16, %om[%c0] valid %c21 groups %c3 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<3x?x64xf16, #groups>
  return %r#0 : !flash_tile.tile<64x64xf32>
}

// -----

// A store that leaves out a head of its group (2 of 3) is no box: it keeps
// its stores, while Q still comes by TMA.
// CHECK-LABEL: func.func @gqa_group_left_out
// CHECK: flash_tile.tma_load %{{.+}}, %{{.+}}[%{{.+}}] box [64, 21, 3, 1]
// CHECK-NOT: flash_tile.tma_store
// CHECK: flash_tile.store %{{.+}} valid %{{.+}} groups
#wide = strided<[?, ?, ?, 1]>
#rows = strided<[?, 1], offset: ?>
#groups = strided<[?, ?, 1], offset: ?>
func.func @gqa_group_left_out(%q: memref<?xf16> {flash.param = {meaning = "Q", name = "q"}},
                  %k: memref<?xf16> {flash.param = {meaning = "K", name = "k"}},
                  %v: memref<?xf16> {flash.param = {meaning = "V", name = "v"}},
                  %b: index, %n: index, %sb: index, %sh: index, %sn: index,
                  %row0: index, %acc: !flash_tile.tile<64x64xf32>,
                  %p: !flash_tile.tile<64x64xf16>,
                  %out: memref<?xf16> {flash.param = {meaning = "O", name = "out"}},
                  %o16: !flash_tile.tile<64x64xf16>) -> !flash_tile.tile<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c21 = arith.constant 21 : index
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %qw = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %qm = memref.subview %qw[%b, 0, %row0, 0] [1, 3, %c21, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<3x?x64xf16, #groups>
  %kw = memref.reinterpret_cast %k to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %km = memref.subview %kw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %vw = memref.reinterpret_cast %v to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %vm = memref.subview %vw[%b, 0, 0, 0] [1, 1, %n, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<?x64xf16, #rows>
  %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
  %ks = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  %vs = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %qm[%c0], %qs[%c0] valid %c21 groups %c3 : memref<3x?x64xf16, #groups>, !flash_tile.shared<1x64x64xf16>
  flash_tile.async_copy %km[%c0], %ks[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_copy %vm[%c0], %vs[%c0] valid %c64 : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
  flash_tile.async_wait pending 0
  %r:2 = scf.for %j = %c0 to %n step %c64 iter_args(%o = %acc, %s = %c0) -> (!flash_tile.tile<64x64xf32>, index) {
    %next = arith.addi %j, %c64 : index
    %s1 = arith.subi %c1, %s : index
    %more = arith.cmpi slt, %next, %n : index
    scf.if %more {
      %left = arith.subi %n, %next : index
      %full = arith.cmpi sge, %left, %c64 : index
      scf.if %full {
        %c64b = arith.constant 64 : index
        flash_tile.async_copy %km[%next], %ks[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %c64b : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      } else {
        flash_tile.async_copy %km[%next], %ks[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
        flash_tile.async_copy %vm[%next], %vs[%s1] valid %left : memref<?x64xf16, #rows>, !flash_tile.shared<2x64x64xf16>
      }
    }
    %sc = flash_tile.warpgroup_mma %qs[%c0], %ks[%s] transpose, %acc : !flash_tile.shared<1x64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    %o2 = flash_tile.warpgroup_mma %p, %vs[%s], %o : !flash_tile.tile<64x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<64x64xf32>
    flash_tile.async_wait pending 0
    scf.yield %o2, %s1 : !flash_tile.tile<64x64xf32>, index
  } {flash.kv_loop}
  %ow = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 1, %n, 64], strides: [%sb, %sh, %sn, 1] : memref<?xf16> to memref<?x?x?x64xf16, #wide>
  %om = memref.subview %ow[%b, 0, %row0, 0] [1, 3, %c21, 64] [1, 1, 1, 1] : memref<?x?x?x64xf16, #wide> to memref<3x?x64xf16, #groups>
  flash_tile.store %o16, %om[%c0] valid %c21 groups %c2 {alignment = 16} : !flash_tile.tile<64x64xf16>, memref<3x?x64xf16, #groups>
  return %r#0 : !flash_tile.tile<64x64xf32>
}
