//===- SimTestKernelsSm90.cu - nvcc-compiled Hopper kernels for the simulator
//-===//
//
// The sm_90a counterpart of SimTestKernels.cu: nvcc compiles these to PTX
// for sm_90a at build time, the simulator's tests run them against CPU
// references, and scripts/gpu-check.sh runs them on a Hopper GPU to
// compare. They use inline PTX for what Hopper added: mbarriers with
// transaction counts, TMA tensor loads (cp.async.bulk.tensor), elect.sync,
// named barriers, fence.proxy.async and setmaxnreg.
//
// Every kernel is extern "C" so that its PTX entry name is its C name.
//
//===----------------------------------------------------------------------===//

#include <cuda_fp16.h>

#include <cstdint>

#define DEVICE __device__ __forceinline__

/// A CUtensorMap as a kernel parameter (cuda.h's type, without cuda.h).
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

DEVICE uint32_t smem(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

DEVICE void mbarrierInit(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)),
               "r"(count)
               : "memory");
}

DEVICE void mbarrierArriveExpectTx(uint64_t *bar, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)),
      "r"(bytes)
      : "memory");
}

DEVICE void mbarrierArrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar))
               : "memory");
}

DEVICE void mbarrierWait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "wait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait;\n"
               "}\n" ::"r"(smem(bar)),
               "r"(parity)
               : "memory");
}

DEVICE void tmaLoad2D(void *dst, const TensorMap *map, int x, int y,
                      uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
      ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem(dst)),
      "l"(map), "r"(x), "r"(y), "r"(smem(bar))
      : "memory");
}

DEVICE bool electOne() {
  uint32_t pred = 0;
  asm volatile("{\n"
               ".reg .pred p;\n"
               "elect.sync _|p, 0xffffffff;\n"
               "selp.u32 %0, 1, 0, p;\n"
               "}\n"
               : "=r"(pred));
  return pred != 0;
}

//===----------------------------------------------------------------------===//
// A producer/consumer pipeline over TMA loads
//===----------------------------------------------------------------------===//

/// Sums the columns of a rows x 64 f16 tensor that `map` describes (boxes
/// of 64 x 16, no swizzle, or 128-byte swizzle when `swizzled`), streamed
/// through two shared stages. Warpgroup 0 produces: it gives up registers
/// (setmaxnreg), and one elected lane of its first warp issues the TMA
/// loads. Warpgroup 1 consumes: consumer thread t (warp c = t / 32, lane l)
/// sums column 16 c + l % 16 over the rows r of every box with
/// r % 2 == l / 16, and each consumer warp releases the stage. out[t] is
/// that sum over rows [0, blocks * 16) (rows past the tensor read as zero).
///
/// `defect` plants one fault of the stage protocol (0: none): 1, the
/// producer does not announce the bytes (no expect_tx); 2, consumers wait
/// on the wrong parity; 3, consumers read before waiting; 4, the producer
/// refills a stage without waiting for its release.
extern "C" __global__ void __launch_bounds__(256)
    tmaPipeline(const __grid_constant__ TensorMap map, float *out, int blocks,
                int swizzled, int defect) {
  constexpr int kStages = 2, kRows = 16, kCols = 64;
  constexpr uint32_t kStageBytes = kRows * kCols * 2;
  __shared__ alignas(1024) uint16_t stage[kStages][kRows * kCols];
  __shared__ alignas(8) uint64_t full[kStages], empty[kStages];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrierInit(&full[s], 1);
      mbarrierInit(&empty[s], 4); // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp < 4) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (warp == 0 && electOne()) {
      for (int b = 0; b < blocks; ++b) {
        int s = b % kStages;
        uint32_t phase = (b / kStages) & 1;
        if (b >= kStages && defect != 4)
          mbarrierWait(&empty[s], phase ^ 1);
        if (defect == 1)
          mbarrierArrive(&full[s]);
        else
          mbarrierArriveExpectTx(&full[s], kStageBytes);
        tmaLoad2D(stage[s], &map, 0, b * kRows, &full[s]);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  int consumer = threadIdx.x - 128;
  int col = 16 * (warp - 4) + lane % 16;
  float sum = 0.f;
  for (int b = 0; b < blocks; ++b) {
    int s = b % kStages;
    uint32_t phase = (b / kStages) & 1;
    if (defect != 3)
      mbarrierWait(&full[s], defect == 2 ? phase ^ 1 : phase);
    for (int r = lane / 16; r < kRows; r += 2) {
      // Element (r, col) of the box: byte 128 r + 2 col, whose 16-byte
      // chunk moves under the 128-byte swizzle.
      uint32_t byte = 128 * r + 2 * col;
      if (swizzled)
        byte ^= ((byte >> 7) & 7) << 4;
      __half h = *reinterpret_cast<const __half *>(&stage[s][byte / 2]);
      sum += __half2float(h);
    }
    __syncwarp();
    if (lane == 0)
      mbarrierArrive(&empty[s]);
  }
  out[consumer] = sum;
  // The consumers meet at a named barrier (the producers have left).
  asm volatile("bar.sync 1, 128;" ::: "memory");
}

//===----------------------------------------------------------------------===//
// Warpgroup MMA over TMA-loaded tiles
//===----------------------------------------------------------------------===//

/// A wgmma shared-memory descriptor: start address, LBO and SBO in bytes,
/// the `swizzle`-byte swizzle (128, 64 or 32: mode 1, 2 or 3 in bits
/// 62-63).
DEVICE uint64_t wgmmaDesc(const void *p, uint32_t lbo, uint32_t sbo,
                          int swizzle = 128) {
  uint64_t mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3;
  uint64_t a = smem(p);
  return ((a >> 4) & 0x3fff) | (uint64_t((lbo >> 4) & 0x3fff) << 16) |
         (uint64_t((sbo >> 4) & 0x3fff) << 32) | (mode << 62);
}

#define WGMMA_D32                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31}"
#define WGMMA_D32_OPERANDS(d)                                                  \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),      \
      "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]),             \
      "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),         \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),         \
      "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),         \
      "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),         \
      "+f"(d[31])

