// Tests of flash-to-tile: the GPU kernels built from the tiled IR. Each
// input below a `//---` marker is a flash.attention with dynamic batch and
// lengths; flash-attention-pipeline tiles it for sm_80's kernels, and
// flash-to-tile turns the tile loop into a gpu.module of kernels whose
// bodies are flash_tile ops, and erases the host function. This file checks
// the kernels' signatures, launch attributes and diagnostics;
// flash-to-tile-body.mlir checks the bodies op by op.
//
// RUN: split-file %s %t
//
// f16 MHA (two heads): the FA2 forward kernel.
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile | FileCheck %s --check-prefix=MHA
// sm_90a has the same shared-memory budget for this tile.
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile=target=sm_90a | FileCheck %s --check-prefix=SM90
// The rescale threshold: 0 moves the maximum whenever it grows; it is 0 to
// 15.
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile=rescale-threshold=0 | FileCheck %s --check-prefix=EXACT
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile=rescale-threshold=16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-THRESHOLD
// EXACT: flash_tile.reduce max
// EXACT-NEXT: arith.constant 0.000000e+00 : f32
// EXACT: flash_tile.rescale
// BAD-THRESHOLD: error: flash-to-tile: rescale-threshold is 0 to 15 (log2 of how far P may grow past 1 before O is rescaled), not 16
//
// Tensors aligned to less than 16 bytes: the copies of Q, K and V and the
// store of the output say so (the split workspace stays 16-byte aligned);
// the alignment is 16, 8, 4 or 2.
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile=alignment=4 | FileCheck %s --check-prefix=ALIGN4
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4" \
// RUN:   | flashc-opt --flash-to-tile=alignment=2 | FileCheck %s --check-prefix=ALIGN2
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile=alignment=32 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-ALIGNMENT
// ALIGN4: gpu.func @mha_fwd({{.+}}name = "q"}, llvm.align = 4 : i64
// ALIGN4-SAME: name = "out"}, llvm.align = 4 : i64
// ALIGN4-SAME: name = "ws_out"}, llvm.align = 16 : i64
// ALIGN4-COUNT-3: flash_tile.async_copy {{.+}} {alignment = 4 : i64}
// ALIGN4: flash_tile.store {{.+}} {alignment = 4 : i64} : !flash_tile.tile<128x64xf16>
// ALIGN2: gpu.func @decode_fwd({{.+}}name = "q"}, llvm.align = 2 : i64
// ALIGN2-COUNT-3: flash_tile.async_copy {{.+}} {alignment = 2 : i64}
// ALIGN2: flash_tile.store {{[^{]+}} : !flash_tile.tile<16x64xf16>
// ALIGN2: flash_tile.store {{.+}} {alignment = 16 : i64} : !flash_tile.tile<16x64xf32>
// ALIGN2-LABEL: gpu.func @decode_combine
// ALIGN2: flash_tile.store {{[^{]+}} : !flash_tile.tile<4x64xf16, #blocked>
// BAD-ALIGNMENT: error: flash-to-tile: alignment is 16, 8, 4 or 2 bytes, not 32
//
// bf16, causal GQA (8 query heads over 2 KV heads, D = 128).
// RUN: flashc-opt %t/gqa-bf16.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile | FileCheck %s --check-prefix=BF16
//
// The log-sum-exp of a prefill kernel.
// RUN: flashc-opt %t/lse.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile | FileCheck %s --check-prefix=LSE
//
// Decode: the split count is a kernel argument (dynamic-splits), four query
// rows per tile; a forward kernel writes f32 partials and a combine kernel
// merges them.
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4" \
// RUN:   | flashc-opt --flash-to-tile | FileCheck %s --check-prefix=DECODE
// On sm_90a both kernels are programmatic dependent launches, which wait
// for the kernel before them first: the forward kernel lets the combine
// launch as it starts (when split: %arg10 is the split count), and the
// combine, once the partials are in, lets the next kernel launch.
// RUN: flashc-opt %t/decode.mlir \
// RUN:   --flash-attention-pipeline="target=sm_80 dynamic-splits=1 block-q=4" \
// RUN:   | flashc-opt --flash-to-tile=target=sm_90a | FileCheck %s --check-prefix=PDL
// PDL-LABEL: gpu.func @decode_fwd(
// PDL-SAME: flash.programmatic_launch
// PDL-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"  : () -> ()
// PDL-NEXT: %[[ONE:.+]] = arith.constant 1 : i64
// PDL-NEXT: %[[SPLIT:.+]] = arith.cmpi sgt, %arg10, %[[ONE]] : i64
// PDL-NEXT: scf.if %[[SPLIT]] {
// PDL-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.launch_dependents;", "~{memory}"  : () -> ()
// PDL-LABEL: gpu.func @decode_combine(
// PDL-SAME: flash.programmatic_launch
// PDL-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"  : () -> ()
// PDL-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.launch_dependents;", "~{memory}"  : () -> ()
//
// Unsupported inputs and options are diagnosed.
// RUN: flashc-opt %t/f32.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 | FileCheck %s --check-prefix=F32
// RUN: flashc-opt %t/d320.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 | FileCheck %s --check-prefix=D320
// RUN: flashc-opt %t/static.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile=target=cpu 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CPU
// RUN: flashc-opt %t/mha.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile=target=sm_99 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SM99
// RUN: flashc-opt %t/two.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 | FileCheck %s --check-prefix=TWO
//
// A module without attention is left unchanged.
// RUN: flashc-opt %t/scale.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | flashc-opt --flash-to-tile | FileCheck %s --check-prefix=SCALE
// RUN: flashc-opt %t/scale-computed.mlir --flash-attention-pipeline="target=sm_80" \
// RUN:   | not flashc-opt --flash-to-tile 2>&1 | FileCheck %s --check-prefix=SCALE-COMPUTED
// RUN: flashc-opt %t/none.mlir --flash-to-tile | FileCheck %s --check-prefix=NONE
// RUN: flashc-opt %t/none.mlir -o %t/none.roundtrip.mlir
// RUN: flashc-opt %t/none.mlir --flash-to-tile -o %t/none.converted.mlir
// RUN: diff %t/none.roundtrip.mlir %t/none.converted.mlir

