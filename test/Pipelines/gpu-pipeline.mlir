// The whole GPU pipeline (--flash-gpu-pipeline): from flash.attention to a
// gpu.binary whose object holds the PTX of the kernels for the chip, and
// nothing else (the runtime launches the kernels). Bad options are
// diagnostics, never aborts.
//
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_80" -o %t.sm80.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,SM80 < %t.sm80.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.sm80.mlir
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a" -o %t.sm90.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,SM90 < %t.sm90.mlir
// RUN: FileCheck %s --check-prefixes=WGMMA,TMA,WS,PINGPONG --implicit-check-not=ldmatrix \
// RUN:   --implicit-check-not=mma.sync --implicit-check-not=cp.async.cg \
// RUN:   --implicit-check-not=fence.proxy < %t.sm90.mlir
// Without warp specialisation (warp-specialize=0) the CTA's first thread
// copies and every warp computes.
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a warp-specialize=0" \
// RUN:   | FileCheck %s --check-prefixes=WGMMA,TMA,NO-WS \
// RUN:       --implicit-check-not=setmaxnreg --implicit-check-not=elect.sync \
// RUN:       --implicit-check-not=bar.arrive
// Without the ping-pong (pingpong=0) the consumer warpgroups pass no turns.
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a pingpong=0" \
// RUN:   | FileCheck %s --check-prefixes=WGMMA,TMA,WS --implicit-check-not=bar.arrive
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a overlap-softmax=1" \
// RUN:   | FileCheck %s --check-prefix=OVERLAP
// The same kernel with cp.async copies (tma=0).
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a tma=0" \
// RUN:   | FileCheck %s --check-prefixes=WGMMA,CPASYNC \
// RUN:       --implicit-check-not=ldmatrix --implicit-check-not=mma.sync \
// RUN:       --implicit-check-not=cp.async.bulk --implicit-check-not=mbarrier
// Without warpgroup MMAs, sm_90a's kernel multiplies by warps (mma.sync,
// ldmatrix) at its own tiles: 128 keys a block, 16 rows a warp.
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a warpgroup-mma=0" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,SM90-MMA
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a warpgroup-mma=0" \
// RUN:   | FileCheck %s --check-prefix=PTX
// The builder's option is gone: every kernel comes through the flash_tile
// IR.
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 tile-ir=1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-TILE-IR
// NO-TILE-IR: no such option tile-ir
// A later PTX ISA version is accepted.
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=ptx90" \
// RUN:   | FileCheck %s --check-prefix=PTX90
//
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_70" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SM70
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=ptx60" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX60
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_90a ptx=ptx78" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX78
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=8.0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTXTEXT
// Versions this LLVM does not know, which it would ignore with a warning.
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_90a ptx=ptx89" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX89
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=ptx79" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX79
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=ptx0080" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX0080
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 ptx=ptx91" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX91
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 format=elf" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ELF
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 splits=2 dynamic-splits=1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPLITS
// A toolkit path that is not there, for a cubin: one line, before any
// pass runs.
// RUN: not flashc-opt %s --flash-gpu-pipeline="chip=sm_80 format=bin toolkit=%t.none" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOOLKIT --implicit-check-not=gpu.module

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: func.func
// CHECK-NOT: gpu.module
// SM80-NEXT: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// SM90-NEXT: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// SM90-MMA-NEXT: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// The object is PTX text (\0A: newlines, \09: tabs) for the chip.
// CHECK-SAME: assembly = "
// CHECK-SAME: .version 8.0\0A
// SM80-SAME: .target sm_80\0A
// SM90-SAME: .target sm_90a\0A
// SM90-MMA-SAME: .target sm_90a\0A
// CHECK-SAME: .extern .shared .align 16 .b8 flash_smem[];
// CHECK-SAME: .visible .entry attention_fwd(
// One kernel: no combine without a split KV loop.
// CHECK-NOT: .visible .entry
// SM80-SAME: .reqntid 128, 1, 1
// Two consumer warpgroups of 64 rows each, and the producer's warpgroup.
// SM90-SAME: .reqntid 384, 1, 1
// SM90-MMA-SAME: .reqntid 256, 1, 1
// CHECK-NOT: .visible .entry
// CHECK-SAME: ">]
// CHECK-NOT: gpu.binary
// CHECK-NOT: func.func

// The instructions of the FA2 kernel, in any order: cp.async copies,
// ldmatrix (transposed for V), tensor-core MMAs, butterfly shuffles for the
// row reductions and ex2 for the exponentials.
// PTX: assembly = "
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: cp.async.commit_group
// PTX-DAG: cp.async.wait_group
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: ex2.approx.ftz.f32
// PTX-DAG: bar.sync

