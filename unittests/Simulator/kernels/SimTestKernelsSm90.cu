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