//===----------------------------------------------------------------------===//
// f16 MHA
//===----------------------------------------------------------------------===//

// The host function is gone: the runtime launches the kernels.
// MHA-LABEL: module attributes {gpu.container_module}
// MHA-NOT: func.func
// MHA: gpu.module @flash_kernels
// MHA-NEXT: memref.global "public" @flash_smem : memref<0xi8, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// Every kernel takes q, k, v, out (f16), lse, ws_out, ws_lse (f32), then
// B, Nq, Nk, splits and 12 strides as i64 and the scale, each argument
// saying what it is in its flash.param (the manifest's list of arguments).
// MHA-NEXT: gpu.func @mha_fwd(
// MHA-SAME: %[[Q:[a-z0-9]+]]: memref<1099511627776xf16> {flash.param = {meaning = "Q: batch x G query heads x Nq x D elements (one KV head's group)", name = "q"}, llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// MHA-SAME: %[[K:[a-z0-9]+]]: memref<1099511627776xf16> {flash.param = {meaning = "K: batch x Nk x D elements", name = "k"}, llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// MHA-SAME: %[[V:[a-z0-9]+]]: memref<1099511627776xf16> {flash.param = {meaning = "V: batch x Nk x Dv elements", name = "v"}, llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// MHA-SAME: %[[O:[a-z0-9]+]]: memref<1099511627776xf16> {flash.param = {meaning = "O: batch x G x Nq x Dv elements", name = "out"}, llvm.align = 16 : i64, llvm.noalias},
// MHA-SAME: %{{[a-z0-9]+}}: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]+}}", name = "lse"}, llvm.align = 4 : i64, llvm.noalias},
// MHA-SAME: %{{[a-z0-9]+}}: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]+}}", name = "ws_out"}, llvm.align = 16 : i64, llvm.noalias},
// MHA-SAME: %{{[a-z0-9]+}}: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]+}}", name = "ws_lse"}, llvm.align = 4 : i64, llvm.noalias},
// MHA-SAME: %{{[a-z0-9]+}}: i64 {flash.param = {meaning = "{{[^"]+}}", name = "B"}}, %[[NQ:[a-z0-9]+]]: i64 {flash.param = {meaning = "query rows per head", name = "Nq"}}, %[[NK:[a-z0-9]+]]: i64 {flash.param = {meaning = "keys", name = "Nk"}},
// MHA-SAME: name = "splits"
// MHA-SAME: name = "q_stride_b"
// MHA-SAME: name = "out_stride_n"
// MHA-SAME: %{{[a-z0-9]+}}: f32 {flash.param = {meaning = "the softmax scale", name = "scale"}}) kernel
// Its launch: one CTA per (batch, head, 128-row Q tile), 4 warps of two
// 16-row MMA tiles each, K and V blocks of 64 keys double-buffered
// (2 x 2 x 8 KB) after the 16 KB Q tile, which is also the f16 output's
// staging area.
// MHA-SAME: attributes {flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<2>, #flash.grid_factor<ceildiv(Nq, 128)>], flash.shared_bytes = 49152 : i64, flash.tile = array<i64: 1, 128, 64, 8, 1>} {
// MHA: arith.index_cast %[[NQ]] : i64 to index
// MHA: gpu.block_id x
// Q, K and V in swizzled shared memory, filled by asynchronous copies.
// MHA: %[[QS:.+]] = flash_tile.alloc : !flash_tile.shared<1x128x64xf16>
// MHA-NEXT: %[[KS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// MHA-NEXT: %[[VS:.+]] = flash_tile.alloc : !flash_tile.shared<2x64x64xf16>
// MHA: flash_tile.async_copy %{{.+}}, %[[QS]][%{{.+}}] valid
// MHA: flash_tile.async_wait pending 0
// Q as the A operand, once; then the KV loop over the runtime's Nk. The
// tiles and copies have no layouts yet (flash-tile-assign-layouts).
// MHA: flash_tile.local_load %[[QS]][%{{.+}}] : !flash_tile.shared<1x128x64xf16> -> !flash_tile.tile<128x64xf16>
// MHA: scf.for
// The next K and V blocks are in flight while this one is used.
// MHA: flash_tile.async_copy %{{.+}}, %[[KS]]
// MHA: flash_tile.async_copy %{{.+}}, %[[VS]]
// S = Q K^T, the online softmax, O += P V.
// MHA: flash_tile.local_load %[[KS]][%{{.+}}] transpose
// MHA-NEXT: flash_tile.mma
// MHA: flash_tile.reduce max
// A row's maximum moves where the block's is more than 8 (log2) above it;
// O is rescaled by the factor (1 where it did not move).
// MHA-NEXT: arith.constant 8.000000e+00 : f32
// MHA: arith.cmpf ogt
// MHA: flash_tile.rescale
// P in f16 is PV's A operand as it is: the layouts convert it later.
// MHA: %[[P:.+]] = flash_tile.map %{{.+}} : !flash_tile.tile<128x64xf32> -> !flash_tile.tile<128x64xf16>
// MHA-NOT: flash_tile.convert_layout
// MHA: %[[V:.+]] = flash_tile.local_load %[[VS]]
// MHA-NEXT: flash_tile.mma %[[P]], %[[V]]
// The epilogue stores the rows of the output below the tile's valid rows,
// into a subview of the whole output tensor (at the tile's batch, head and
// first row).
// MHA: memref.reinterpret_cast %[[O]] to offset: [0]
// MHA-NEXT: %[[OV:.+]] = memref.subview
// MHA-NEXT: flash_tile.store %{{.+}}, %[[OV]][%{{.+}}] valid {{.+}} {alignment = 16 : i64} : !flash_tile.tile<128x64xf16>
// MHA: gpu.return
// One kernel only.
// MHA-NOT: gpu.func
// MHA-NOT: func.func

