//===- TensorMapTest.cpp - Tensor maps and the mbarrier state machine -----===//
//
// The pieces of the simulator's Hopper support that stand on their own:
// the tensor map that cuTensorMapEncodeTiled writes (every rule cuda.h
// documents for its arguments, the swizzle patterns, the traversal of a box
// with out-of-bounds elements) and the mbarrier's phases and counts (PTX
// ISA, "mbarrier"). The expectations are written from the documents'
// definitions, independently of the code under test: the swizzles as
// chunk permutations of rows, the box as nested coordinates.
//
//===----------------------------------------------------------------------===//

#include "flashc/Simulator/TensorMap.h"
#include "Mbarrier.h"

#include "gtest/gtest.h"

#include <cstring>
#include <dlfcn.h>
#include <set>
#include <string>
#include <vector>

using namespace flashc;
using namespace flashc::sim;

namespace {

struct alignas(128) MapBytes {
  uint8_t bytes[kTensorMapBytes];
};

/// A valid 2-D f16 map: 100 x 37 elements, rows 256 bytes apart, a box of
/// 64 x 16, 128-byte swizzle.
struct Args2D {
  uint64_t dims[2] = {100, 37};
  uint64_t strides[1] = {256};
  uint32_t box[2] = {64, 16};
  uint32_t elementStrides[2] = {1, 1};
  TensorMapTiledArgs args;
  Args2D() {
    args.dataType = static_cast<uint32_t>(TensorMapDataType::Float16);
    args.rank = 2;
    args.globalAddress = 0x10000;
    args.globalDim = dims;
    args.globalStrides = strides;
    args.boxDim = box;
    args.elementStrides = elementStrides;
    args.swizzle = static_cast<uint32_t>(TensorMapSwizzle::B128);
  }
};

void expectError(const Status &e, ErrorCode code, const std::string &mention) {
  ASSERT_TRUE(static_cast<bool>(e))
      << "expected an error mentioning '" << mention << "'";
  EXPECT_EQ(e.code(), code) << e.message();
  EXPECT_NE(e.message().find(mention), std::string::npos)
      << "'" << e.message() << "' does not mention '" << mention << "'";
}

TEST(TensorMapTest, EncodesAndDecodes) {
  Args2D a;
  MapBytes out;
  ASSERT_FALSE(encodeTensorMapTiled(out.bytes, a.args));
  Result<TensorMap> map = decodeTensorMap(out.bytes);
  ASSERT_TRUE(map) << map.status().message();
  EXPECT_EQ(map->rank, 2);
  EXPECT_EQ(map->elementBytes, 2);
  EXPECT_EQ(map->globalAddress, 0x10000u);
  EXPECT_EQ(map->globalDim[0], 100u);
  EXPECT_EQ(map->globalDim[1], 37u);
  EXPECT_EQ(map->globalStride[0], 2u);
  EXPECT_EQ(map->globalStride[1], 256u);
  EXPECT_EQ(map->boxDim[0], 64);
  EXPECT_EQ(map->boxDim[1], 16);
  EXPECT_EQ(map->swizzle, 3);
  EXPECT_EQ(map->boxRowBytes(), 128u);
  EXPECT_EQ(map->boxBytes(), 64u * 16 * 2);
}

TEST(TensorMapTest, RejectsWhatTheDriverRejects) {
  struct Case {
    const char *name;
    void (*mutate)(Args2D &);
    const char *mention;
  };
  const Case cases[] = {
      {"rank 0", [](Args2D &a) { a.args.rank = 0; }, "rank 0"},
      {"rank 6", [](Args2D &a) { a.args.rank = 6; }, "rank 6"},
      {"data type", [](Args2D &a) { a.args.dataType = 40; }, "data type 40"},
      {"address", [](Args2D &a) { a.args.globalAddress = 0x10008; },
       "not 16-byte aligned"},
      {"dim 0", [](Args2D &a) { a.dims[1] = 0; }, "globalDim of dimension 1"},
      {"dim 2^32+1", [](Args2D &a) { a.dims[0] = (uint64_t(1) << 32) + 1; },
       "globalDim of dimension 0"},
      {"stride", [](Args2D &a) { a.strides[0] = 200; }, "not a multiple of 16"},
      {"stride 2^40", [](Args2D &a) { a.strides[0] = uint64_t(1) << 40; },
       "below 2^40"},
      {"box 0", [](Args2D &a) { a.box[1] = 0; }, "boxDim of dimension 1"},
      {"box 257", [](Args2D &a) { a.box[1] = 257; }, "boxDim of dimension 1"},
      {"inner bytes",
       [](Args2D &a) {
         a.box[0] = 4;
         a.args.swizzle = 0;
       },
       "not a multiple of 16 bytes"},
      {"swizzle span", [](Args2D &a) { a.args.swizzle = 2; },
       "exceeds the 64-byte swizzle span"},
      {"element stride 0", [](Args2D &a) { a.elementStrides[1] = 0; },
       "elementStrides of dimension 1"},
      {"element stride 9", [](Args2D &a) { a.elementStrides[1] = 9; },
       "elementStrides of dimension 1"},
      {"nan fill of integers",
       [](Args2D &a) {
         a.args.dataType = static_cast<uint32_t>(TensorMapDataType::UInt16);
         a.args.oobFill = 1;
       },
       "floating-point"},
      {"oob fill", [](Args2D &a) { a.args.oobFill = 2; }, "oobFill 2"},
      {"l2", [](Args2D &a) { a.args.l2Promotion = 4; }, "l2Promotion 4"},
      {"swizzle 7", [](Args2D &a) { a.args.swizzle = 7; }, "swizzle 7"},
      {"interleave 3", [](Args2D &a) { a.args.interleave = 3; },
       "interleave 3"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    Args2D a;
    c.mutate(a);
    MapBytes out;
    expectError(encodeTensorMapTiled(out.bytes, a.args),
                ErrorCode::InvalidArgument, c.mention);
  }
}

TEST(TensorMapTest, SaysWhatItDoesNotImplement) {
  {
    Args2D a;
    a.args.dataType = 14; // CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B
    MapBytes out;
    expectError(encodeTensorMapTiled(out.bytes, a.args), ErrorCode::Unsupported,
                "packed data type 14");
  }
  {
    Args2D a;
    a.args.interleave = 1;
    MapBytes out;
    expectError(encodeTensorMapTiled(out.bytes, a.args), ErrorCode::Unsupported,
                "interleaved");
  }
  {
    Args2D a;
    a.args.swizzle = 4; // CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B
    MapBytes out;
    expectError(encodeTensorMapTiled(out.bytes, a.args), ErrorCode::Unsupported,
                "swizzle 4");
  }
}

TEST(TensorMapTest, ChecksTheMapPointer) {
  Args2D a;
  MapBytes out[2];
  expectError(encodeTensorMapTiled(out[0].bytes + 32, a.args),
              ErrorCode::InvalidArgument, "64-byte aligned");
  expectError(encodeTensorMapTiled(nullptr, a.args), ErrorCode::InvalidArgument,
              "null");
}

TEST(TensorMapTest, DecodingChecksTheBytes) {
  MapBytes garbage;
  for (unsigned i = 0; i < kTensorMapBytes; ++i)
    garbage.bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  Result<TensorMap> map = decodeTensorMap(garbage.bytes);
  ASSERT_FALSE(map);
  EXPECT_NE(map.status().message().find("signature"), std::string::npos);

  // A valid map whose box a kernel overwrote.
  Args2D a;
  MapBytes out;
  ASSERT_FALSE(encodeTensorMapTiled(out.bytes, a.args));
  TensorMap broken;
  std::memcpy(&broken, out.bytes, sizeof broken);
  broken.boxDim[1] = 0;
  std::memcpy(out.bytes, &broken, sizeof broken);
  expectError(decodeTensorMap(out.bytes).status(), ErrorCode::InvalidArgument,
              "boxDim of dimension 1");
}

/// The swizzles written as permutations of rows: the 16-byte chunk c of
/// row r of a tile whose rows are the swizzle's span wide moves to chunk
/// c ^ (r's position in the 8-row pattern, scaled to the chunks a row has).
TEST(TensorMapTest, SwizzlesPermuteChunksWithinRows) {
  // 128 B: rows of 128 bytes, 8 rows a pattern: chunk c -> c ^ (r % 8).
  for (uint32_t block = 0; block < 3; ++block)
    for (uint32_t r = 0; r < 8; ++r)
      for (uint32_t c = 0; c < 8; ++c)
        for (uint32_t b = 0; b < 16; b += 5) {
          uint32_t base = 4096 + block * 1024 + r * 128;
          EXPECT_EQ(swizzleAddress(base + c * 16 + b, TensorMapSwizzle::B128),
                    base + (c ^ r) * 16 + b);
        }
  // 64 B: rows of 64 bytes, 8 rows a pattern (512 bytes); row r's chunk
  // c -> c ^ (r / 2 % 4).
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 4; ++c) {
      uint32_t base = 2048 + r * 64;
      EXPECT_EQ(swizzleAddress(base + c * 16 + 3, TensorMapSwizzle::B64),
                base + (c ^ ((r / 2) % 4)) * 16 + 3);
    }
  // 32 B: rows of 32 bytes, 8 rows a pattern (256 bytes); row r's chunk
  // c -> c ^ (r / 4 % 2).
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 2; ++c) {
      uint32_t base = 1024 + r * 32;
      EXPECT_EQ(swizzleAddress(base + c * 16 + 7, TensorMapSwizzle::B32),
                base + (c ^ ((r / 4) % 2)) * 16 + 7);
    }
  // Each is a permutation of its block, and its own inverse.
  for (TensorMapSwizzle s : {TensorMapSwizzle::None, TensorMapSwizzle::B32,
                             TensorMapSwizzle::B64, TensorMapSwizzle::B128}) {
    std::set<uint32_t> seen;
    for (uint32_t a = 0; a < 1024; ++a) {
      uint32_t z = swizzleAddress(a, s);
      EXPECT_LT(z, 1024u);
      seen.insert(z);
      EXPECT_EQ(swizzleAddress(z, s), a);
    }
    EXPECT_EQ(seen.size(), 1024u);
  }
}

