//===- ScratchAllocatorTest.cpp - The CPU kernels' heap buffers -----------===//
//
// The allocator behind `_mlir_memref_to_llvm_alloc`/`_free` in the JIT:
// alignment, reuse of large blocks, the limits on what it keeps, threads,
// and a JIT kernel whose second call reuses its first call's scratch.
//
//===----------------------------------------------------------------------===//

#include "ScratchAllocator.h"

#include "AttentionTestUtils.h"
#include "flashc/Compiler/JIT.h"

#include "gtest/gtest.h"

#include <cstring>
#include <thread>
#include <vector>

using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {

class ScratchAllocatorTest : public ::testing::Test {
protected:
  void SetUp() override { releaseScratchCache(); }
  void TearDown() override { releaseScratchCache(); }
};

TEST_F(ScratchAllocatorTest, AlignsAndHoldsTheRequestedBytes) {
  for (uint64_t alignment : {1, 8, 16, 64, 4096}) {
    for (uint64_t size : {uint64_t(0), uint64_t(1), uint64_t(1000),
                          uint64_t(kScratchReuseBytes + 3)}) {
      auto *p =
          static_cast<unsigned char *>(scratchAlignedAlloc(alignment, size));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u)
          << "alignment " << alignment << ", size " << size;
      std::memset(p, 0xab, size);
      scratchFree(p);
    }
  }
  auto *p = static_cast<unsigned char *>(scratchAlloc(100));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
  scratchFree(p);
  scratchFree(nullptr);
  // Not a power of two: no block.
  EXPECT_EQ(scratchAlignedAlloc(48, 64), nullptr);
}

TEST_F(ScratchAllocatorTest, ReusesALargeBlockAndNotASmallOne) {
  const uint64_t large = 4 << 20;
  void *a = scratchAlloc(large);
  std::memset(a, 1, large);
  scratchFree(a);
  EXPECT_EQ(getScratchCacheStats().blocks, 1u);
  EXPECT_GE(getScratchCacheStats().bytes, large);
  // The same size, and a little less, get the held block back.
  void *b = scratchAlloc(large);
  EXPECT_EQ(b, a);
  EXPECT_EQ(getScratchCacheStats().blocks, 0u);
  scratchFree(b);
  void *c = scratchAlloc(large - 4096);
  EXPECT_EQ(c, a);
  scratchFree(c);
  // Less than half of it does not.
  void *d = scratchAlloc(large / 2 - 4096);
  EXPECT_NE(d, a);
  EXPECT_EQ(getScratchCacheStats().blocks, 1u);
  scratchFree(d);
  EXPECT_EQ(getScratchCacheStats().blocks, 2u);
  // Small blocks go back to malloc.
  void *small = scratchAlloc(1024);
  scratchFree(small);
  EXPECT_EQ(getScratchCacheStats().blocks, 2u);
  releaseScratchCache();
  EXPECT_EQ(getScratchCacheStats().blocks, 0u);
  EXPECT_EQ(getScratchCacheStats().bytes, 0u);
}

TEST_F(ScratchAllocatorTest, KeepsAtMostTheLimitOfBlocks) {
  std::vector<void *> blocks;
  for (size_t i = 0; i < kScratchMaxCachedBlocks + 5; ++i)
    blocks.push_back(scratchAlloc(kScratchReuseBytes));
  for (void *p : blocks)
    scratchFree(p);
  EXPECT_EQ(getScratchCacheStats().blocks, kScratchMaxCachedBlocks);
  // The oldest went first; of the equal blocks held, the most recently
  // freed is taken first.
  void *again = scratchAlloc(kScratchReuseBytes);
  EXPECT_EQ(again, blocks.back());
  scratchFree(again);
}

TEST_F(ScratchAllocatorTest, ThreadsShareTheHeldBlocks) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        uint64_t size = kScratchReuseBytes + uint64_t((t * 7 + i) % 5) * 4096;
        auto *p = static_cast<unsigned char *>(scratchAlignedAlloc(64, size));
        ASSERT_NE(p, nullptr);
        p[0] = static_cast<unsigned char>(t);
        p[size - 1] = static_cast<unsigned char>(i);
        EXPECT_EQ(p[0], t);
        scratchFree(p);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  // At most 4 blocks are in use at once, each of one of 5 sizes; every
  // size is held by at most 4 blocks.
  EXPECT_GE(getScratchCacheStats().blocks, 1u);
  EXPECT_LE(getScratchCacheStats().blocks, 20u);
}

/// A prefill kernel's transposed copy of K (8 heads x 64 x 1024 floats,
/// 2 MiB) is held after a call and taken again by the next one, and both
/// calls match the float64 reference.
TEST_F(ScratchAllocatorTest, KernelCallsReuseTheirScratch) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 8;
  spec.kvHeads = 8;
  spec.seqQ = 256;
  spec.seqKV = 1024;
  spec.headDim = 64;
  spec.withLse = true;
  Compiler compiler;
  auto kernel = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  flashc_test::checkRun(**kernel, spec, {1, 256, 1024}, rng);
  ScratchCacheStats first = getScratchCacheStats();
  EXPECT_GE(first.blocks, 1u);
  EXPECT_GE(first.bytes, size_t(8 * 64 * 1024 * 4));
  flashc_test::checkRun(**kernel, spec, {1, 256, 1024}, rng);
  ScratchCacheStats second = getScratchCacheStats();
  EXPECT_EQ(second.blocks, first.blocks);
  EXPECT_EQ(second.bytes, first.bytes);
}

} // namespace
