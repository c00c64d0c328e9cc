//===- ScratchAllocator.cpp - Heap buffers of the CPU kernels -------------===//
//
// Every block carries a header just below the pointer handed out: the
// pointer malloc returned and the block's capacity (bytes from that
// pointer). Freed blocks of at least kScratchReuseBytes go to a list, most
// recent last; an allocation takes the smallest listed block that holds it
// and is at most twice its size (so a large block does not serve a small
// request), the most recent of equal ones.
//
//===----------------------------------------------------------------------===//

#include "ScratchAllocator.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <vector>

using namespace mlir::flash::detail;

namespace {

struct Header {
  void *raw;
  size_t capacity;
};

struct Block {
  void *raw;
  size_t capacity;
};

struct Cache {
  std::mutex mutex;
  std::vector<Block> blocks;
  size_t bytes = 0;
};

/// Never destroyed: kernels may free blocks while the process exits.
Cache &cache() {
  static Cache *c = new Cache();
  return *c;
}

/// A raw block of at least `need` bytes: a held one, or a new one.
Block acquire(size_t need) {
  if (need >= kScratchReuseBytes) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    // The smallest that fits; of equal ones, the most recently freed (its
    // lines are the likeliest to be cached).
    auto best = c.blocks.rend();
    for (auto it = c.blocks.rbegin(); it != c.blocks.rend(); ++it)
      if (it->capacity >= need && it->capacity / 2 <= need &&
          (best == c.blocks.rend() || it->capacity < best->capacity))
        best = it;
    if (best != c.blocks.rend()) {
      Block block = *best;
      c.blocks.erase(std::next(best).base());
      c.bytes -= block.capacity;
      return block;
    }
  }
  return {std::malloc(need), need};
}

/// The pointer handed out for `block`: aligned to `alignment`, with the
/// header below it.
void *place(Block block, size_t alignment) {
  if (!block.raw)
    return nullptr;
  auto at = reinterpret_cast<uintptr_t>(block.raw) + sizeof(Header);
  at = (at + alignment - 1) & ~uintptr_t(alignment - 1);
  reinterpret_cast<Header *>(at)[-1] = {block.raw, block.capacity};
  return reinterpret_cast<void *>(at);
}

void *allocate(uint64_t size, uint64_t alignment) {
  alignment = std::max<uint64_t>(alignment, alignof(Header));
  if (alignment & (alignment - 1))
    return nullptr;
  return place(acquire(size + sizeof(Header) + alignment), alignment);
}

} // namespace

void *mlir::flash::detail::scratchAlloc(uint64_t size) {
  return allocate(size, 16);
}

void *mlir::flash::detail::scratchAlignedAlloc(uint64_t alignment,
                                               uint64_t size) {
  return allocate(size, alignment);
}

void mlir::flash::detail::scratchFree(void *pointer) {
  if (!pointer)
    return;
  Header header = reinterpret_cast<Header *>(pointer)[-1];
  if (header.capacity < kScratchReuseBytes ||
      header.capacity > kScratchMaxCachedBytes) {
    std::free(header.raw);
    return;
  }
  std::vector<void *> evicted;
  {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.blocks.push_back({header.raw, header.capacity});
    c.bytes += header.capacity;
    size_t drop = 0;
    while (c.bytes > kScratchMaxCachedBytes ||
           c.blocks.size() - drop > kScratchMaxCachedBlocks) {
      c.bytes -= c.blocks[drop].capacity;
      evicted.push_back(c.blocks[drop].raw);
      ++drop;
    }
    c.blocks.erase(c.blocks.begin(), c.blocks.begin() + drop);
  }
  for (void *raw : evicted)
    std::free(raw);
}

ScratchCacheStats mlir::flash::detail::getScratchCacheStats() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return {c.bytes, c.blocks.size()};
}

void mlir::flash::detail::releaseScratchCache() {
  std::vector<Block> blocks;
  {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    blocks.swap(c.blocks);
    c.bytes = 0;
  }
  for (Block block : blocks)
    std::free(block.raw);
}
