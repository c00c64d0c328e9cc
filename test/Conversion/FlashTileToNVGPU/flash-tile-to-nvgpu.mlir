// RUN: flashc-opt %s --split-input-file --flash-tile-to-nvgpu | FileCheck %s

// Each flash_tile op lowered alone. Tiles become the vector of the values
// one thread holds (a 64x64 f32 accumulator over 4 warps: 32 per thread).

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#b = #flash_tile.operand<b, #mma>
#row = #flash_tile.slice<1, #mma>
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>

// The thread index once, at the entry; a buffer is a view of the dynamic
// shared memory at its offset.
// CHECK-LABEL: func.func @alloc
// CHECK: gpu.thread_id x
// CHECK: %[[DYN:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[OFF:.+]] = arith.constant 8192 : index
// CHECK: memref.view %[[DYN]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
func.func @alloc() {
  %k = flash_tile.alloc {offset = 8192} : !flash_tile.shared<2x64x64xf16, #smem>
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// 64 rows x 64 columns over 128 threads: 4 runs of 16 bytes per thread,
// 16 rows apart; rows at or past `valid` read 0 bytes.
// The thread's start in the source, where the source is defined: its row
// and its column, in bytes, from the matrix's aligned pointer as a global
// address.
// CHECK-LABEL: func.func @async_copy
// CHECK: %{{.+}}, %[[OFF:.+]], %{{.+}}:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[ROWB:.+]] = arith.muli %[[STRIDES]]#0, %c2
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[GEN:.+]] = llvm.inttoptr %{{.+}} : i64 to !llvm.ptr
// CHECK: %[[GLOBAL:.+]] = llvm.addrspacecast %[[GEN]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: %[[START:.+]] = llvm.getelementptr %[[GLOBAL]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// `valid` clamped to [0, 64], rows compared in i32.
// CHECK: %[[MIN:.+]] = arith.minsi %arg3, %c64
// CHECK: %[[CLAMP:.+]] = arith.maxsi %[[MIN]], %c0
// CHECK: %[[VALID:.+]] = arith.index_cast %[[CLAMP]] : index to i32
// The block's first row: one multiply per op.
// CHECK: %[[BLOCK:.+]] = arith.muli %arg1, %[[ROWB]] : index
// CHECK: %[[BLOCK64:.+]] = arith.index_cast %[[BLOCK]] : index to i64
// CHECK: %[[P0:.+]] = llvm.getelementptr %[[START]][%[[BLOCK64]]]
// CHECK: %[[OK0:.+]] = arith.cmpi ult, %{{.+}}, %[[VALID]] : i32
// CHECK: %[[N0:.+]] = arith.select %[[OK0]], %c16_i32, %c0_i32 : i32
// In shared memory, bytes: the stage's start plus the thread's, once.
// CHECK: %[[STAGE:.+]] = arith.muli %arg2, %c8192 : index
// CHECK: %[[START:.+]] = arith.addi %[[STAGE]], %{{.+}} : index
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P0]], 16, cache =  cg, %[[N0]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
// Each further copy: the previous one's address plus 16 rows, and in
// shared memory the start plus 16 rows of 128 bytes.
// CHECK: %[[STEP:.+]] = arith.muli %[[ROWB]], %c16
// CHECK: %[[STEP64:.+]] = arith.index_cast %[[STEP]] : index to i64
// CHECK: %[[P1:.+]] = llvm.getelementptr %[[P0]][%[[STEP64]]]
// CHECK: arith.addi %[[START]], %c2048 : index
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P1]], 16
// CHECK: %[[P2:.+]] = llvm.getelementptr %[[P1]][%{{.+}}]
// CHECK: arith.addi %[[START]], %c4096 : index
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P2]], 16
// CHECK: %[[P3:.+]] = llvm.getelementptr %[[P2]][%{{.+}}]
// CHECK: arith.addi %[[START]], %c6144 : index
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P3]], 16
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
func.func @async_copy(%src: memref<?x64xf16>, %row: index, %stage: index, %n: index) {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %k[%stage] valid %n {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_wait pending 1
  return
}

// -----

// async_commit closes a group and waits for nothing: no barrier.
// CHECK-LABEL: func.func @async_commit
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: return
func.func @async_commit() {
  flash_tile.async_commit
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// A constant `valid` of all 64 rows (a full block): the copies read all
// their bytes, with no comparison and no source size.
// CHECK-LABEL: func.func @async_copy_full
// CHECK-NOT: arith.cmpi
// CHECK-NOT: arith.select
// CHECK-COUNT-4: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK-NOT: nvvm.cp.async.shared.global
func.func @async_copy_full(%src: memref<?x64xf16>, %row: index, %stage: index) {
  %c64 = arith.constant 64 : index
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %k[%stage] valid %c64 {layout = #copy}
      : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #smem>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#b = #flash_tile.operand<b, #mma>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// Q as A operands: 4 ldmatrix.x4 (16 rows x 64 columns per warp). K^T from
// K rows: untransposed, two n8 tiles per x4, 4 k-steps x 4 pairs. V rows:
// transposed.
// CHECK-LABEL: func.func @local_load
// CHECK-COUNT-4: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<4096xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-COUNT-16: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-COUNT-16: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = true} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-NOT: nvgpu.ldmatrix
func.func @local_load(%stage: index) -> (!flash_tile.tile<64x64xf16, #a>,
    !flash_tile.tile<64x64xf16, #b>, !flash_tile.tile<64x64xf16, #b>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  %k = flash_tile.alloc {offset = 8192} : !flash_tile.shared<2x64x64xf16, #smem>
  %qa = flash_tile.local_load %q[%c0] : !flash_tile.shared<1x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #a>
  %kt = flash_tile.local_load %k[%stage] transpose : !flash_tile.shared<2x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #b>
  %vb = flash_tile.local_load %k[%stage] : !flash_tile.shared<2x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #b>
  return %qa, %kt, %vb : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>, !flash_tile.tile<64x64xf16, #b>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#copy = #flash_tile.blocked<size = [1, 8], threads = [8, 4], warps = [4, 1]>
#padded = #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
// Rows of 96 columns (12 chunks) padded to 104 (13): a stage is 64 x 104
// elements, a row 208 bytes. The copy's 6 runs per thread (2 row passes x
// 3 column passes) and Q's 6 ldmatrix.x4 per warp (16 rows x 96 columns)
// add constants to one base.
// CHECK-LABEL: func.func @padded_rows
// CHECK: memref.view %{{.+}}[%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<13312xf16, #gpu.address_space<workgroup>>
// CHECK: arith.constant 13312 : index
// CHECK-COUNT-6: nvvm.cp.async.shared.global
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK-COUNT-6: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<13312xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-NOT: nvgpu.ldmatrix
func.func @padded_rows(%src: memref<?x96xf16>, %row: index, %n: index, %stage: index)
    -> !flash_tile.tile<64x96xf16, #a> {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x96xf16, #padded>
  flash_tile.async_copy %src[%row], %k[%stage] valid %n {layout = #copy}
      : memref<?x96xf16>, !flash_tile.shared<2x64x96xf16, #padded>
  %q = flash_tile.local_load %k[%stage] : !flash_tile.shared<2x64x96xf16, #padded> -> !flash_tile.tile<64x96xf16, #a>
  return %q : !flash_tile.tile<64x96xf16, #a>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#smem = #flash_tile.swizzled<vector = 8, phases = 2, rowsPerPhase = 4>
// Rows of 16 f16 (2 chunks, 32 bytes) lie 4 to the banks' 128 bytes:
// rows 4 to 7 of every 8 swap their two chunks, so the 8 rows an ldmatrix
// reads take 8 bank groups. Element (r, c) of a stage is at
// r * 16 + ((c / 8) xor ((r / 4) mod 2)) * 8 + c mod 8.
// CHECK-LABEL: func.func @narrow_rows
// CHECK: %[[COL:.+]] = arith.muli %{{.+}}, %c8 : index
// CHECK: %[[ROW:.+]] = arith.addi
// CHECK: %[[ROWSTART:.+]] = arith.muli %[[ROW]], %c16{{.*}} : index
// CHECK: %[[CHUNK:.+]] = arith.divui %[[COL]], %[[C8:.+]] : index
// CHECK: %[[WITHIN:.+]] = arith.remui %[[COL]], %[[C8]] : index
// CHECK: %[[QUAD:.+]] = arith.divui %[[ROW]], %c4 : index
// CHECK: %[[PHASE:.+]] = arith.remui %[[QUAD]], %c2 : index
// CHECK: %[[MOVED:.+]] = arith.xori %[[CHUNK]], %[[PHASE]] : index
// CHECK: %[[AT:.+]] = arith.muli %[[MOVED]], %[[C8]] : index
// CHECK: %[[IN:.+]] = arith.addi %[[AT]], %[[WITHIN]] : index
// CHECK: arith.addi %[[ROWSTART]], %[[IN]] : index
// CHECK: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<2048xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-NOT: nvgpu.ldmatrix
func.func @narrow_rows(%stage: index) -> !flash_tile.tile<64x16xf16, #a> {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x16xf16, #smem>
  %q = flash_tile.local_load %k[%stage] : !flash_tile.shared<2x64x16xf16, #smem> -> !flash_tile.tile<64x16xf16, #a>
  return %q : !flash_tile.tile<64x16xf16, #a>
}

// -----

#elem = #flash_tile.blocked<size = [1, 1], threads = [1, 32], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// Rows of 59 elements (not whole 4-byte units) into a stage of 64
// columns: element runs are plain loads and shared stores, zeros for rows
// past `valid` and for columns past the source's. Of a thread's two
// columns (lane, lane + 32) only the second can be past 59.
// CHECK-LABEL: func.func @narrow_elements
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK: %[[ROW0:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : i32
// CHECK: %[[X0:.+]] = scf.if %[[ROW0]] -> (f16) {
// CHECK-NEXT: llvm.load %{{.+}} : !llvm.ptr<1> -> f16
// CHECK: } else {
// CHECK-NEXT: scf.yield %{{.+}} : f16
// CHECK: llvm.store %[[X0]], %{{.+}} : f16, !llvm.ptr<3>
// CHECK: %[[COL:.+]] = arith.addi %[[LANE]], %c32
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[COL]], %c59 : index
// CHECK: %[[ROW1:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : i32
// CHECK: %[[BOTH:.+]] = arith.andi %[[IN]], %[[ROW1]] : i1
// CHECK: scf.if %[[BOTH]] -> (f16) {
// CHECK-NOT: nvvm.cp.async.shared.global
func.func @narrow_elements(%src: memref<?x59xf16>, %row: index, %n: index, %stage: index) {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %k[%stage] valid %n {layout = #elem}
      : memref<?x59xf16>, !flash_tile.shared<2x64x64xf16, #smem>
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [16, 2], warps = [4, 1]>
#padded = #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
// 40 columns (5 chunks) into a stage of 48: the third pass's chunk (32 +
// 8 * (lane % 2)) is past the source for odd lanes, whose copy reads 0
// bytes and zero-fills.
// CHECK-LABEL: func.func @narrow_chunks
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg, %{{.+}}
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg, %{{.+}}
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %c40 : index
// CHECK: %[[ROW:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : i32
// CHECK: %[[READ:.+]] = arith.andi %[[IN]], %[[ROW]] : i1
// CHECK: %[[N:.+]] = arith.select %[[READ]], %c16_i32, %c0_i32 : i32
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg, %[[N]]
func.func @narrow_chunks(%src: memref<?x40xf16>, %row: index, %n: index, %stage: index) {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x48xf16, #padded>
  flash_tile.async_copy %src[%row], %k[%stage] valid %n {layout = #copy}
      : memref<?x40xf16>, !flash_tile.shared<2x64x48xf16, #padded>
  return
}

// -----

#rows = #flash_tile.blocked<size = [1, 1], threads = [1, 32], warps = [4, 1]>
// A 64-column tile from 61 columns (the combine's partials at Dv = 61): a
// thread's columns lane and lane + 32; the second is read only below 61,
// zero otherwise.
// CHECK-LABEL: func.func @narrow_load
// CHECK: scf.if %{{.+}} -> (vector<2xf32>) {
// CHECK: memref.load %arg0[%{{.+}}, %{{.+}}] : memref<?x61xf32>
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %c61 : index
// CHECK-NEXT: scf.if %[[IN]] -> (f32) {
// CHECK-NEXT: memref.load %arg0[%{{.+}}, %{{.+}}] : memref<?x61xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %{{.+}} : f32
func.func @narrow_load(%src: memref<?x61xf32>, %row: index, %n: index)
    -> !flash_tile.tile<4x64xf32, #rows> {
  %t = flash_tile.load %src[%row] valid %n : memref<?x61xf32> -> !flash_tile.tile<4x64xf32, #rows>
  return %t : !flash_tile.tile<4x64xf32, #rows>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// A 64-column tile into 59 columns: the first 7 n8 tiles are written
// whole, the last one (columns 56 + 2 * (lane % 4) + 0, 1) element by
// element, each checked against 59.
// CHECK-LABEL: func.func @narrow_store
// CHECK: scf.if
// CHECK-COUNT-14: memref.store %{{.+}}, %arg1[%{{.+}}, %{{.+}}] : memref<?x59xf16>
// CHECK: %[[C0:.+]] = arith.cmpi ult, %{{.+}}, %c59 : index
// CHECK-NEXT: scf.if %[[C0]] {
// CHECK-NEXT: memref.store
// CHECK: %[[C1:.+]] = arith.cmpi ult, %{{.+}}, %c59{{.*}} : index
// CHECK-NEXT: scf.if %[[C1]] {
// CHECK-NEXT: memref.store
func.func @narrow_store(%o: !flash_tile.tile<64x64xf16, #mma>, %out: memref<?x59xf16>, %row: index, %n: index) {
  flash_tile.store %o, %out[%row] valid %n : !flash_tile.tile<64x64xf16, #mma>, memref<?x59xf16>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#b = #flash_tile.operand<b, #mma>
// 16 x 32 per warp from K = 32: 4 n8 tiles x 2 k-steps; bf16 through
// nvvm.mma.sync. B is replicated over the 4 row warps: 32 values each.
// CHECK-LABEL: func.func @mma
// CHECK-SAME: (%{{.+}}: vector<16xf16>, %{{.+}}: vector<32xf16>, %{{.+}}: vector<16xf32>) -> vector<16xf32>
// CHECK-COUNT-8: nvgpu.mma.sync(%{{.+}}, %{{.+}}, %{{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: vector.from_elements {{.*}} : vector<16xf32>
func.func @mma(%x: !flash_tile.tile<64x32xf16, #a>, %y: !flash_tile.tile<32x32xf16, #b>,
               %acc: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64x32xf32, #mma> {
  %r = flash_tile.mma %x, %y, %acc : !flash_tile.tile<64x32xf16, #a>, !flash_tile.tile<32x32xf16, #b>, !flash_tile.tile<64x32xf32, #mma>
  return %r : !flash_tile.tile<64x32xf32, #mma>
}
// CHECK-LABEL: func.func @mma_bf16
// CHECK-COUNT-8: nvvm.mma.sync
func.func @mma_bf16(%x: !flash_tile.tile<64x32xbf16, #a>, %y: !flash_tile.tile<32x32xbf16, #b>,
                    %acc: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64x32xf32, #mma> {
  %r = flash_tile.mma %x, %y, %acc : !flash_tile.tile<64x32xbf16, #a>, !flash_tile.tile<32x32xbf16, #b>, !flash_tile.tile<64x32xf32, #mma>
  return %r : !flash_tile.tile<64x32xf32, #mma>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#row = #flash_tile.slice<1, #mma>
// Row maxima: a thread's 8 values of each of its 2 rows, then the quad's
// lanes (xor 1, 2). max.f32, not libdevice.
// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%{{.+}}: vector<16xf32>) -> vector<2xf32>
// CHECK-COUNT-14: llvm.intr.maxnum
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: llvm.intr.maxnum
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32{{.*}} : f32
// CHECK: vector.from_elements %{{.+}}, %{{.+}} : vector<2xf32>
func.func @reduce(%s: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64xf32, #row> {
  %m = flash_tile.reduce max %s : !flash_tile.tile<64x32xf32, #mma> -> !flash_tile.tile<64xf32, #row>
  return %m : !flash_tile.tile<64xf32, #row>
}
// The rescale of O: each value times its row's factor, in a branch that a
// thread whose 2 factors are both 1 skips (its values stay as they are).
// CHECK-LABEL: func.func @rescale
// CHECK-SAME: (%[[ACC:.+]]: vector<16xf32>, %[[F:.+]]: vector<2xf32>) -> vector<16xf32>
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[F0:.+]] = vector.extract %[[F]][0]
// CHECK: %[[N0:.+]] = arith.cmpf une, %[[F0]], %[[ONE]]
// CHECK: %[[F1:.+]] = vector.extract %[[F]][1]
// CHECK: %[[N1:.+]] = arith.cmpf une, %[[F1]], %[[ONE]]
// CHECK: %[[ANY:.+]] = arith.ori %[[N0]], %[[N1]]
// CHECK: %[[R:.+]] = scf.if %[[ANY]] -> (vector<16xf32>) {
// CHECK-COUNT-16: arith.mulf
// CHECK: scf.yield %{{.+}} : vector<16xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ACC]] : vector<16xf32>
// CHECK: return %[[R]]
func.func @rescale(%o: !flash_tile.tile<64x32xf32, #mma>, %alpha: !flash_tile.tile<64xf32, #row>) -> !flash_tile.tile<64x32xf32, #mma> {
  %r = flash_tile.rescale %o by %alpha : !flash_tile.tile<64x32xf32, #mma>, !flash_tile.tile<64xf32, #row>
  return %r : !flash_tile.tile<64x32xf32, #mma>
}
// CHECK-LABEL: func.func @reduce_sum
// CHECK: arith.addf
// CHECK: gpu.shuffle  xor
func.func @reduce_sum(%s: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64xf32, #row> {
  %m = flash_tile.reduce sum %s : !flash_tile.tile<64x32xf32, #mma> -> !flash_tile.tile<64xf32, #row>
  return %m : !flash_tile.tile<64xf32, #row>
}
// Folded row sums: a thread's 16 values (4 n-tiles of the accumulator's
// 4 values) into its 4 values of one n-tile, 3 adds each: value v of
// n-tile k (element 4 k + v) goes to value v, in the thread, and no lane
// exchanges anything.
// CHECK-LABEL: func.func @fold
// CHECK-SAME: (%[[S:.+]]: vector<16xf32>) -> vector<4xf32>
// CHECK: %[[A:.+]] = vector.extract %[[S]][0]
// CHECK: %[[B:.+]] = vector.extract %[[S]][4]
// CHECK: arith.addf %[[A]], %[[B]] : f32
// CHECK-COUNT-11: arith.addf
// CHECK-NOT: arith.addf
// CHECK-NOT: gpu.shuffle
// CHECK: vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf32>
func.func @fold(%s: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64x8xf32, #mma> {
  %l = flash_tile.fold sum %s : !flash_tile.tile<64x32xf32, #mma> -> !flash_tile.tile<64x8xf32, #mma>
  return %l : !flash_tile.tile<64x8xf32, #mma>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#row = #flash_tile.slice<1, #mma>
// The region once per value: value 0 of the thread meets its row's value
// 0 of the maxima, value 2 (8 rows below) value 1. exp2 is ex2.approx.
// CHECK-LABEL: func.func @map
// CHECK-SAME: (%[[S:.+]]: vector<16xf32>, %[[M:.+]]: vector<2xf32>)
// CHECK: %[[S0:.+]] = vector.extract %[[S]][0] : f32 from vector<16xf32>
// CHECK: %[[M0:.+]] = vector.extract %[[M]][0] : f32 from vector<2xf32>
// CHECK: %[[D0:.+]] = arith.subf %[[S0]], %[[M0]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[D0]])
// CHECK: vector.extract %[[S]][1]
// CHECK: vector.extract %[[M]][0]
// CHECK: vector.extract %[[S]][2]
// CHECK: vector.extract %[[M]][1]
// CHECK-COUNT-13: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: vector.from_elements {{.*}} : vector<16xf32>
func.func @map(%s: !flash_tile.tile<64x32xf32, #mma>, %m: !flash_tile.tile<64xf32, #row>)
    -> !flash_tile.tile<64x32xf32, #mma> {
  %p = flash_tile.map %s, %m : !flash_tile.tile<64x32xf32, #mma>, !flash_tile.tile<64xf32, #row> -> !flash_tile.tile<64x32xf32, #mma> {
  ^bb0(%x: f32, %y: f32):
    %d = arith.subf %x, %y : f32
    %e = math.exp2 %d : f32
    flash_tile.yield %e : f32
  }
  return %p : !flash_tile.tile<64x32xf32, #mma>
}
// Indices: the thread's row (warp * 16 + lane / 4) and column
// (2 * (lane % 4)) at the entry, plus each value's constants.
// CHECK-LABEL: func.func @map_indices
// CHECK: %[[T:.+]] = gpu.thread_id x
// CHECK: %[[Q:.+]] = arith.remui %[[T]], %c4 : index
// CHECK: %[[COL:.+]] = arith.muli %[[Q]], %c2 : index
// CHECK: %[[LANE:.+]] = arith.remui %[[T]], %c32{{.*}} : index
// CHECK: %[[G:.+]] = arith.divui %[[LANE]], %c4{{.*}} : index
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[G]] : index
// CHECK: arith.cmpi ule, %[[COL]], %[[ROW]] : index
func.func @map_indices(%s: !flash_tile.tile<64x32xf32, #mma>) -> !flash_tile.tile<64x32xf32, #mma> {
  %p = flash_tile.map indices %s : !flash_tile.tile<64x32xf32, #mma> -> !flash_tile.tile<64x32xf32, #mma> {
  ^bb0(%i: index, %j: index, %x: f32):
    %ninf = arith.constant 0xFF800000 : f32
    %keep = arith.cmpi ule, %j, %i : index
    %y = arith.select %keep, %x, %ninf : f32
    flash_tile.yield %y : f32
  }
  return %p : !flash_tile.tile<64x32xf32, #mma>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
// An f16 accumulator is the A operand of the same MMA: a shuffle of the
// thread's own values (tile n of the accumulator, values 0..3, then n + 1).
// CHECK-LABEL: func.func @convert_layout
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<16xf16>, vector<16xf16>
func.func @convert_layout(%p: !flash_tile.tile<64x32xf16, #mma>) -> !flash_tile.tile<64x32xf16, #a> {
  %a = flash_tile.convert_layout %p : !flash_tile.tile<64x32xf16, #mma> -> !flash_tile.tile<64x32xf16, #a>
  return %a : !flash_tile.tile<64x32xf16, #a>
}
// CHECK-LABEL: func.func @splat
// CHECK: vector.broadcast %{{.+}} : f32 to vector<2xf32>
func.func @splat(%x: f32) -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>> {
  %t = flash_tile.splat %x : !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
  return %t : !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// Stores: one predicate per row of the thread (2 rows x 4 n8 tiles, 2
// values each).
// CHECK-LABEL: func.func @store
// CHECK-COUNT-2: scf.if
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<?x32xf32>
func.func @store(%o: !flash_tile.tile<64x32xf32, #mma>, %out: memref<?x32xf32>, %row: index, %n: index) {
  flash_tile.store %o, %out[%row] valid %n : !flash_tile.tile<64x32xf32, #mma>, memref<?x32xf32>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// With a 16-byte alignment, a thread's two columns of each n8 tile are one
// 4-byte store of f16.
// CHECK-LABEL: func.func @store_pairs
// CHECK-COUNT-2: scf.if
// CHECK-NOT: scf.if
// CHECK-COUNT-4: vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<?x32xf16>, vector<2xf16>
// CHECK-NOT: memref.store
func.func @store_pairs(%o: !flash_tile.tile<64x32xf16, #mma>, %out: memref<?x32xf16>, %row: index, %n: index) {
  flash_tile.store %o, %out[%row] valid %n {alignment = 16} : !flash_tile.tile<64x32xf16, #mma>, memref<?x32xf16>
  return
}

// -----

#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
#weight = #flash_tile.slice<1, #rows>
// Loads of a blocked tile: a thread's 16-byte runs are vector loads of its
// row when the row is valid (below `valid`, in a group below `groups`),
// zeros otherwise; 2 runs of the 256 columns. A row's weight (a slice of
// the blocked layout) is one scalar load in every lane of the row. A
// slice's store is written by lane 0 of the row's warp.
// CHECK-LABEL: func.func @load
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c32
// CHECK: %[[COL:.+]] = arith.muli %{{.+}}, %c4
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[ROW:.+]] = arith.remui %[[WARP]], %c4
// CHECK: %[[GROUP:.+]] = arith.divui %[[ROW]], %c1
// CHECK: %[[IN:.+]] = arith.remui %[[ROW]], %c1
// CHECK: %[[VALID:.+]] = arith.cmpi slt, %[[IN]], %arg3
// CHECK: %[[GROUPS:.+]] = arith.cmpi slt, %[[GROUP]], %arg4
// CHECK: %[[OK:.+]] = arith.andi %[[VALID]], %[[GROUPS]]
// CHECK: scf.if %[[OK]] -> (vector<8xf32>)
// CHECK: vector.load %arg0[%[[GROUP]], %{{.+}}, %[[COL]]] {alignment = 16 : i64} : memref<4x?x256xf32>, vector<4xf32>
// CHECK: %[[COL2:.+]] = arith.addi %[[COL]], %c128
// CHECK: vector.load %arg0[%[[GROUP]], %{{.+}}, %[[COL2]]] {alignment = 16 : i64} : memref<4x?x256xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK: scf.if %{{.+}} -> (vector<1xf32>)
// CHECK: memref.load %arg1[%{{.+}}, %{{.+}}, %{{.+}}] : memref<4x?x1xf32>
// CHECK: %[[LANE0:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[STORE:.+]] = arith.andi %{{.+}}, %[[LANE0]]
// CHECK: scf.if %[[STORE]] {
// CHECK: memref.store %{{.+}}, %arg1[%{{.+}}, %{{.+}}, %{{.+}}] : memref<4x?x1xf32>
func.func @load(%parts: memref<4x?x256xf32>, %lse: memref<4x?x1xf32>, %row: index, %n: index, %g: index)
    -> !flash_tile.tile<4x256xf32, #rows> {
  %p = flash_tile.load %parts[%row] valid %n groups %g {alignment = 16}
      : memref<4x?x256xf32> -> !flash_tile.tile<4x256xf32, #rows>
  %w = flash_tile.load %lse[%row] valid %n groups %g
      : memref<4x?x1xf32> -> !flash_tile.tile<4xf32, #weight>
  flash_tile.store %w, %lse[%row] valid %n groups %g : !flash_tile.tile<4xf32, #weight>, memref<4x?x1xf32>
  return %p : !flash_tile.tile<4x256xf32, #rows>
}

// -----

#rows = #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>
#weight = #flash_tile.slice<1, #rows>
// Clamped loads: a row past `valid` reads row valid - 1 and a group past
// `groups` group groups - 1, with no branch around the reads.
// CHECK-LABEL: func.func @clamped_load
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[COL:.+]] = arith.muli %{{.+}}, %c4
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[ROW:.+]] = arith.remui %[[WARP]], %c4
// CHECK: %[[GROUP:.+]] = arith.divui %[[ROW]], %c1
// CHECK: %[[IN:.+]] = arith.remui %[[ROW]], %c1
// CHECK-NOT: scf.if
// CHECK: %[[LASTROW:.+]] = arith.subi %arg3, %c1
// CHECK: %[[CROW:.+]] = arith.minsi %[[IN]], %[[LASTROW]]
// CHECK: %[[LASTGROUP:.+]] = arith.subi %arg4, %c1
// CHECK: %[[CGROUP:.+]] = arith.minsi %[[GROUP]], %[[LASTGROUP]]
// CHECK: %[[AT:.+]] = arith.addi %arg2, %[[CROW]]
// CHECK: vector.load %arg0[%[[CGROUP]], %[[AT]], %[[COL]]] {alignment = 16 : i64} : memref<4x?x256xf32>, vector<4xf32>
// CHECK: vector.load %arg0[%[[CGROUP]], %[[AT]], %{{.+}}] {alignment = 16 : i64} : memref<4x?x256xf32>, vector<4xf32>
// CHECK-NOT: scf.if
// CHECK: memref.load %arg1[%{{.+}}, %{{.+}}, %{{.+}}] : memref<4x?x1xf32>
// CHECK-NOT: scf.if
// CHECK: return
func.func @clamped_load(%parts: memref<4x?x256xf32>, %lse: memref<4x?x1xf32>, %row: index, %n: index, %g: index)
    -> (!flash_tile.tile<4x256xf32, #rows>, !flash_tile.tile<4xf32, #weight>) {
  %p = flash_tile.load %parts[%row] valid %n groups %g clamp {alignment = 16}
      : memref<4x?x256xf32> -> !flash_tile.tile<4x256xf32, #rows>
  %w = flash_tile.load %lse[%row] valid %n groups %g clamp
      : memref<4x?x1xf32> -> !flash_tile.tile<4xf32, #weight>
  return %p, %w : !flash_tile.tile<4x256xf32, #rows>, !flash_tile.tile<4xf32, #weight>
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// Groups of rows: 4 groups of 16 tile rows each. A run's row r reads row
// r % 16 of group r / 16; stores likewise. A thread's 4 runs are 16 rows
// apart, so each is one group further: the next address adds a group's
// bytes, and every run compares the thread's own row with `valid`.
// CHECK-LABEL: func.func @grouped
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:3, %[[STRIDES:.+]]:3 = memref.extract_strided_metadata %arg0
// CHECK: %[[ROWB:.+]] = arith.muli %[[STRIDES]]#1, %c2
// CHECK: %[[GROUPB:.+]] = arith.muli %[[STRIDES]]#0, %c2
// CHECK: arith.minsi %arg3, %c16
// CHECK: %[[P0:.+]] = llvm.getelementptr
// CHECK: %[[ROW:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: arith.cmpi ult, %[[ROW]], %{{.+}} : i32
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P0]], 16
// CHECK: %[[GROUP64:.+]] = arith.index_cast %[[GROUPB]] : index to i64
// CHECK: %[[P1:.+]] = llvm.getelementptr %[[P0]][%[[GROUP64]]]
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %[[P1]], 16
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : memref<4x?x64xf32>
func.func @grouped(%src: memref<4x?x64xf16>, %out: memref<4x?x64xf32>, %row: index, %n: index,
                   %o: !flash_tile.tile<64x64xf32, #mma>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %q[%c0] valid %n {layout = #copy}
      : memref<4x?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.store %o, %out[%row] valid %n : !flash_tile.tile<64x64xf32, #mma>, memref<4x?x64xf32>
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// With `groups`, the runs of groups from `groups` on read nothing: each of
// a thread's 4 runs (one per group) also compares its constant group with
// `groups`, and its cp.async copies 0 bytes (zero-fills) where either
// comparison fails.
// CHECK-LABEL: func.func @valid_groups
// CHECK: %[[INROW:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : i32
// CHECK: %[[INGROUP:.+]] = arith.cmpi ult, %c0{{.*}}, %arg3 : index
// CHECK: %[[READ:.+]] = arith.andi %[[INROW]], %[[INGROUP]] : i1
// CHECK: %[[N:.+]] = arith.select %[[READ]], %c16_i32, %c0_i32 : i32
// CHECK: nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache = {{.*}}, %[[N]]
// CHECK: arith.cmpi ult, %c1{{.*}}, %arg3 : index
// CHECK: arith.cmpi ult, %c2{{.*}}, %arg3 : index
// CHECK: arith.cmpi ult, %c3{{.*}}, %arg3 : index
func.func @valid_groups(%src: memref<4x?x64xf16>, %row: index, %n: index,
                        %g: index) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %q[%c0] valid %n groups %g {layout = #copy}
      : memref<4x?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
  return
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// 8 groups of 8 tile rows: a thread's run of 16 rows takes rows of two
// groups, so each run finds its group and row from the tile row (division
// and remainder) and adds both to the thread's column.
// CHECK-LABEL: func.func @straddling_groups
// CHECK: arith.minsi %arg2, %c8
// CHECK: %[[G:.+]] = arith.divui %{{.+}}, %c8{{.*}} : index
// CHECK: %[[R:.+]] = arith.remui %{{.+}}, %c8{{.*}} : index
// CHECK: arith.muli %[[R]], %{{.+}} : index
// CHECK: arith.muli %[[G]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.index_cast %[[R]] : index to i32
// CHECK: arith.cmpi ult, %[[ROW]], %{{.+}} : i32
// CHECK: nvvm.cp.async.shared.global
func.func @straddling_groups(%src: memref<8x?x64xf16>, %row: index, %n: index) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x64xf16, #smem>
  flash_tile.async_copy %src[%row], %q[%c0] valid %n {layout = #copy}
      : memref<8x?x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
  return
}

// -----

#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// A batch of 4 kv warps: warp w reads K rows [32 w, 32 w + 32) of the
// stage (its 32 keys) as the B operand, 4 k-steps x 2 pairs of n8 tiles,
// and multiplies by Q, which every warp already holds: the broadcast is a
// register copy. Each warp's matrix is 16 x 32: 4 n-tiles x 4 k-steps of
// mma.sync. The row maxima stay within the warp (quad shuffles only).
// CHECK-LABEL: func.func @batched
// CHECK: %[[TID:.+]] = gpu.thread_id  x
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[KVW:.+]] = arith.remui %[[WARP]], %c4
// CHECK: arith.muli %[[KVW]], %c32
// CHECK: vector.shuffle
// CHECK-COUNT-8: nvgpu.ldmatrix %{{.+}}[%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<16384xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-COUNT-16: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32
// CHECK-NOT: gpu.shuffle  xor %{{.+}}, %c4_i32
// CHECK: vector.from_elements %{{.+}}, %{{.+}} : vector<2xf32>
func.func @batched(%q: !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>, %stage: index)
    -> !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>> {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x128x64xf16, #smem>
  %qb = flash_tile.broadcast %q : !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flat>>
      -> !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #mma>>
  %kt = flash_tile.local_load %k[%stage] transpose : !flash_tile.shared<2x128x64xf16, #smem>
      -> !flash_tile.tile<4x64x32xf16, #flash_tile.operand<b, #mma>>
  %zero = arith.constant 0.0 : f32
  %s0 = flash_tile.splat %zero : !flash_tile.tile<4x16x32xf32, #mma>
  %s = flash_tile.mma %qb, %kt, %s0 : !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #mma>>,
      !flash_tile.tile<4x64x32xf16, #flash_tile.operand<b, #mma>>, !flash_tile.tile<4x16x32xf32, #mma>
  %m = flash_tile.reduce max %s : !flash_tile.tile<4x16x32xf32, #mma>
      -> !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>
  return %m : !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// The kv warps' row maxima meet through shared memory: a barrier, each
// quad's first lane writes its 2 rows (f32, at the scratch's offset), a
// barrier, and each thread reads its 2 rows of each of the 4 warps.
// CHECK-LABEL: func.func @batch_reduce
// CHECK: %[[SCRATCH:.+]] = memref.view %{{.+}}[%c256{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-2: memref.store %{{.+}}, %[[SCRATCH]]
// CHECK: }
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[SCRATCH]]
// CHECK-NOT: memref.load
// CHECK: vector.from_elements %{{.+}}, %{{.+}} : vector<2xf32>
func.func @batch_reduce(%m: !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>)
    -> !flash_tile.tile<16xf32, #flash_tile.slice<1, #flat>> {
  %k = flash_tile.alloc {offset = 256} : !flash_tile.shared<1x16x64xf16, #smem>
  %r = flash_tile.batch_reduce max %m, %k : !flash_tile.tile<4x16xf32, #flash_tile.slice<2, #mma>>,
      !flash_tile.shared<1x16x64xf16, #smem> -> !flash_tile.tile<16xf32, #flash_tile.slice<1, #flat>>
  return %r : !flash_tile.tile<16xf32, #flash_tile.slice<1, #flat>>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// The kv warps' accumulators meet through shared memory in rows of 64 f32,
// each row's columns XOR-swizzled by 8 x (row mod 4), so that the 8 rows a
// store or load of pairs covers fall in different banks. Each thread
// stores its 16 pairs (every thread owns its values: no condition) and
// loads its 4 pairs of each of the 4 warps, 8 bytes at a time.
// CHECK-LABEL: func.func @batch_reduce_rows
// CHECK: %[[SCRATCH:.+]] = memref.view %{{.+}} to memref<4096xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-NOT: scf.if
// CHECK: %[[BITS:.+]] = arith.andi %{{.+}}, %c3{{.*}} : index
// CHECK: %[[SHIFTED:.+]] = arith.shli %[[BITS]], %c3{{.*}} : index
// CHECK: %[[COL:.+]] = arith.xori %{{.+}}, %[[SHIFTED]] : index
// CHECK: %[[AT:.+]] = arith.addi %{{.+}}, %[[COL]] : index
// CHECK: vector.store %{{.+}}, %[[SCRATCH]][%[[AT]]] {alignment = 8 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-COUNT-15: vector.store %{{.+}}, %[[SCRATCH]]
// CHECK-NOT: vector.store
// CHECK: gpu.barrier
// CHECK-COUNT-16: vector.load %[[SCRATCH]]{{.+}} {alignment = 8 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: vector.load
// CHECK: vector.from_elements {{.+}} : vector<8xf32>
func.func @batch_reduce_rows(%o: !flash_tile.tile<4x16x64xf32, #mma>)
    -> !flash_tile.tile<16x64xf32, #flat> {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  %r = flash_tile.batch_reduce sum %o, %k : !flash_tile.tile<4x16x64xf32, #mma>,
      !flash_tile.shared<2x64x64xf16, #smem> -> !flash_tile.tile<16x64xf32, #flat>
  return %r : !flash_tile.tile<16x64xf32, #flat>
}

// -----

#mma = #flash_tile.mma<warps = [2, 1, 1], instr = [16, 8, 16]>
#flat = #flash_tile.mma<warps = [1, 2], instr = [16, 8, 16]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// Rows of 80 f32 (an odd multiple of 16), of 2 kv warps, start in two
// banks, 0 and 16: the swizzle is 8 x ((row / 2) mod 2).
// CHECK-LABEL: func.func @batch_reduce_rows_80
// CHECK: %[[HALF:.+]] = arith.shrui %{{.+}}, %c1{{.*}} : index
// CHECK: %[[BITS:.+]] = arith.andi %[[HALF]], %c1{{.*}} : index
// CHECK: %[[SHIFTED:.+]] = arith.shli %[[BITS]], %c3{{.*}} : index
// CHECK: arith.xori %{{.+}}, %[[SHIFTED]] : index
func.func @batch_reduce_rows_80(%o: !flash_tile.tile<2x16x80xf32, #mma>)
    -> !flash_tile.tile<16x80xf32, #flat> {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x80x64xf16, #smem>
  %r = flash_tile.batch_reduce sum %o, %k : !flash_tile.tile<2x16x80xf32, #mma>,
      !flash_tile.shared<1x80x64xf16, #smem> -> !flash_tile.tile<16x80xf32, #flat>
  return %r : !flash_tile.tile<16x80xf32, #flat>
}

// -----

#mma = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// Warpgroup MMAs. The buffers start 1024-aligned at run time: the
// dynamic shared memory's address, negated, modulo 1024, before every
// offset. S = Q K^T: Q (each warpgroup's 64 rows, 8192 bytes apart) and K
// by descriptors of the 128-byte swizzle (address / 16 in bits 0-13,
// leading offset 16 / 16 in bits 16-29, stride 1024 / 16 in bits 32-45,
// swizzle 1 in bits 62-63), K-major (imm-trans-b 0); k-steps of 32 bytes
// (+2). Every k-step's descriptors come first; then one block of inline
// PTX fences the registers, issues the k-steps (the accumulator tied in
// and out, scale-d p1 = true), commits them and waits: no instruction
// between them writes a register they read.
// CHECK-LABEL: func.func @warpgroup_mma
// CHECK: %[[DYN:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[DYN]]
// CHECK: %[[NEG:.+]] = arith.subi %c0, %[[BASE]] : index
// CHECK: %[[PAD:.+]] = arith.andi %[[NEG]], %c1023 : index
// CHECK: %[[QOFF:.+]] = arith.addi %[[PAD]], %c0
// CHECK: memref.view %[[DYN]][%[[QOFF]]][]
// CHECK: %[[KOFF:.+]] = arith.addi %[[PAD]], %c16384
// CHECK: memref.view %[[DYN]][%[[KOFF]]][]
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK-COUNT-6: arith.addi %{{.+}}, %c{{[246]}}_i64{{.*}} : i64
// CHECK-NOT: nvvm.wgmma
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p<2>;\0Asetp.ne.b32 p0, 0, 0;\0Asetp.ne.b32 p1, 1, 0;\0Awgmma.fence.sync.aligned;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.+}}, $31}, $64, $65, p1, 1, 1, 0, 0;\0Awgmma.mma_async{{.+}}$66, $67, p1, 1, 1, 0, 0;\0Awgmma.mma_async{{.+}}$68, $69, p1, 1, 1, 0, 0;\0Awgmma.mma_async{{.+}}$70, $71, p1, 1, 1, 0, 0;\0Awgmma.commit_group.sync.aligned;\0Awgmma.wait_group.sync.aligned 0;\0A}\0A", "=f,{{.+}},=f,0,1,{{.+}},31,l,l,l,l,l,l,l,l"
// O += P V: P from registers (four pairs of 16-bit values a k-step), V
// N-major (imm-trans-b 1), k-steps of 16 rows (2048 bytes: +128), the
// leading offset a stage (8192 bytes).
// CHECK: arith.constant 4611686293338849280 : i64
// CHECK: llvm.bitcast %{{.+}} : vector<2xf16> to i32
// CHECK: arith.addi %{{.+}}, %c128_i64 : i64
// CHECK-NOT: nvvm.wgmma
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p<2>;\0Asetp.ne.b32 p0, 0, 0;\0Asetp.ne.b32 p1, 1, 0;\0Awgmma.fence.sync.aligned;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.+}}, $31}, {$64, $65, $66, $67}, $68, p1, 1, 1, 1;\0A{{.+}}wgmma.commit_group.sync.aligned;\0Awgmma.wait_group.sync.aligned 0;\0A}\0A", "=f,{{.+}},=f,0,1,{{.+}},31,r,r,r,r,l,{{.+}}"
func.func @warpgroup_mma(%stage: index, %p: !flash_tile.tile<128x64xf16, #a>,
                         %acc: !flash_tile.tile<128x64xf32, #mma>)
    -> !flash_tile.tile<128x64xf32, #mma> {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x128x64xf16, #smem>
  %k = flash_tile.alloc {offset = 16384} : !flash_tile.shared<2x64x64xf16, #smem>
  %s = flash_tile.warpgroup_mma %q[%c0], %k[%stage] transpose, %acc
      : !flash_tile.shared<1x128x64xf16, #smem>, !flash_tile.shared<2x64x64xf16, #smem>, !flash_tile.tile<128x64xf32, #mma>
  %o = flash_tile.warpgroup_mma %p, %k[%stage], %s
      : !flash_tile.tile<128x64xf16, #a>, !flash_tile.shared<2x64x64xf16, #smem>, !flash_tile.tile<128x64xf32, #mma>
  return %o : !flash_tile.tile<128x64xf32, #mma>
}