TEST(TensorMapTest, TraversesABoxWithOutOfBoundsElements) {
  // A 3-D u32 tensor of 20 x 5 x 3 with padded rows and planes; a box of
  // 8 x 4 x 2 at (16, -1, 1) with a traversal step of 2 along dimension 1.
  uint64_t dims[3] = {20, 5, 3};
  uint64_t strides[2] = {96, 96 * 6};
  uint32_t box[3] = {8, 4, 2};
  uint32_t steps[3] = {1, 2, 1};
  TensorMapTiledArgs args;
  args.dataType = static_cast<uint32_t>(TensorMapDataType::UInt32);
  args.rank = 3;
  args.globalAddress = 0x4000;
  args.globalDim = dims;
  args.globalStrides = strides;
  args.boxDim = box;
  args.elementStrides = steps;
  MapBytes out;
  ASSERT_FALSE(encodeTensorMapTiled(out.bytes, args));
  Result<TensorMap> map = decodeTensorMap(out.bytes);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->boxCount(1), 2u);
  EXPECT_EQ(map->boxBytes(), 8u * 2 * 2 * 4);

  const int32_t coords[3] = {16, -1, 1};
  std::vector<uint64_t> offsets, addresses;
  std::vector<bool> inside;
  forEachBoxElement(*map, coords, [&](uint64_t off, uint64_t addr, bool in) {
    offsets.push_back(off);
    addresses.push_back(in ? addr : 0);
    inside.push_back(in);
  });
  ASSERT_EQ(offsets.size(), 32u);
  size_t i = 0;
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 8; ++x, ++i) {
        int gx = 16 + x, gy = -1 + 2 * y, gz = 1 + z;
        bool in = gx < 20 && gy >= 0 && gy < 5 && gz < 3;
        EXPECT_EQ(offsets[i], i * 4);
        EXPECT_EQ(inside[i], in) << x << "," << y << "," << z;
        if (in) {
          EXPECT_EQ(addresses[i], 0x4000u + uint64_t(gx) * 4 +
                                      uint64_t(gy) * 96 +
                                      uint64_t(gz) * 96 * 6);
        }
      }
}

