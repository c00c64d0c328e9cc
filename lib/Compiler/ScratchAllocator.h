//===- ScratchAllocator.h - Heap buffers of the CPU kernels -----*- C++ -*-===//
//
// The CPU kernels allocate their heap buffers (the transposed copy of K, f32
// copies of f16/bf16 operands, split-KV partials, per-tile state) through
// finalize-memref-to-llvm's generic functions, `_mlir_memref_to_llvm_alloc`,
// `_mlir_memref_to_llvm_aligned_alloc` and `_mlir_memref_to_llvm_free`,
// which the JIT binds to the functions here.
//
// Blocks of at least kReuseBytes are not returned to the system when a
// kernel frees them: they are kept, up to kMaxCachedBytes in all, and the
// next call's buffers of about their size reuse them. malloc would return
// such blocks to the system (mmap/munmap, or trimming the heap), and every
// call would then fault in its scratch pages again: on a multi-megabyte
// copy of K that cost several percent of a prefill call. Smaller blocks go
// to malloc and free. The functions are thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_COMPILER_SCRATCHALLOCATOR_H
#define FLASHC_LIB_COMPILER_SCRATCHALLOCATOR_H

#include <cstddef>
#include <cstdint>

namespace mlir {
namespace flash {
namespace detail {

/// Blocks at least this large are kept for reuse when freed.
constexpr size_t kScratchReuseBytes = size_t(256) << 10;
/// At most this many bytes of freed blocks are kept (the oldest go first).
constexpr size_t kScratchMaxCachedBytes = size_t(1) << 30;
/// At most this many freed blocks are kept.
constexpr size_t kScratchMaxCachedBlocks = 32;

/// `_mlir_memref_to_llvm_alloc`: `size` bytes, 16-byte aligned.
void *scratchAlloc(uint64_t size);
/// `_mlir_memref_to_llvm_aligned_alloc`: `size` bytes aligned to
/// `alignment` (a power of two).
void *scratchAlignedAlloc(uint64_t alignment, uint64_t size);
/// `_mlir_memref_to_llvm_free`: frees a block of either; null is ignored.
void scratchFree(void *pointer);

/// Bytes and blocks held for reuse now.
struct ScratchCacheStats {
  size_t bytes = 0;
  size_t blocks = 0;
};
ScratchCacheStats getScratchCacheStats();

/// Returns every held block to the system.
void releaseScratchCache();

} // namespace detail
} // namespace flash
} // namespace mlir

#endif // FLASHC_LIB_COMPILER_SCRATCHALLOCATOR_H