// -----

// In a kernel with a warpgroup MMA, a wait fences the copies for the
// asynchronous proxy before the barrier.
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// CHECK-LABEL: func.func @warpgroup_wait
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
func.func @warpgroup_wait(%p: !flash_tile.tile<64x64xf16, #a>,
                          %acc: !flash_tile.tile<64x64xf32, #mma>) -> !flash_tile.tile<64x64xf32, #mma> {
  %c0 = arith.constant 0 : index
  %v = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x64xf16, #smem>
  flash_tile.async_wait pending 0
  %o = flash_tile.warpgroup_mma %p, %v[%c0], %acc
      : !flash_tile.tile<64x64xf16, #a>, !flash_tile.shared<2x64x64xf16, #smem>, !flash_tile.tile<64x64xf32, #mma>
  return %o : !flash_tile.tile<64x64xf32, #mma>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#panels = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// Rows of 128 f16 in two panels of 128 bytes. K-major (Q, K): the k-steps
// 0-3 walk the first panel's rows (+2 each, 32 bytes), 4-7 the second
// (a panel of 64 rows x 128 bytes on: +512). N-major (V, 32 keys of 128
// columns): the leading offset is a panel (32 x 128 bytes, 4096 / 16 in
// bits 16-29), which the instruction's N = 128 crosses.
// CHECK-LABEL: func.func @warpgroup_panels
// CHECK-COUNT-2: arith.constant 4611686293305360384 : i64
// CHECK: arith.addi %{{.+}}, %c2_i64
// CHECK: arith.addi %{{.+}}, %c4_i64
// CHECK: arith.addi %{{.+}}, %c6_i64
// CHECK: arith.addi %{{.+}}, %c512_i64
// CHECK: arith.addi %{{.+}}, %c512_i64
// CHECK: arith.addi %{{.+}}, %c514_i64
// CHECK: arith.addi %{{.+}}, %c514_i64
// CHECK: llvm.inline_asm {{.+}}wgmma.fence.sync.aligned;{{.+}}m64n64k16{{.+}}$64, $65, p1, 1, 1, 0, 0;
// CHECK: arith.constant 4611686293322072064 : i64
// CHECK: arith.addi %{{.+}}, %c128_i64
// CHECK: llvm.inline_asm {{.+}}m64n128k16{{.+}}, p1, 1, 1, 1;{{.+}}m64n128k16{{.+}}, p1, 1, 1, 1;
// CHECK-NOT: llvm.inline_asm
func.func @warpgroup_panels(%stage: index, %p: !flash_tile.tile<64x32xf16, #a>,
                            %s0: !flash_tile.tile<64x64xf32, #mma>,
                            %o0: !flash_tile.tile<64x128xf32, #mma>)
    -> (!flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64x128xf32, #mma>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x128xf16, #panels>
  %k = flash_tile.alloc {offset = 16384} : !flash_tile.shared<2x64x128xf16, #panels>
  %v = flash_tile.alloc {offset = 49152} : !flash_tile.shared<2x32x128xf16, #panels>
  %s = flash_tile.warpgroup_mma %q[%c0], %k[%stage] transpose, %s0
      : !flash_tile.shared<1x64x128xf16, #panels>, !flash_tile.shared<2x64x128xf16, #panels>, !flash_tile.tile<64x64xf32, #mma>
  %o = flash_tile.warpgroup_mma %p, %v[%stage], %o0
      : !flash_tile.tile<64x32xf16, #a>, !flash_tile.shared<2x32x128xf16, #panels>, !flash_tile.tile<64x128xf32, #mma>
  return %s, %o : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64x128xf32, #mma>
}

// -----

#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#sw64 = #flash_tile.swizzled<vector = 8, phases = 4, panel = 32, rowsPerPhase = 2>
#sw32 = #flash_tile.swizzled<vector = 8, phases = 2, panel = 16, rowsPerPhase = 4>
// The narrower swizzles. Rows of 96 f16 in three panels of the 64-byte
// swizzle (Q, K; K-major): descriptors with swizzle 2 in bits 62-63, the
// leading offset 16 and the stride between 8-row groups 8 x 64 = 512
// bytes (32 in bits 32-45); the k-steps 0-1 walk a panel's rows (+2, 32
// bytes), 2-3 the second (a panel of 64 rows x 64 bytes on: +256), 4-5 the
// third (+512). Rows of 80 f16 in five panels of the 32-byte swizzle (V,
// N-major): swizzle 3, the leading offset a panel (32 rows x 32 bytes,
// 1024 / 16 = 64 in bits 16-29), the stride 8 x 32 = 256 bytes (16 in
// bits 32-45), k-steps of 16 rows of 32 bytes (512 bytes: +32); the
// instruction's N = 80 crosses the five panels.
// CHECK-LABEL: func.func @warpgroup_narrow_swizzles
// CHECK-COUNT-2: arith.constant -9223371899415756800 : i64
// CHECK: arith.addi %{{.+}}, %c2_i64
// CHECK: arith.addi %{{.+}}, %c2_i64
// CHECK: arith.addi %{{.+}}, %c256_i64
// CHECK: arith.addi %{{.+}}, %c256_i64
// CHECK: arith.addi %{{.+}}, %c258_i64
// CHECK: arith.addi %{{.+}}, %c258_i64
// CHECK: arith.addi %{{.+}}, %c512_i64
// CHECK: arith.addi %{{.+}}, %c512_i64
// CHECK: arith.addi %{{.+}}, %c514_i64
// CHECK: arith.addi %{{.+}}, %c514_i64
// CHECK: llvm.inline_asm {{.+}}wgmma.fence.sync.aligned;{{.+}}m64n64k16{{.+}}$64, $65, p1, 1, 1, 0, 0;
// CHECK: arith.constant -4611685949703716864 : i64
// CHECK: arith.addi %{{.+}}, %c32_i64
// CHECK: llvm.inline_asm {{.+}}m64n80k16{{.+}}, p1, 1, 1, 1;{{.+}}m64n80k16{{.+}}, p1, 1, 1, 1;
// CHECK-NOT: llvm.inline_asm
func.func @warpgroup_narrow_swizzles(%stage: index, %p: !flash_tile.tile<64x32xf16, #a>,
                                     %s0: !flash_tile.tile<64x64xf32, #mma>,
                                     %o0: !flash_tile.tile<64x80xf32, #mma>)
    -> (!flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64x80xf32, #mma>) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x96xf16, #sw64>
  %k = flash_tile.alloc {offset = 12288} : !flash_tile.shared<2x64x96xf16, #sw64>
  %v = flash_tile.alloc {offset = 36864} : !flash_tile.shared<2x32x80xf16, #sw32>
  %s = flash_tile.warpgroup_mma %q[%c0], %k[%stage] transpose, %s0
      : !flash_tile.shared<1x64x96xf16, #sw64>, !flash_tile.shared<2x64x96xf16, #sw64>, !flash_tile.tile<64x64xf32, #mma>
  %o = flash_tile.warpgroup_mma %p, %v[%stage], %o0
      : !flash_tile.tile<64x32xf16, #a>, !flash_tile.shared<2x32x80xf16, #sw32>, !flash_tile.tile<64x80xf32, #mma>
  return %s, %o : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64x80xf32, #mma>
}

// -----

#copy = #flash_tile.blocked<size = [1, 8], threads = [2, 16], warps = [4, 1]>
#panels = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// A copy into panels: a thread's 16-byte run of a 128-column row lies in
// the panel of its column (column / 64: 64 x 64 elements a panel), at
// its row times 64 plus its chunk swizzled within the panel; 8 passes of
// 8 rows.
// CHECK-LABEL: func.func @copy_panels
// CHECK: arith.divui %{{.+}}, %c64 : index
// CHECK: arith.muli %{{.+}}, %c4096 : index
// CHECK: arith.remui %{{.+}}, %c64 : index
// CHECK: arith.muli %{{.+}}, %c64{{.*}} : index
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK-NOT: nvvm.cp.async.shared.global
func.func @copy_panels(%src: memref<?x128xf16>, %row: index, %stage: index, %n: index) {
  %k = flash_tile.alloc {offset = 0} : !flash_tile.shared<2x64x128xf16, #panels>
  flash_tile.async_copy %src[%row], %k[%stage] valid %n {layout = #copy}
      : memref<?x128xf16>, !flash_tile.shared<2x64x128xf16, #panels>
  return
}

// -----

// tma_load: the mbarriers of the buffer's two stages, initialised for one
// arrival by the first thread at the kernel's entry before a barrier; the
// first thread's arrive.expect_tx of the stage's bytes (64 x 128 f16) on
// the stage's mbarrier and one TMA copy per 64-column panel, 8192 bytes
// apart, the panel's inner coordinate 64 further, through the tensor map
// as a descriptor of the 128-byte swizzle. The buffers start on 1024
// bytes, as a warpgroup MMA's do. stage_wait: try_wait.parity on the
// stage's mbarrier; barrier: gpu.barrier.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @tma_load
// CHECK-SAME: (%[[MAP:.+]]: !llvm.ptr, %[[ROW:.+]]: index, %[[B:.+]]: index, %[[STAGE:.+]]: index, %[[PARITY:.+]]: i1)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[PAD:.+]] = arith.andi %{{.+}}, %c1023
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[TID]], %{{.+}} : index
// CHECK: %[[BARS:.+]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: nvgpu.mbarrier.init %[[BARS]][%{{.+}}], %{{.+}}, predicate = %[[FIRST]]
// CHECK: nvgpu.mbarrier.init %[[BARS]][%{{.+}}], %{{.+}}, predicate = %[[FIRST]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %[[MAP]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: scf.if %[[FIRST]] {
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[STAGE]]], %c16384
// CHECK: %[[AT:.+]] = arith.muli %[[STAGE]], %c16384
// CHECK: %[[OFF:.+]] = arith.addi %c1024{{.*}}, %[[AT]]
// CHECK: %[[BYTE:.+]] = arith.addi %[[PAD]], %[[OFF]]
// CHECK: %[[P0:.+]] = memref.view %[[SMEM]][%[[BYTE]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[DESC]][%[[C0:.+]], %[[ROW]], %[[C0]], %[[B]]], %[[BARS]][%[[STAGE]]] to %[[P0]]
// CHECK: %[[BYTE1:.+]] = arith.addi %[[BYTE]], %c8192
// CHECK: %[[P1:.+]] = memref.view %[[SMEM]][%[[BYTE1]]][]
// CHECK: %[[COL1:.+]] = arith.addi %[[C0]], %c64
// CHECK: nvgpu.tma.async.load %[[DESC]][%[[COL1]], %[[ROW]], %[[C0]], %[[B]]], %[[BARS]][%[[STAGE]]] to %[[P1]]
// CHECK: }
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[STAGE]]], %[[PARITY]], %{{.+}}
// CHECK-NEXT: gpu.barrier
func.func @tma_load(%map: !llvm.ptr, %row: index, %b: index, %stage: index,
                    %parity: i1) {
  %c0 = arith.constant 0 : index
  %k = flash_tile.alloc {offset = 1024} : !flash_tile.shared<2x64x128xf16, #sw>
  flash_tile.tma_load %map[%c0, %row, %c0, %b], %k[%stage] box [64, 64, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x64x128xf16, #sw>
  flash_tile.stage_wait %k[%stage], %parity : !flash_tile.shared<2x64x128xf16, #sw>
  flash_tile.barrier
  return
}

// -----

// tma_load of rows of 96 f16 in panels of the 64-byte swizzle: the map as
// a descriptor of that swizzle, three boxes of 32 columns, 64 x 64 = 4096
// bytes apart, each 32 columns further.
#sw64 = #flash_tile.swizzled<vector = 8, phases = 4, panel = 32, rowsPerPhase = 2>
// CHECK-LABEL: func.func @tma_load_swizzle_64
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %{{.+}} : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.+}}[%{{.+}}], %c12288
// CHECK: nvgpu.tma.async.load %[[DESC]]
// CHECK: arith.addi %{{.+}}, %c4096
// CHECK: arith.addi %{{.+}}, %c32
// CHECK: nvgpu.tma.async.load %[[DESC]]
// CHECK: arith.addi %{{.+}}, %c8192
// CHECK: arith.addi %{{.+}}, %c64
// CHECK: nvgpu.tma.async.load %[[DESC]]
// CHECK-NOT: nvgpu.tma.async.load
func.func @tma_load_swizzle_64(%map: !llvm.ptr, %row: index, %b: index, %stage: index) {
  %c0 = arith.constant 0 : index
  %k = flash_tile.alloc {offset = 1024} : !flash_tile.shared<2x64x96xf16, #sw64>
  flash_tile.tma_load %map[%c0, %row, %c0, %b], %k[%stage] box [32, 64, 1, 1]
      : !llvm.ptr, !flash_tile.shared<2x64x96xf16, #sw64>
  return
}