/// The stand-in CUDA driver's cuTensorMapEncodeTiled writes this format
/// and refuses what encodeTensorMapTiled refuses.
TEST(TensorMapTest, TheFakeDriverEncodesMaps) {
  void *library = dlopen(FLASHC_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(library) << FLASHC_FAKE_CUDA_LIBRARY << ": " << dlerror();
  using EncodeFn =
      int (*)(void *, int, unsigned, void *, const unsigned long long *,
              const unsigned long long *, const unsigned *, const unsigned *,
              int, int, int, int);
  auto encode =
      reinterpret_cast<EncodeFn>(dlsym(library, "cuTensorMapEncodeTiled"));
  ASSERT_TRUE(encode) << dlerror();
  const unsigned long long dims[2] = {128, 1000}, strides[1] = {256};
  const unsigned box[2] = {64, 64}, steps[2] = {1, 1};
  MapBytes out;
  ASSERT_EQ(encode(out.bytes, 9 /*bf16*/, 2, reinterpret_cast<void *>(0x20000),
                   dims, strides, box, steps, 0, 3 /*128B*/, 2, 0),
            0);
  Result<TensorMap> map = decodeTensorMap(out.bytes);
  ASSERT_TRUE(map) << map.status().message();
  EXPECT_EQ(map->globalAddress, 0x20000u);
  EXPECT_EQ(map->globalDim[1], 1000u);
  EXPECT_EQ(map->boxBytes(), 64u * 64 * 2);
  // A row stride that is not a multiple of 16 bytes: CUDA_ERROR_INVALID_VALUE.
  const unsigned long long odd[1] = {250};
  EXPECT_EQ(encode(out.bytes, 9, 2, reinterpret_cast<void *>(0x20000), dims,
                   odd, box, steps, 0, 3, 2, 0),
            1);
}

//===----------------------------------------------------------------------===//
// The mbarrier state machine
//===----------------------------------------------------------------------===//

using sim::detail::Mbarrier;

TEST(MbarrierTest, PhasesCompleteWhenArrivalsAndBytesAreIn) {
  Mbarrier m;
  ASSERT_EQ(m.init(2), "");
  EXPECT_FALSE(m.parityComplete(0));
  EXPECT_TRUE(m.parityComplete(1)); // the phase before phase 0
  uint64_t state = 99;
  ASSERT_EQ(m.arrive(1, state), "");
  EXPECT_EQ(state, 0u);
  EXPECT_FALSE(m.parityComplete(0));
  ASSERT_EQ(m.arrive(1, state), "");
  EXPECT_TRUE(m.parityComplete(0));
  EXPECT_TRUE(m.stateComplete(0));
  EXPECT_EQ(m.currentPhase(), 1u);
  EXPECT_EQ(m.pendingArrivals(), 2u);

  // Phase 1 with transaction bytes: the arrivals alone do not complete it.
  ASSERT_EQ(m.expectTx(8192), "");
  ASSERT_EQ(m.arrive(2, state), "");
  EXPECT_EQ(state, 1u);
  EXPECT_FALSE(m.parityComplete(1));
  ASSERT_EQ(m.completeTx(4096), "");
  EXPECT_FALSE(m.parityComplete(1));
  ASSERT_EQ(m.completeTx(4096), "");
  EXPECT_TRUE(m.parityComplete(1));
  EXPECT_FALSE(m.parityComplete(0)); // phase 2 has parity 0

  // Bytes that land before they are expected: the count goes negative and
  // the phase waits for both.
  ASSERT_EQ(m.completeTx(1024), "");
  EXPECT_EQ(m.txCount(), -1024);
  ASSERT_EQ(m.arrive(1, state), "");
  ASSERT_EQ(m.expectTx(1024), "");
  EXPECT_FALSE(m.parityComplete(0));
  ASSERT_EQ(m.arrive(1, state), "");
  EXPECT_TRUE(m.parityComplete(0));
}

TEST(MbarrierTest, ReportsWhatTheHardwareLeavesUndefined) {
  Mbarrier m;
  EXPECT_NE(m.init(0).find("not between 1 and 2^20 - 1"), std::string::npos);
  EXPECT_NE(m.init(1 << 20).find("not between"), std::string::npos);
  ASSERT_EQ(m.init(1), "");
  uint64_t state;
  ASSERT_EQ(m.expectTx(16), "");
  ASSERT_EQ(m.arrive(1, state), "");
  // The phase waits for its bytes; one more arrival is not expected.
  std::string why = m.arrive(1, state);
  EXPECT_NE(why.find("more arrivals than the phase expects"), std::string::npos)
      << why;
  EXPECT_NE(m.expectTx(Mbarrier::kMaxCount).find("beyond"), std::string::npos);
  EXPECT_NE(m.describe().find("0 of 1 arrivals and 16 transaction bytes"),
            std::string::npos)
      << m.describe();
}

} // namespace