// sm_90a: S = Q K^T from shared memory (Q and K by descriptors, K
// K-major; 128 keys a block), O += P V with P from registers and V N-major
// (imm-trans-b 1),
// the registers fenced before and the group waited for after; no ldmatrix
// and no mma.sync left. The copies are TMA copies of tensor maps passed
// as __grid_constant__ parameters, one 64-column box per panel of a stage,
// issued by the first thread and waited for on the stage's mbarrier with
// the parity its loop carries; with tma=0 they are cp.async copies fenced
// for the asynchronous proxy before the barrier.
// WGMMA: assembly = "
// TMA-DAG: .param .align 64 .b8 attention_fwd_param_{{[0-9]+}}[128]
// TMA-DAG: mbarrier.init.shared.b64
// TMA-DAG: mbarrier.arrive.expect_tx.shared.b64
// TMA-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// TMA-DAG: mbarrier.try_wait.parity.shared.b64
// TMA-DAG: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// TMA-DAG: cp.async.bulk.wait_group.read
// A producer warp (the last warpgroup's first) copies, an elected thread
// issuing each copy after waiting for the consumers' release of the stage;
// the consumers arrive on the stage's release mbarrier, meet at a named
// barrier of their 256 threads, and take the producer's registers.
// WS-DAG: .reqntid 384, 1, 1
// WS-DAG: setmaxnreg.dec.sync.aligned.u32 \0924;
// WS-DAG: setmaxnreg.inc.sync.aligned.u32 \09240;
// WS-DAG: elect.sync \09%r{{[0-9]+}}|%p{{[0-9]+}}, -1;
// WS-DAG: mbarrier.arrive.shared.b64
// WS-DAG: bar.sync \091, 256;
// The two consumer warpgroups take turns at the tensor cores: the first
// holds the first turn (an arrival on its own barrier, 2) and meets the
// last turn's pass there at the end, and each waits for its turn on its
// barrier and passes it by arriving on the other's.
// PINGPONG-DAG: bar.arrive 2, 256;
// PINGPONG-DAG: bar.sync \092, 256;
// PINGPONG-DAG: bar.sync \09%r{{[0-9]+}}, 256;
// PINGPONG-DAG: bar.arrive %r{{[0-9]+}}, 256;
// NO-WS-DAG: .reqntid 256, 1, 1
// CPASYNC-DAG: cp.async.wait_group \090;\0A\09fence.proxy.async.shared::cta;\0A\09bar.sync
// WGMMA-DAG: wgmma.fence.sync.aligned;
// WGMMA-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{[{][^}]+[}]}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p0, 1, 1, 0, 0;
// WGMMA-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{[{][^}]+[}]}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p1, 1, 1, 1;
// WGMMA-DAG: wgmma.commit_group.sync.aligned;
// WGMMA-DAG: wgmma.wait_group.sync.aligned 0;
// With overlap-softmax=1 an iteration starts S and the previous block's
// P V back to back, each its own group, and waits for S with P V still
// running, then for P V.
// OVERLAP: assembly = "
// OVERLAP: wgmma.commit_group.sync.aligned;\0Awgmma.mma_async
// OVERLAP: wgmma.commit_group.sync.aligned;\0A}
// OVERLAP: wgmma.wait_group.sync.aligned 1;
// OVERLAP: wgmma.wait_group.sync.aligned 0;

// PTX90: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx90">
// PTX90-SAME: .version 9.0\0A.target sm_80\0A

// SM70: error: invalid flash pipeline options: unknown target 'sm_70'; known targets: cpu, sm_80, sm_90a
// PTX60: error: invalid flash pipeline options: sm_80 needs a PTX ISA version from ptx70 to ptx90, got ptx60
// PTX78: error: invalid flash pipeline options: sm_90a needs a PTX ISA version from ptx80 to ptx90, got ptx78
// PTX89: error: invalid flash pipeline options: unsupported PTX ISA version 'ptx89'; LLVM emits ptx60 to ptx65, ptx70 to ptx78, ptx80 to ptx88 and ptx90
// PTX79: error: invalid flash pipeline options: unsupported PTX ISA version 'ptx79';
// PTX0080: error: invalid flash pipeline options: malformed PTX ISA version 'ptx0080'; expected e.g. ptx80 (PTX ISA 8.0)
// PTX91: error: invalid flash pipeline options: unsupported PTX ISA version 'ptx91';
// PTXTEXT: error: invalid flash pipeline options: malformed PTX ISA version '8.0'; expected e.g. ptx80 (PTX ISA 8.0)
// ELF: error: invalid flash pipeline options: unknown binary format 'elf'; expected isa or bin
// TOOLKIT: error: invalid flash pipeline options: the CUDA toolkit path '{{.*}}.none' is not a directory (toolkit=; format=bin assembles with its ptxas)
// SPLITS: error: invalid flash pipeline options: dynamic-splits excludes a fixed split count (2)

func.func @attention(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                     %v: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}