/// wgmma m64n64k16 f32 += f16 * f16 with A and B from descriptors; B
/// K-major (transB 0) or N-major (1).
template <int TransB>
DEVICE void wgmmaSS(float (&d)[32], uint64_t a, uint64_t b, int scaleD) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " WGMMA_D32
               ", %32, %33, p, 1, 1, 0, %35;\n}\n"
               : WGMMA_D32_OPERANDS(d)
               : "l"(a), "l"(b), "r"(scaleD), "n"(TransB));
}

/// The same with A from registers (the m16n8k16 A fragment of the warp's
/// 16 rows).
DEVICE void wgmmaRS(float (&d)[32], const uint32_t (&a)[4], uint64_t b,
                    int scaleD) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " WGMMA_D32
               ", {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
               : WGMMA_D32_OPERANDS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),
                 "r"(scaleD));
}

/// Thread 0 initialises `bar` for one arrival and fences the init; the CTA
/// meets at a barrier.
DEVICE void initOneArrivalBarrier(uint64_t *bar) {
  if (threadIdx.x == 0) {
    mbarrierInit(bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
}

/// A warpgroup's m64n64 f32 accumulator into `out` (64 x 64, row-major):
/// thread register i is row 16 w + g + 8 ((i / 2) % 2), column
/// 8 (i / 4) + 2 t + i % 2 (warp w, lane 4 g + t).
DEVICE void storeAccumulator(const float (&d)[32], float *out) {
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    int row = 16 * warp + g + 8 * ((i / 2) % 2);
    int col = 8 * (i / 4) + 2 * t + i % 2;
    out[row * 64 + col] = d[i];
  }
}

/// out (64 x 64 f32, row-major) = A (64 x 64 f16) B (64 x 64 f16) by one
/// warpgroup: TMA loads A (row-major, [m][k]) and B in the `swizzle`-byte
/// swizzle (128, 64 or 32): each 128-byte row of A and B is 128 / swizzle
/// panels of 64 rows, one box each (boxes of swizzle / 2 columns x 64
/// rows, maps of the same swizzle). Then four wgmma k-steps. `mode`: 0, B
/// given as [n][k] (K-major); 1, B given as [k][n] (N-major, a transposed
/// wgmma operand); 2, like 0 with A from registers (read from `a`,
/// row-major); 3, like 0 but the accumulator is read before
/// wgmma.wait_group (a planted defect).
extern "C" __global__ void __launch_bounds__(128)
    wgmmaGemm(const __grid_constant__ TensorMap mapA,
              const __grid_constant__ TensorMap mapB, const __half *a,
              float *out, int mode, int swizzle) {
  __shared__ alignas(1024) uint16_t sA[64 * 64];
  __shared__ alignas(1024) uint16_t sB[64 * 64];
  __shared__ alignas(8) uint64_t bar;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = lane / 4, t = lane % 4;
  int panels = 128 / swizzle, panelBytes = 64 * swizzle;
  initOneArrivalBarrier(&bar);
  if (threadIdx.x == 0) {
    mbarrierArriveExpectTx(&bar, 2 * 64 * 64 * 2);
    for (int p = 0; p < panels; ++p) {
      tmaLoad2D(reinterpret_cast<char *>(sA) + p * panelBytes, &mapA,
                p * swizzle / 2, 0, &bar);
      tmaLoad2D(reinterpret_cast<char *>(sB) + p * panelBytes, &mapB,
                p * swizzle / 2, 0, &bar);
    }
  }
  mbarrierWait(&bar, 0);

  float d[32];
  for (int i = 0; i < 32; ++i)
    d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int ks = 0; ks < 4; ++ks) {
    // K-major tiles: rows of `swizzle` bytes, 8-row atoms 8 x swizzle
    // bytes apart; a k-step is 32 bytes along a panel's rows, whole panels
    // beyond. N-major B: rows of `swizzle` bytes hold n, one per k; a
    // k-step is 16 rows, the panels along n the leading offset apart.
    int kBytes = 32 * ks;
    int kMajorOffset = kBytes / swizzle * panelBytes + kBytes % swizzle;
    uint64_t descA =
        wgmmaDesc(reinterpret_cast<const char *>(sA) + kMajorOffset, 16,
                  8 * swizzle, swizzle);
    if (mode == 1) {
      uint64_t descB =
          wgmmaDesc(reinterpret_cast<const char *>(sB) + 16 * swizzle * ks,
                    panelBytes, 8 * swizzle, swizzle);
      wgmmaSS<1>(d, descA, descB, ks > 0);
    } else {
      uint64_t descB =
          wgmmaDesc(reinterpret_cast<const char *>(sB) + kMajorOffset, 16,
                    8 * swizzle, swizzle);
      if (mode == 2) {
        uint32_t frag[4];
        for (int r = 0; r < 4; ++r) {
          int row = 16 * warp + g + 8 * (r & 1);
          int col = 16 * ks + 2 * t + 8 * (r >> 1);
          __half lo = a[row * 64 + col], hi = a[row * 64 + col + 1];
          frag[r] = uint32_t(__half_as_ushort(lo)) |
                    (uint32_t(__half_as_ushort(hi)) << 16);
        }
        wgmmaRS(d, frag, descB, ks > 0);
      } else {
        wgmmaSS<0>(d, descA, descB, ks > 0);
      }
    }
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  if (mode == 3)
    out[threadIdx.x] = d[0];
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  storeAccumulator(d, out);
}

//===----------------------------------------------------------------------===//
// A TMA store from a swizzled shared tile
//===----------------------------------------------------------------------===//

/// The CTA writes a 16 x 64 f16 tile, element (r, c) = (64 r + c) % 2048,
/// into shared memory in panels of `swizzle` (128, 64 or 32) bytes a row
/// (128 / swizzle panels of swizzle / 2 columns, each swizzled), and
/// thread 0 stores it with one TMA store per panel as rows [8, 24) of the
/// rows x 64 tensor `map` describes (boxes of swizzle / 2 columns x 16
/// rows in the same swizzle; rows past the tensor are skipped). `defect`:
/// 1, no fence.proxy.async between the plain writes and the store; 2,
/// thread 0 overwrites the tile before cp.async.bulk.wait_group.read
/// retires the store.
extern "C" __global__ void __launch_bounds__(128)
    tmaStore(const __grid_constant__ TensorMap map, int swizzle, int defect) {
  __shared__ alignas(1024) uint16_t tile[16 * 64];
  int cols = swizzle / 2, panelBytes = 16 * swizzle;
  for (int i = threadIdx.x; i < 16 * 64; i += blockDim.x) {
    int r = i / 64, c = i % 64;
    uint32_t byte = (c / cols) * panelBytes + swizzle * r + 2 * (c % cols);
    // The 16-byte chunk moves by the address's bits 7 and up, as many as
    // the swizzle has chunks (bits 4-6, 4-5 or 4).
    byte ^= ((byte >> 7) & (swizzle / 16 - 1)) << 4;
    tile[byte / 2] = __half_as_ushort(__int2half_rn((64 * r + c) % 2048));
  }
  if (defect != 1)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int p = 0; p < 64 / cols; ++p)
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
                   " [%0, {%1, %2}], [%3];" ::"l"(&map),
                   "r"(p * cols), "r"(8),
                   "r"(smem(reinterpret_cast<char *>(tile) + p * panelBytes))
                   : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (defect == 2)
      tile[0] = 0;
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

//===----------------------------------------------------------------------===//
// stmatrix
//===----------------------------------------------------------------------===//

/// One warp stores four 8 x 8 b16 matrices from registers (lane l's
/// register i is in[4 l + i]) with stmatrix.x4, plain (variant 0) and
/// .trans (variant 1): out[256 v + 8 r + c] is element c of tile row r
/// (matrix r / 8, whose rows are 16 bytes apart, row address from lane r).
extern "C" __global__ void stmatrixLayouts(const uint32_t *in, uint16_t *out) {
  __shared__ __align__(16) uint16_t tile[32 * 8];
  int lane = threadIdx.x;
  uint32_t r[4];
  for (int i = 0; i < 4; ++i)
    r[i] = in[4 * lane + i];
  uint32_t addr = smem(&tile[lane * 8]);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, "
               "%4};" ::"r"(addr),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
  __syncwarp();
  for (int i = lane; i < 256; i += 32)
    out[i] = tile[i];
  __syncwarp();
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, "
               "%2, %3, %4};" ::"r"(addr),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
  __syncwarp();
  for (int i = lane; i < 256; i += 32)
    out[256 + i] = tile[i];
}
