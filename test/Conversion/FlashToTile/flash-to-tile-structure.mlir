// The tiled loop nest as flash-to-tile (and flash-split-kv, through the
// same matchTiledLoopNest) requires it: each rule's diagnostic on a tiled
// function that breaks it, the well-formed nest being what
// flash-attention-pipeline gives for target=sm_80 (flash-to-tile.mlir).
//
// RUN: flashc-opt %s --flash-to-tile -split-input-file -verify-diagnostics

// The well-formed nest: no diagnostic (the others break one rule each).
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// A KV loop without its attention step.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    // expected-error @+1 {{flash-to-tile: a KV loop must hold exactly one flash.attention_step}}
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      scf.yield %a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// Two finalizes.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    // expected-error @+1 {{flash-to-tile: one flash.finalize per tile expected}}
    %14 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// A loop without flash.kv_loop in the tile loop.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    // expected-error @+1 {{flash-to-tile: unexpected loop or flash op in the tile loop; run the algorithm in FA2 order (loop-order=fa2)}}
    %10:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    }
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// No finalize.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  // expected-error @+1 {{flash-to-tile: a tile loop needs a KV loop and a flash.finalize}}
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %os into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// Two KV loops that do not chain their state.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %10:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    // expected-error @+1 {{flash-to-tile: the KV loops of a tile must carry one state}}
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// Two KV loops with different scales.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %10:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %10#0, %m = %10#1, %l = %10#2) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      // expected-error @+1 {{flash-to-tile: the KV loops of a tile must share its Q tile and scale}}
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 2.500000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// A finalize that does not read the last KV loop's state.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    // expected-error @+1 {{flash-to-tile: the finalize must read the last KV loop's state}}
    %13 = flash.finalize ins(%12#0, %9, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%os : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}

// -----

// A finalize into a tensor other than the shared output's slice.
func.func @mha(%arg0: tensor<?x2x?x64xf16>, %arg1: tensor<?x2x?x64xf16>, %arg2: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c128 = arith.constant 128 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2x?x64xf16>
  %dim_1 = tensor.dim %arg0, %c2 : tensor<?x2x?x64xf16>
  %0 = tensor.empty(%dim, %dim_1) : tensor<?x2x?x64xf16>
  %dim_4 = tensor.dim %arg1, %c2 : tensor<?x2x?x64xf16>
  %1 = arith.ceildivsi %dim_1, %c128 : index
  %2 = scf.forall (%arg3, %arg4, %arg5) in (%dim, 2, %1) shared_outs(%arg6 = %0) -> (tensor<?x2x?x64xf16>) {
    %3 = arith.muli %arg5, %c128 : index
    %4 = arith.subi %dim_1, %3 : index
    %5 = arith.minsi %4, %c128 : index
    %q = tensor.extract_slice %arg0[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %6 = tensor.empty(%5) : tensor<1x?x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    %8 = tensor.empty(%5) : tensor<1x?xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<1x?xf32>) -> tensor<1x?xf32>
    %12:3 = scf.for %j = %c0 to %dim_4 step %c64 iter_args(%a = %7, %m = %9, %l = %11) -> (tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) {
      %kn = arith.subi %dim_4, %j : index
      %kr = arith.minsi %kn, %c64 : index
      %kb = tensor.extract_slice %arg1[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %vb = tensor.extract_slice %arg2[%arg3, %arg4, %j, 0] [1, 1, %kr, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x64xf16>
      %s:3 = flash.attention_step ins(%q, %kb, %vb : tensor<1x?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%a, %m, %l : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) scale = 1.250000e-01 -> tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
      scf.yield %s#0, %s#1, %s#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>
    } {flash.kv_loop}
    %os = tensor.extract_slice %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<1x?x64xf16>
    %other = tensor.empty(%5) : tensor<1x?x64xf16>
    // expected-error @+1 {{flash-to-tile: the finalize must write slices of the tile loop's shared outputs, result i into output i}}
    %13 = flash.finalize ins(%12#0, %12#1, %12#2 : tensor<1x?x64xf32>, tensor<1x?xf32>, tensor<1x?xf32>) outs(%other : tensor<1x?x64xf16>) -> tensor<1x?x64xf16>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %13 into %arg6[%arg3, %arg4, %3, 0] [1, 1, %5, 64] [1, 1, 1, 1] : tensor<1x?x64xf16> into tensor<?x2x?x64xf16>
    }
  } {flash.tile_loop}
  return %2 : tensor<?x2x?x64xf16>
}
