// The CTA of attention-block.mlir as flash-to-tile writes a kernel before
// flash-tile-pipeline (attention-pipeline.test): each KV loop copies its
// block into stage 0, waits, computes and waits again. The keys run over
// two KV loops that continue one another, [0, 128) and [128, 200), as a
// causal kernel's unmasked and diagonal blocks do, so that the pipeline
// hands blocks over between loops. O = softmax(Q K^T / 8) V over N = 200
// queries and keys of 64 elements, one 64-row Q tile per CTA (4 warps);
// the last Q tile and KV block are ragged.
#mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
#a = #flash_tile.operand<a, #mma>
#b = #flash_tile.operand<b, #mma>
#row = #flash_tile.slice<1, #mma>
#copy = #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
#smem = #flash_tile.swizzled<vector = 8, phases = 8>
!acc = !flash_tile.tile<64x64xf32, #mma>
!rows = !flash_tile.tile<64xf32, #row>
!buf = !flash_tile.shared<2x64x64xf16, #smem>
module attributes {gpu.container_module} {
gpu.module @kernels {
  gpu.func @attention(%q: memref<200x64xf16>, %k: memref<200x64xf16>,
                      %v: memref<200x64xf16>, %o: memref<200x64xf32>) kernel
      attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %n = arith.constant 200 : index
    %bid = gpu.block_id x
    %row0 = arith.muli %bid, %c64 : index
    %left = arith.subi %n, %row0 : index
    %qvalid = arith.minsi %left, %c64 : index
    %c128 = arith.constant 128 : index
    %qs = flash_tile.alloc : !flash_tile.shared<1x64x64xf16, #smem>
    %ks = flash_tile.alloc : !buf
    %vs = flash_tile.alloc : !buf
    flash_tile.async_copy %q[%row0], %qs[%c0] valid %qvalid {layout = #copy}
        : memref<200x64xf16>, !flash_tile.shared<1x64x64xf16, #smem>
    flash_tile.async_wait pending 0
    %qa = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xf16, #smem> -> !flash_tile.tile<64x64xf16, #a>
    %f0 = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %zero = flash_tile.splat %f0 : !acc
    %m0 = flash_tile.splat %ninf : !rows
    %l0 = flash_tile.splat %f0 : !rows
    %first:3 = scf.for %j = %c0 to %c128 step %c64 iter_args(%acc = %zero, %m = %m0, %l = %l0) -> (!acc, !rows, !rows) {
      %any = arith.cmpi sge, %j, %c0 : index
      scf.if %any {
        %keys = arith.subi %n, %j : index
        %valid = arith.minsi %keys, %c64 : index
        flash_tile.async_copy %k[%j], %ks[%c0] valid %valid {layout = #copy} : memref<200x64xf16>, !buf
        flash_tile.async_copy %v[%j], %vs[%c0] valid %valid {layout = #copy} : memref<200x64xf16>, !buf
      }
      flash_tile.async_wait pending 0
      %kt = flash_tile.local_load %ks[%c0] transpose : !buf -> !flash_tile.tile<64x64xf16, #b>
      %s = flash_tile.mma %qa, %kt, %zero : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>, !acc
      // Scale into the log2 domain; keys past Nk are -inf.
      %t = flash_tile.map indices %s : !acc -> !acc {
      ^bb0(%i: index, %c: index, %x: f32):
        %key = arith.addi %j, %c : index
        %ok = arith.cmpi slt, %key, %n : index
        %sc = arith.constant 0.18033688 : f32
        %y = arith.mulf %x, %sc : f32
        %r = arith.select %ok, %y, %ninf : f32
        flash_tile.yield %r : f32
      }
      %bm = flash_tile.reduce max %t : !acc -> !rows
      %mn = flash_tile.map %m, %bm : !rows, !rows -> !rows {
      ^bb0(%x: f32, %y: f32):
        %r = arith.maxnumf %x, %y : f32
        flash_tile.yield %r : f32
      }
      %alpha = flash_tile.map %m, %mn : !rows, !rows -> !rows {
      ^bb0(%x: f32, %y: f32):
        %d = arith.subf %x, %y : f32
        %e = math.exp2 %d : f32
        flash_tile.yield %e : f32
      }
      %p = flash_tile.map %t, %mn : !acc, !rows -> !acc {
      ^bb0(%x: f32, %y: f32):
        %d = arith.subf %x, %y : f32
        %e = math.exp2 %d : f32
        flash_tile.yield %e : f32
      }
      %ps = flash_tile.reduce sum %p : !acc -> !rows
      %ln = flash_tile.map %l, %alpha, %ps : !rows, !rows, !rows -> !rows {
      ^bb0(%x: f32, %al: f32, %y: f32):
        %r = math.fma %x, %al, %y : f32
        flash_tile.yield %r : f32
      }
      %scaled = flash_tile.map %acc, %alpha : !acc, !rows -> !acc {
      ^bb0(%x: f32, %al: f32):
        %r = arith.mulf %x, %al : f32
        flash_tile.yield %r : f32
      }
      %ph = flash_tile.map %p : !acc -> !flash_tile.tile<64x64xf16, #mma> {
      ^bb0(%x: f32):
        %h = arith.truncf %x : f32 to f16
        flash_tile.yield %h : f16
      }
      %pa = flash_tile.convert_layout %ph : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #a>
      %vt = flash_tile.local_load %vs[%c0] : !buf -> !flash_tile.tile<64x64xf16, #b>
      %acc2 = flash_tile.mma %pa, %vt, %scaled : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>, !acc
      flash_tile.async_wait pending 0
      scf.yield %acc2, %mn, %ln : !acc, !rows, !rows
    } {flash.kv_loop}
    %res:3 = scf.for %j = %c128 to %n step %c64 iter_args(%acc = %first#0, %m = %first#1, %l = %first#2) -> (!acc, !rows, !rows) {
      %any = arith.cmpi sge, %j, %c0 : index
      scf.if %any {
        %keys = arith.subi %n, %j : index
        %valid = arith.minsi %keys, %c64 : index
        flash_tile.async_copy %k[%j], %ks[%c0] valid %valid {layout = #copy} : memref<200x64xf16>, !buf
        flash_tile.async_copy %v[%j], %vs[%c0] valid %valid {layout = #copy} : memref<200x64xf16>, !buf
      }
      flash_tile.async_wait pending 0
      %kt = flash_tile.local_load %ks[%c0] transpose : !buf -> !flash_tile.tile<64x64xf16, #b>
      %s = flash_tile.mma %qa, %kt, %zero : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>, !acc
      // Scale into the log2 domain; keys past Nk are -inf.
      %t = flash_tile.map indices %s : !acc -> !acc {
      ^bb0(%i: index, %c: index, %x: f32):
        %key = arith.addi %j, %c : index
        %ok = arith.cmpi slt, %key, %n : index
        %sc = arith.constant 0.18033688 : f32
        %y = arith.mulf %x, %sc : f32
        %r = arith.select %ok, %y, %ninf : f32
        flash_tile.yield %r : f32
      }
      %bm = flash_tile.reduce max %t : !acc -> !rows
      %mn = flash_tile.map %m, %bm : !rows, !rows -> !rows {
      ^bb0(%x: f32, %y: f32):
        %r = arith.maxnumf %x, %y : f32
        flash_tile.yield %r : f32
      }
      %alpha = flash_tile.map %m, %mn : !rows, !rows -> !rows {
      ^bb0(%x: f32, %y: f32):
        %d = arith.subf %x, %y : f32
        %e = math.exp2 %d : f32
        flash_tile.yield %e : f32
      }
      %p = flash_tile.map %t, %mn : !acc, !rows -> !acc {
      ^bb0(%x: f32, %y: f32):
        %d = arith.subf %x, %y : f32
        %e = math.exp2 %d : f32
        flash_tile.yield %e : f32
      }
      %ps = flash_tile.reduce sum %p : !acc -> !rows
      %ln = flash_tile.map %l, %alpha, %ps : !rows, !rows, !rows -> !rows {
      ^bb0(%x: f32, %al: f32, %y: f32):
        %r = math.fma %x, %al, %y : f32
        flash_tile.yield %r : f32
      }
      %scaled = flash_tile.map %acc, %alpha : !acc, !rows -> !acc {
      ^bb0(%x: f32, %al: f32):
        %r = arith.mulf %x, %al : f32
        flash_tile.yield %r : f32
      }
      %ph = flash_tile.map %p : !acc -> !flash_tile.tile<64x64xf16, #mma> {
      ^bb0(%x: f32):
        %h = arith.truncf %x : f32 to f16
        flash_tile.yield %h : f16
      }
      %pa = flash_tile.convert_layout %ph : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #a>
      %vt = flash_tile.local_load %vs[%c0] : !buf -> !flash_tile.tile<64x64xf16, #b>
      %acc2 = flash_tile.mma %pa, %vt, %scaled : !flash_tile.tile<64x64xf16, #a>, !flash_tile.tile<64x64xf16, #b>, !acc
      flash_tile.async_wait pending 0
      scf.yield %acc2, %mn, %ln : !acc, !rows, !rows
    } {flash.kv_loop}
    %out = flash_tile.map %res#0, %res#2 : !acc, !rows -> !acc {
    ^bb0(%x: f32, %l: f32):
      %r = arith.divf %x, %l : f32
      flash_tile.yield %r : f32
    }
    flash_tile.store %out, %o[%row0] valid %qvalid : !acc, memref<200x64xf32>
    gpu.return
  }
}
}