// -----

// tma_load of a box of 3 groups of 42 rows into a 128-row stage (a GQA
// tile's last 2 rows padding): the mbarrier expects the boxes' bytes, 2 x
// 3 x 42 x 128 = 32256, not the stage's 32768; the second panel is a whole
// panel of the stage (128 rows, 16384 bytes) further.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @tma_load_padding
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.+}}[%{{.+}}], %c32256
// CHECK: nvgpu.tma.async.load
// CHECK: arith.addi %{{.+}}, %c16384
// CHECK: nvgpu.tma.async.load
func.func @tma_load_padding(%map: !llvm.ptr, %row: index, %b: index,
                            %parity: i1) {
  %c0 = arith.constant 0 : index
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x128x128xf16, #sw>
  flash_tile.tma_load %map[%c0, %row, %c0, %b], %q[%c0] box [64, 42, 3, 1]
      : !llvm.ptr, !flash_tile.shared<1x128x128xf16, #sw>
  flash_tile.stage_wait %q[%c0], %parity : !flash_tile.shared<1x128x128xf16, #sw>
  return
}

// -----

// local_store: each thread's pairs of an accumulator row (4 bytes, within
// a 16-byte chunk) as vector stores at the swizzled addresses of the
// buffer's panels (64 columns: 4096 elements a panel of 64 rows), the
// second panel's columns a panel further. tma_store: the writes fenced for
// the asynchronous proxy and a barrier; then the first thread's TMA store
// of each 64-column panel, 8192 bytes apart, its inner coordinate 64
// further, committed and waited for until read.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// CHECK-LABEL: func.func @tma_store
// CHECK-SAME: (%[[MAP:.+]]: !llvm.ptr, %{{.+}}: vector<64xf16>, %[[ROW:.+]]: index, %[[B:.+]]: index)
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %thread_id_x
// CHECK: %[[VIEW:.+]] = memref.view %[[SMEM]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-32: vector.store %{{.+}}, %[[VIEW]][%{{.+}}] {alignment = 4 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %[[MAP]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if %[[FIRST]] {
// CHECK: %[[P0:.+]] = memref.view %[[SMEM]][%[[AT:.+]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.store %[[P0]] to %[[DESC]][%[[C0:.+]], %[[ROW]], %[[C0]], %[[B]]]
// CHECK: %[[AT1:.+]] = arith.addi %[[AT]], %c8192
// CHECK: %[[P1:.+]] = memref.view %[[SMEM]][%[[AT1]]][]
// CHECK: %[[COL1:.+]] = arith.addi %[[C0]], %c64
// CHECK: nvgpu.tma.async.store %[[P1]] to %[[DESC]][%[[COL1]], %[[ROW]], %[[C0]], %[[B]]]
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
func.func @tma_store(%map: !llvm.ptr, %o: !flash_tile.tile<64x128xf16, #mma>,
                     %row: index, %b: index) {
  %c0 = arith.constant 0 : index
  %buf = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x64x128xf16, #sw>
  flash_tile.local_store %o, %buf[%c0]
      : !flash_tile.tile<64x128xf16, #mma>, !flash_tile.shared<1x64x128xf16, #sw>
  flash_tile.tma_store %buf[%c0], %map[%c0, %row, %c0, %b] box [64, 64, 1, 1]
      : !flash_tile.shared<1x64x128xf16, #sw>, !llvm.ptr
  return
}

