//===- AttentionSchedule.h - Tile sizes and loop order ----------*- C++ -*-===//
//
// The problem description shared by the tiling pass, the cost model and the
// C++ API, and the choice of block sizes from a target's SRAM capacity.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_ANALYSIS_ATTENTIONSCHEDULE_H
#define FLASHC_ANALYSIS_ATTENTIONSCHEDULE_H

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Core/Problem.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace mlir {
namespace flash {

/// The models take the attention problem of flashc/Core/Problem.h, with
/// static sizes: callers substitute a representative value for a dynamic
/// one.
using ::flashc::AttentionProblem;

/// The element type `type` (f32, f16 or bf16) is, or nothing.
std::optional<::flashc::ElementType> toElementType(Type type);

/// The problem of an attention whose operands have these types:
/// Q [B, Hq, Nq, D], K [B, Hkv, Nk, D], V [B, Hkv, Nk, Dv] of f32, f16 or
/// bf16, with `mask`. The error names the first dynamic size or the element
/// type.
llvm::Expected<AttentionProblem>
getStaticAttentionProblem(RankedTensorType query, RankedTensorType key,
                          RankedTensorType value, ::flashc::Mask mask);

/// The two loop orders of the FlashAttention papers.
enum class LoopOrder {
  /// FlashAttention (algorithm 1): outer loop over KV blocks, inner loop
  /// over Q blocks; O, m, l are read and written once per KV block.
  Algorithm1,
  /// FlashAttention-2: outer (parallel) loop over Q blocks, inner loop over
  /// KV blocks; each Q block is read once and O written once.
  FA2,
};

llvm::StringRef stringifyLoopOrder(LoopOrder order);
std::optional<LoopOrder> parseLoopOrder(llvm::StringRef name);

/// Block sizes of a schedule.
struct TileSizes {
  /// Query rows per block (Br), per query head.
  int64_t blockQ = 0;
  /// Keys per block (Bc).
  int64_t blockKV = 0;
  LoopOrder order = LoopOrder::FA2;
};

/// Chooses Br and Bc for `shape` on `target`.
///
/// The SRAM capacity M is the target's `sramBytes` over the element size (on
/// the CPU over 4 bytes, since blocks are held in f32). Algorithm 1 uses the
/// paper's rule Bc = ceil(M / 4d), Br = min(Bc, d). FA2 on the CPU takes
/// Br = 64 and the largest Bc, a multiple of 16 and at most 256, for which
/// the Q block, the K and V blocks, the score block and the accumulator fit
/// in M; on a 16-lane (AVX-512) CPU, Br = 128 where M still gives Bc = 256
/// with it (each K and V block is then read from L2 by twice the rows).
/// Both are clamped to the sequence lengths. With GQA the G query heads of
/// a group share one Q block of G x Br rows, so Br is divided by G when the
/// group is large. FA2 on a GPU takes the tiles of the
/// GPU kernels (`flashc::chooseGPUTiles`: a decode tile when Nq <= 16),
/// halving Bc until the shared memory fits; Br is clamped to Nq, Bc is not
/// clamped (the kernels mask a block's tail). `wideWarps` (the GPU
/// pipeline's tiles): a warp gets 32 query rows where the kernels allow it
/// (see `flashc::makeGPUTileConfig`); without it, 16 (flash-tile's
/// `wide-warps=0`). `stages` is the GPU kernels' count of K and V buffers
/// (the pipeline's `stages`), whose shared memory Bc is halved to fit.
/// `warpgroupMma`: on a target with warpgroup MMAs (sm_90a), whether the
/// kernels use them, which place their buffers' rows unpadded; without
/// them the rows are padded as on sm_80 (the pipeline's `warpgroup-mma`).
/// `alignment`: the bytes the GPU kernels assume of the tensors' addresses
/// and strides (the pipeline's `alignment`); a decode kernel that copies
/// element by element (2) takes smaller KV blocks.
TileSizes chooseTileSizes(const TargetInfo &target,
                          const AttentionProblem &shape, LoopOrder order,
                          bool wideWarps = true, int64_t stages = 2,
                          bool warpgroupMma = true,
                          int64_t alignment = flashc::kMaxGlobalAlignment);

} // namespace flash
} // namespace mlir

#endif // FLASHC_ANALYSIS_ATTENTIONSCHEDULE_H