// SM90-NOT: func.func
// SM90-LABEL: gpu.func @mha_fwd(
// SM90-SAME: flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<2>, #flash.grid_factor<ceildiv(Nq, 128)>], flash.programmatic_launch, flash.shared_bytes = 49152 : i64
// SM90-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"  : () -> ()

//--- mha.mlir
func.func @mha(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
               %v: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}

//===----------------------------------------------------------------------===//
// bf16, causal GQA
//===----------------------------------------------------------------------===//

// BF16-NOT: func.func
// BF16-LABEL: gpu.func @gqa_bf16_fwd(
// BF16-SAME: %{{[a-z0-9]+}}: memref<1099511627776xbf16> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// The four query heads of a KV head share one CTA: 4 x 32 rows of Q, in
// blocks of 32 keys (the D = 128 prefill tile of 128 rows).
// BF16-SAME: flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<2>, #flash.grid_factor<ceildiv(Nq, 32)>]
// BF16-SAME: flash.tile = array<i64: 4, 32, 32, 8, 1>
// The four heads' 32 rows each: a 3-D Q matrix, one 128-row tile.
// BF16: flash_tile.async_copy {{.+}} : memref<4x?x128xbf16, strided<[?, ?, 1], offset: ?>>, !flash_tile.shared<1x128x128xbf16>
// Q is read from shared memory for each block; the causal diagonal block
// masks its scores by their indices.
// BF16: scf.for
// BF16: flash_tile.local_load {{.+}} -> !flash_tile.tile<128x128xbf16>
// BF16: flash_tile.mma {{.+}} : !flash_tile.tile<128x128xbf16>, !flash_tile.tile<128x32xbf16>, !flash_tile.tile<128x32xf32>
// BF16: flash_tile.map indices
// BF16: gpu.return
// BF16-NOT: gpu.func