// -----

// view: the first two 64-column panels of a 192-column buffer (placed at
// 1024 bytes) are the same memory as a 128-column buffer: the view is the
// buffer's first elements, its local_store writes them as the buffer's,
// and its tma_store stores its two panels from the buffer's offset, 8192
// bytes apart.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
// CHECK-LABEL: func.func @view_tma_store
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[Q:.+]] = memref.view %[[SMEM]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<12288xf16, #gpu.address_space<workgroup>>
// CHECK: %[[O:.+]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [8192], strides: [1] : memref<12288xf16, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-32: vector.store %{{.+}}, %[[O]][%{{.+}}] {alignment = 4 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK: nvvm.fence.proxy
// CHECK: %[[C1024:.+]] = arith.constant 1024 : index
// CHECK-NEXT: %[[STAGE:.+]] = arith.addi %[[C1024]], %{{.+}} : index
// CHECK-NEXT: %[[AT:.+]] = arith.addi %{{.+}}, %[[STAGE]] : index
// CHECK: scf.if
// CHECK: %[[P0:.+]] = memref.view %[[SMEM]][%[[AT]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.store %[[P0]]
// CHECK: arith.addi %[[AT]], %c8192
// CHECK: nvgpu.tma.async.store
// CHECK-NOT: nvgpu.tma.async.store
// CHECK: nvvm.cp.async.bulk.commit.group
func.func @view_tma_store(%map: !llvm.ptr, %o: !flash_tile.tile<64x128xf16, #mma>,
                          %row: index, %b: index) {
  %c0 = arith.constant 0 : index
  %buf = flash_tile.alloc {offset = 1024} : !flash_tile.shared<1x64x192xf16, #sw>
  %view = flash_tile.view %buf : !flash_tile.shared<1x64x192xf16, #sw> to !flash_tile.shared<1x64x128xf16, #sw>
  flash_tile.local_store %o, %view[%c0]
      : !flash_tile.tile<64x128xf16, #mma>, !flash_tile.shared<1x64x128xf16, #sw>
  flash_tile.tma_store %view[%c0], %map[%c0, %row, %c0, %b] box [64, 64, 1, 1]
      : !flash_tile.shared<1x64x128xf16, #sw>, !llvm.ptr
  return
}

// -----

// warp_specialize: a block of 384 threads splits at thread 256. The
// consumers take 240 registers (setmaxnreg.inc) and run their region; the
// producer's warpgroup gives its registers up (setmaxnreg.dec 24) and its
// first warp (threads 256 to 287) runs the producer region, where an
// elected thread of the warp issues each copy and the whole warp waits
// for the stage's release (try_wait.parity on the buffer's second group
// of mbarriers, initialised for 256 arrivals). A consumer's release is
// its arrival on that mbarrier; its barrier is a named barrier (1) of the
// 256 consumer threads.
#sw = #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
// CHECK-LABEL: func.func @warp_specialize
// CHECK-SAME: (%[[MAP:.+]]: !llvm.ptr, %[[ROW:.+]]: index, %[[B:.+]]: index, %[[STAGE:.+]]: index, %[[FREE:.+]]: i1, %[[FULL:.+]]: i1)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[TID]], %{{.+}} : index
// CHECK: %[[FULLBARS:.+]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-COUNT-2: nvgpu.mbarrier.init %[[FULLBARS]][%{{.+}}], %c1{{.*}}, predicate = %[[FIRST]]
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: %[[FREEBARS:.+]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-COUNT-2: nvgpu.mbarrier.init %[[FREEBARS]][%{{.+}}], %[[C256]], predicate = %[[FIRST]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[CONSUMER:.+]] = arith.cmpi ult, %[[TID]], %c256{{.*}} : index
// CHECK: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULLBARS]][%[[STAGE]]], %[[FULL]]
// CHECK: nvgpu.mbarrier.arrive %[[FREEBARS]][%[[STAGE]]]
// CHECK: %[[ID:.+]] = arith.constant 1 : i32
// CHECK: %[[COUNT:.+]] = arith.constant 256 : i32
// CHECK: nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
// CHECK: %[[WARP:.+]] = arith.cmpi ult, %[[TID]], %c288{{.*}} : index
// CHECK: scf.if %[[WARP]] {
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FREEBARS]][%[[STAGE]]], %[[FREE]]
// CHECK: %[[ELECTED:.+]] = nvvm.elect.sync -> i1
// CHECK: scf.if %[[ELECTED]] {
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULLBARS]][%[[STAGE]]], %c16384
// CHECK-COUNT-2: nvgpu.tma.async.load
// CHECK: }
// CHECK: }
// CHECK: }
// CHECK-NEXT: return
func.func @warp_specialize(%map: !llvm.ptr, %row: index, %b: index,
                           %stage: index, %free: i1, %full: i1)
    attributes {flash.block = 384 : i64} {
  %c0 = arith.constant 0 : index
  %k = flash_tile.alloc {offset = 1024} : !flash_tile.shared<2x64x128xf16, #sw>
  flash_tile.warp_specialize producer(registers 24) {
    flash_tile.stage_acquire %k[%stage], %free : !flash_tile.shared<2x64x128xf16, #sw>
    flash_tile.tma_load %map[%c0, %row, %c0, %b], %k[%stage] box [64, 64, 1, 1]
        : !llvm.ptr, !flash_tile.shared<2x64x128xf16, #sw>
  } consumers(threads 256, registers 240) {
    flash_tile.stage_wait %k[%stage], %full : !flash_tile.shared<2x64x128xf16, #sw>
    flash_tile.stage_release %k[%stage] : !flash_tile.shared<2x64x128xf16, #sw>
    flash_tile.barrier
  }
  return
}