//--- gqa-bf16.mlir
func.func @gqa_bf16(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                    %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
      -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}

//===----------------------------------------------------------------------===//
// The log-sum-exp
//===----------------------------------------------------------------------===//

// LSE-NOT: func.func
// LSE-LABEL: gpu.func @prefill_lse_fwd(
// LSE-SAME: %{{[a-z0-9]+}}: memref<1099511627776xf16> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 16 : i64, llvm.noalias},
// LSE-SAME: %[[LSE:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 4 : i64, llvm.noalias},
// LSE-SAME: flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<2>, #flash.grid_factor<ceildiv(Nq, 128)>]
// The row's log-sum-exp, one per row (the accumulator's row slice).
// LSE: memref.reinterpret_cast %[[LSE]]
// LSE-NEXT: flash_tile.store {{.+}} : !flash_tile.tile<128xf32>
// LSE: gpu.return

//--- lse.mlir
func.func @prefill_lse(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                       %v: tensor<?x2x?x64xf16>)
    -> (tensor<?x2x?x64xf16>, tensor<?x2x?xf32>) {
  %o, %l = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>, tensor<?x2x?xf32>
  return %o, %l : tensor<?x2x?x64xf16>, tensor<?x2x?xf32>
}

//===----------------------------------------------------------------------===//
// Decode: split-KV with a launch-time split count
//===----------------------------------------------------------------------===//

// DECODE-NOT: func.func
// DECODE-LABEL: gpu.func @decode_fwd(
// DECODE-SAME: %{{[a-z0-9]+}}: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 4 : i64, llvm.noalias},
// DECODE-SAME: %[[WSO:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 16 : i64, llvm.noalias}, %[[WSL:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 4 : i64, llvm.noalias},
// DECODE-SAME: name = "Nk"}}, %[[S:[a-z0-9]+]]: i64 {flash.param = {meaning = "KV splits (decode variants; 1 otherwise)", name = "splits"}},
// One CTA per (batch, 4-row Q tile, split); the single KV head's tile
// dimension is folded away. Four kv warps split each KV block. At one
// split the kernel writes the output itself (flash.final_at_one_split).
// DECODE-SAME: flash.final_at_one_split, flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<ceildiv(Nq, 4)>, #flash.grid_factor<splits>]
// DECODE-SAME: flash.tile = array<i64: 4, 4, 64, 1, 4>
// DECODE: arith.index_cast %[[S]] : i64 to index
// DECODE: flash_tile.mma
// The kv warps' states merge through the K buffer.
// DECODE: flash_tile.batch_reduce max
// DECODE: flash_tile.batch_reduce sum
// The split's f32 partial rows and their log-sum-exps.
// DECODE: memref.reinterpret_cast %[[WSO]]
// DECODE-NEXT: flash_tile.store {{.+}} : !flash_tile.tile<16x64xf32>
// DECODE: memref.reinterpret_cast %[[WSL]]
// DECODE-NEXT: flash_tile.store
// DECODE: gpu.return
// The combine: CTAs of a query row of the group's 4 heads, 2 warps, with
// registers for 8 splits a step, whose loads are clamped to the rows (no
// branch around them) and come before the step's arithmetic: the whole
// steps in a loop, then the last splits in a masked step of their own.
// DECODE-LABEL: gpu.func @decode_combine(
// DECODE-SAME: %[[CO:[a-z0-9]+]]: memref<1099511627776xf16> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 16 : i64, llvm.noalias},
// DECODE-SAME: %[[CL:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 4 : i64, llvm.noalias},
// DECODE-SAME: %[[CWSO:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 16 : i64, llvm.noalias}, %[[CWSL:[a-z0-9]+]]: memref<1099511627776xf32> {flash.param = {meaning = "{{[^"]*}}", name = "{{[a-z_]+}}"}, llvm.align = 4 : i64, llvm.noalias},
// DECODE-SAME: attributes {flash.block = 64 : i64, flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<Nq>], flash.max_registers = 128 : i64, flash.shared_bytes = 0 : i64}
// DECODE: scf.for
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSO]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: memref.reinterpret_cast %[[CWSL]]
// DECODE-NEXT: flash_tile.load {{.+}} clamp :
// DECODE-NOT: flash_tile.map
// DECODE: flash_tile.map
// DECODE-NOT: flash_tile.load
// DECODE: scf.yield
// DECODE: scf.if
// DECODE: arith.minui
// DECODE: flash_tile.load {{.+}} clamp {alignment = 16 : i64}
// DECODE: memref.reinterpret_cast %[[CO]]
// DECODE-NEXT: flash_tile.store {{.+}} {alignment = 16 : i64} : !flash_tile.tile<4x64xf16, #blocked>
// DECODE: memref.reinterpret_cast %[[CL]]
// DECODE-NEXT: flash_tile.store
// DECODE: gpu.return
// DECODE-NOT: gpu.func
// DECODE-NOT: func.func