// -----

// Turns of two consumer warpgroups: the first warpgroup (threads 0 to 127)
// holds the first turn, arriving on its own named barrier (2) for 256
// threads as it enters the consumers' region. A warpgroup waits for its
// turn on barrier 2 + its index (tid / 128) and passes it by arriving on
// the next one's, 2 + (index + 1) mod 2, each for 256 threads: the waiting
// warpgroup and the one before it; both ids are computed once, at the
// function's entry. As the consumers end, the first warpgroup waits on its
// barrier once more, meeting the last turn's pass.
// CHECK-LABEL: func.func @turns
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[C128A:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[WG:.+]] = arith.divui %[[TID]], %[[C128A]] : index
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[AFTER:.+]] = arith.addi %[[WG]], %[[ONE]] : index
// CHECK-NEXT: %[[TWOWG:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[NEXT:.+]] = arith.remui %[[AFTER]], %[[TWOWG]] : index
// CHECK-NEXT: %[[FIRSTID:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[NEXTID:.+]] = arith.addi %[[NEXT]], %[[FIRSTID]] : index
// CHECK-NEXT: %[[C128B:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[WG2:.+]] = arith.divui %[[TID]], %[[C128B]] : index
// CHECK-NEXT: %[[C2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[OWN:.+]] = arith.addi %[[WG2]], %[[C2]] : index
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK-NEXT: %[[C128:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[ISFIRST:.+]] = arith.cmpi ult, %[[TID]], %[[C128]] : index
// CHECK-NEXT: scf.if %[[ISFIRST]] {
// CHECK-NEXT: %[[TWO:.+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[N:.+]] = arith.constant 256 : i32
// CHECK-NEXT: nvvm.barrier.arrive id = %[[TWO]] number_of_threads = %[[N]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[OWN32:.+]] = arith.index_cast %[[OWN]] : index to i32
// CHECK-NEXT: %[[N1:.+]] = arith.constant 256 : i32
// CHECK-NEXT: nvvm.barrier id = %[[OWN32]] number_of_threads = %[[N1]]
// CHECK-NEXT: %[[NEXT32:.+]] = arith.index_cast %[[NEXTID]] : index to i32
// CHECK-NEXT: %[[N2:.+]] = arith.constant 256 : i32
// CHECK-NEXT: nvvm.barrier.arrive id = %[[NEXT32]] number_of_threads = %[[N2]]
// CHECK-NEXT: scf.if %[[ISFIRST]] {
// CHECK-NEXT: %[[TWO2:.+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[N3:.+]] = arith.constant 256 : i32
// CHECK-NEXT: nvvm.barrier id = %[[TWO2]] number_of_threads = %[[N3]]
// CHECK-NEXT: }
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
func.func @turns() attributes {flash.block = 384 : i64} {
  flash_tile.warp_specialize producer(registers 24) {
  } consumers(threads 256, registers 240) {
    flash_tile.turn_wait
    flash_tile.turn_pass
  }
  return
}

// -----

#mma = #flash_tile.mma<warps = [8, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
// Two async multiplies in a row (S, of zeros: scale-d p0 = false for its
// first k-step, whose accumulator is no input; then P V) start in one
// block: one fence, a commit after each, no wait. Each wait is inline PTX
// through which the accumulator's registers pass (tied), S's with one
// group pending, P V's also reading P's registers, which live until then.
// CHECK-LABEL: func.func @async_pair
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p<2>;\0Asetp.ne.b32 p0, 0, 0;\0Asetp.ne.b32 p1, 1, 0;\0Awgmma.fence.sync.aligned;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.+}}, $31}, ${{[0-9]+}}, ${{[0-9]+}}, p0, 1, 1, 0, 0;{{.+}}p1, 1, 1, 0, 0;\0Awgmma.commit_group.sync.aligned;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$32, {{.+}}, $63}, {{.+}}p1, 1, 1, 1;\0Awgmma.commit_group.sync.aligned;\0A}\0A"
// CHECK-NOT: wait_group.sync.aligned 0;\0A}
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 1;", "=f,{{.+}},=f,0,{{.+}},31"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,{{.+}},=f,0,{{.+}},31,r,r,r,r,r,r,r,r,r,r,r,r,r,r,r,r"
func.func @async_pair(%stage: index, %p: !flash_tile.tile<128x64xf16, #a>,
                      %acc: !flash_tile.tile<128x64xf32, #mma>)
    -> (!flash_tile.tile<128x64xf32, #mma>, !flash_tile.tile<128x64xf32, #mma>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %z = flash_tile.splat %zero : !flash_tile.tile<128x64xf32, #mma>
  %q = flash_tile.alloc {offset = 0} : !flash_tile.shared<1x128x64xf16, #smem>
  %k = flash_tile.alloc {offset = 16384} : !flash_tile.shared<2x64x64xf16, #smem>
  %s0 = flash_tile.warpgroup_mma %q[%c0], %k[%stage] transpose, %z async
      : !flash_tile.shared<1x128x64xf16, #smem>, !flash_tile.shared<2x64x64xf16, #smem>, !flash_tile.tile<128x64xf32, #mma>
  %o0 = flash_tile.warpgroup_mma %p, %k[%stage], %acc async
      : !flash_tile.tile<128x64xf16, #a>, !flash_tile.shared<2x64x64xf16, #smem>, !flash_tile.tile<128x64xf32, #mma>
  %s = flash_tile.warpgroup_wait %s0 pending 1 : !flash_tile.tile<128x64xf32, #mma>
  %o = flash_tile.warpgroup_wait %o0 pending 0 : !flash_tile.tile<128x64xf32, #mma>
  return %s, %o : !flash_tile.tile<128x64xf32, #mma>, !flash_tile.tile<128x64xf32, #mma>
}

// -----

// A kernel's launch attributes: its block is `.reqntid`, its register
// budget `.maxnreg`.
// CHECK-LABEL: gpu.func @budget
// CHECK-SAME: nvvm.maxnreg = 128 : i32
// CHECK-SAME: nvvm.reqntid = array<i32: 64, 1, 1>
gpu.module @kernels {
  gpu.func @budget() kernel attributes {flash.block = 64 : i64, flash.max_registers = 128 : i64} {
    gpu.return
  }
}