//--- decode.mlir
func.func @decode(%q: tensor<?x4x?x64xf16>, %k: tensor<?x1x?x64xf16>,
                  %v: tensor<?x1x?x64xf16>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>) {
  %o, %l = flash.attention %q, %k, %v causal
      : tensor<?x4x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
      -> tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
  return %o, %l : tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// F32: error: flash-to-tile: the GPU kernels take f16 or bf16 inputs, not 'f32'

//--- f32.mlir
func.func @f32(%q: tensor<?x2x?x64xf32>, %k: tensor<?x2x?x64xf32>,
               %v: tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>
      -> tensor<?x2x?x64xf32>
  return %o : tensor<?x2x?x64xf32>
}

// D320: error: flash-to-tile: head dims D=320, Dv=320 exceed the 256 the GPU kernels support on sm_80

//--- d320.mlir
func.func @d320(%q: tensor<?x2x?x320xf16>, %k: tensor<?x2x?x320xf16>,
                %v: tensor<?x2x?x320xf16>) -> tensor<?x2x?x320xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x320xf16>, tensor<?x2x?x320xf16>, tensor<?x2x?x320xf16>
      -> tensor<?x2x?x320xf16>
  return %o : tensor<?x2x?x320xf16>
}

// One batch entry, one head and one Q tile: canonicalization folds the
// tile loop of one iteration away.
// STATIC: error: flash-to-tile: attention steps outside a flash.tile_loop (a tile loop of one iteration is folded away for static shapes of one tile; give the batch or the lengths dynamically)

//--- static.mlir
func.func @static(%q: tensor<1x1x32x64xf16>, %k: tensor<1x1x32x64xf16>,
                  %v: tensor<1x1x32x64xf16>) -> tensor<1x1x32x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<1x1x32x64xf16>, tensor<1x1x32x64xf16>, tensor<1x1x32x64xf16>
      -> tensor<1x1x32x64xf16>
  return %o : tensor<1x1x32x64xf16>
}

// CPU: error: flash-to-tile: target 'cpu' is not a GPU
// SM99: error: flash-to-tile: unknown target 'sm_99'; known targets: cpu, sm_80, sm_90a

//===----------------------------------------------------------------------===//
// No attention
//===----------------------------------------------------------------------===//

// NONE-NOT: gpu.container_module
// NONE-LABEL: func.func @no_attention
// NONE-NEXT: arith.addf
// NONE-NEXT: return
// NONE-NOT: gpu.module

//--- none.mlir
func.func @no_attention(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %c = arith.addf %a, %b : tensor<4xf16>
  return %c : tensor<4xf16>
}

// TWO: error: flash-to-tile: one attention per function

//--- two.mlir
func.func @two(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
               %v: tensor<?x2x?x64xf16>)
    -> (tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>) {
  %o1 = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  %o2 = flash.attention %q, %k, %v causal
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o1, %o2 : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
}

//===----------------------------------------------------------------------===//
// A run-time scale: the function's f32 argument is the kernel's last
// parameter, multiplying scale log2(e) once.
//===----------------------------------------------------------------------===//

// SCALE-LABEL: gpu.func @scaled_fwd(
// SCALE-SAME: %[[S:[a-z0-9]+]]: f32 {flash.param = {meaning = "the softmax scale", name = "scale"}}) kernel
// SCALE: %[[L2E:.+]] = arith.constant 1.44269502 : f32
// SCALE: arith.mulf %[[L2E]], %[[S]] : f32
//--- scale.mlir
func.func @scaled(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                  %v: tensor<?x2x?x64xf16>, %s: f32) -> tensor<?x2x?x64xf16> {
  %o = flash.attention %q, %k, %v scale = 1.0 scale_factor(%s)
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}

// A factor computed in the function has no kernel parameter to come from.
// SCALE-COMPUTED: error: flash-to-tile: the scale factor must be an argument of the function
//--- scale-computed.mlir
func.func @computed(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                    %v: tensor<?x2x?x64xf16>, %s: f32) -> tensor<?x2x?x64xf16> {
  %twice = arith.addf %s, %s : f32
  %o = flash.attention %q, %k, %v scale = 1.0 scale_factor(%twice)
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}
