//===- SimTestKernels.cu - nvcc-compiled kernels for the PTX simulator ----===//
//
// A second, independent producer of PTX for the simulator's tests: nvcc
// compiles these to PTX at build time, the tests run them in the simulator
// against CPU references, and scripts/gpu-check.sh runs the same kernels on
// a real GPU to compare. They use inline PTX for mma.sync, ldmatrix,
// cp.async and shfl.sync, plus ordinary integer and float code.
//
// Every kernel is extern "C" so that its PTX entry name is its C name.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

#define DEVICE __device__ __forceinline__

//===----------------------------------------------------------------------===//
// Ordinary integer and float code
//===----------------------------------------------------------------------===//

extern "C" __global__ void saxpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

/// Tree reduction in shared memory, one partial sum per CTA.
extern "C" __global__ void blockReduce(const float *x, float *out, int n) {
  __shared__ float buf[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = buf[0];
}

/// Integer operations with exact results: out[16 * i + j] is the j-th
/// function of (a[i], b[i]).
extern "C" __global__ void integerOps(const uint32_t *a, const uint32_t *b,
                                      uint32_t *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  uint32_t x = a[i], y = b[i];
  int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
  uint32_t *o = out + 16 * i;
  o[0] = x * y + (x >> 3);
  o[1] = __umulhi(x, y);
  o[2] = static_cast<uint32_t>(__mulhi(sx, sy));
  o[3] = y ? x / y : 0;
  o[4] = sy ? static_cast<uint32_t>(sx % sy) : 0;
  o[5] = __popc(x) + 64u * __clz(y);
  o[6] = __brev(x);
  o[7] = __byte_perm(x, y, 0x5140);
  o[8] = static_cast<uint32_t>(sx >> (y & 31));
  o[9] = x << (y & 31);
  o[10] = min(x, y) ^ static_cast<uint32_t>(max(sx, sy));
  uint64_t wide = static_cast<uint64_t>(x) * y;
  o[11] = static_cast<uint32_t>(wide >> 32) ^ static_cast<uint32_t>(wide);
  uint32_t field;
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(field) : "r"(x), "r"(y & 15), "r"(9u));
  o[12] = field;
  int32_t sfield;
  asm("bfe.s32 %0, %1, %2, %3;" : "=r"(sfield) : "r"(sx), "r"(y & 15), "r"(7u));
  o[13] = static_cast<uint32_t>(sfield);
  uint32_t ins;
  asm("bfi.b32 %0, %1, %2, %3, %4;"
      : "=r"(ins)
      : "r"(x), "r"(y), "r"(x & 15), "r"(6u));
  o[14] = ins;
  o[15] = static_cast<uint32_t>(static_cast<int16_t>(x)) + (sx < sy ? 1u : 0u);
}

/// Float conversions and rounding: out[8 * i + j].
extern "C" __global__ void floatOps(const float *a, const float *b,
                                    uint32_t *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float x = a[i], y = b[i];
  uint32_t *o = out + 8 * i;
  o[0] = __float_as_uint(__fmaf_rn(x, y, x));
  o[1] = static_cast<uint32_t>(__float2int_rn(x * 100.f));
  o[2] = static_cast<uint32_t>(__float2int_rz(y * 100.f));
  o[3] = static_cast<uint32_t>(__float2int_rd(x * 10.f)) ^
         static_cast<uint32_t>(__float2int_ru(y * 10.f));
  uint32_t h2;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h2) : "f"(x), "f"(y));
  o[4] = h2;
  uint32_t b2;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(b2) : "f"(x), "f"(y));
  o[5] = b2;
  o[6] = __float_as_uint(fmaxf(x, y) - fminf(x, y));
  o[7] = __float_as_uint(x / y);
}

/// Transcendental approximations, compared with tolerances.
extern "C" __global__ void approxOps(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float x = a[i];
  float e, l, r, s;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x));
  asm("lg2.approx.f32 %0, %1;" : "=f"(l) : "f"(fabsf(x) + 1.f));
  asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x + 100.f));
  asm("sqrt.approx.f32 %0, %1;" : "=f"(s) : "f"(fabsf(x)));
  out[4 * i + 0] = e;
  out[4 * i + 1] = l;
  out[4 * i + 2] = r;
  out[4 * i + 3] = s;
}

//===----------------------------------------------------------------------===//
// Warp-collective operations
//===----------------------------------------------------------------------===//

/// out[32 * m + lane]: m = 0 xor-butterfly sum, 1 shfl.up by 1, 2 shfl.down
/// by 3, 3 shfl.idx from lane (lane * 7) % 32, 4 ballot of odd values,
/// 5 shfl.xor within segments of 8 lanes.
extern "C" __global__ void warpShuffles(const int *x, int *out) {
  int lane = threadIdx.x & 31;
  int v = x[threadIdx.x];
  int sum = v;
  for (int o = 16; o > 0; o >>= 1)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  int base = 192 * (threadIdx.x / 32);
  out[base + 0 * 32 + lane] = sum;
  out[base + 1 * 32 + lane] = __shfl_up_sync(0xffffffffu, v, 1);
  out[base + 2 * 32 + lane] = __shfl_down_sync(0xffffffffu, v, 3);
  out[base + 3 * 32 + lane] = __shfl_sync(0xffffffffu, v, (lane * 7) % 32);
  out[base + 4 * 32 + lane] =
      static_cast<int>(__ballot_sync(0xffffffffu, v & 1));
  out[base + 5 * 32 + lane] = __shfl_xor_sync(0xffffffffu, v, 5, 8);
}

//===----------------------------------------------------------------------===//
// Tensor-core fragments
//===----------------------------------------------------------------------===//

/// One warp: D[16x8] = A[16x16] B[16x8] + C, with fragments read straight
/// from global memory by the PTX ISA's layout for mma.m16n8k16 (A row-major
/// 16x16, B given as B^T, i.e. [8][16] row-major, C and D row-major 16x8).
/// `bf16` selects the element type of A and B (both as 16-bit bits).
template <bool BF16>
DEVICE void mmaTile(const uint16_t *A, const uint16_t *Bt, const float *C,
                    float *D) {
  int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  auto pack = [](uint16_t lo, uint16_t hi) {
    return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
  };
  uint32_t a[4], b[2];
  a[0] = pack(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
  a[1] = pack(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
  a[2] = pack(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
  a[3] = pack(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
  b[0] = pack(Bt[g * 16 + 2 * t], Bt[g * 16 + 2 * t + 1]);
  b[1] = pack(Bt[g * 16 + 2 * t + 8], Bt[g * 16 + 2 * t + 9]);
  float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                C[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

extern "C" __global__ void mmaF16(const uint16_t *A, const uint16_t *Bt,
                                  const float *C, float *D) {
  mmaTile<false>(A, Bt, C, D);
}
extern "C" __global__ void mmaBF16(const uint16_t *A, const uint16_t *Bt,
                                   const float *C, float *D) {
  mmaTile<true>(A, Bt, C, D);
}

/// One warp: m16n8k8 f16, A 16x8 row-major, Bt [8][8] (B transposed).
extern "C" __global__ void mmaF16K8(const uint16_t *A, const uint16_t *Bt,
                                    const float *C, float *D) {
  int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  auto pack = [](uint16_t lo, uint16_t hi) {
    return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
  };
  uint32_t a0 = pack(A[g * 8 + 2 * t], A[g * 8 + 2 * t + 1]);
  uint32_t a1 = pack(A[(g + 8) * 8 + 2 * t], A[(g + 8) * 8 + 2 * t + 1]);
  uint32_t b0 = pack(Bt[g * 8 + 2 * t], Bt[g * 8 + 2 * t + 1]);
  float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                C[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a0), "r"(a1), "r"(b0), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                 "f"(c[3]));
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

/// One warp: copies a 32x8 b16 matrix (4 stacked 8x8 matrices) into shared
/// memory, then ldmatrix x1, x2 and x4, plain and transposed, each lane
/// writing the registers it received: out[(variant * 32 + lane) * 4 + i].
extern "C" __global__ void ldmatrixLayouts(const uint16_t *m, uint32_t *out) {
  __shared__ __align__(16) uint16_t tile[32 * 8];
  int lane = threadIdx.x;
  for (int i = lane; i < 32 * 8; i += 32)
    tile[i] = m[i];
  __syncthreads();
  uint32_t addr = static_cast<uint32_t>(
      __cvta_generic_to_shared(&tile[(lane % 32) * 8]));
  uint32_t r[4];
  int variant = 0;
  auto store = [&](int count) {
    for (int i = 0; i < 4; ++i)
      out[(variant * 32 + lane) * 4 + i] = i < count ? r[i] : 0xdeadbeefu;
    ++variant;
  };
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
               : "=r"(r[0])
               : "r"(addr));
  store(1);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
  store(2);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
  store(4);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
               : "=r"(r[0])
               : "r"(addr));
  store(1);
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
      : "=r"(r[0]), "=r"(r[1])
      : "r"(addr));
  store(2);
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
  store(4);
}

DEVICE void cpAsync16(void *smem, const void *gmem, uint32_t srcBytes) {
  uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s),
               "l"(gmem), "r"(srcBytes));
}
DEVICE void cpAsync4(void *smem, const void *gmem) {
  uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(gmem));
}
DEVICE void cpAsyncCommit() { asm volatile("cp.async.commit_group;"); }
template <int N> DEVICE void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/// Copies n floats (n a multiple of 4) through shared memory with 16-byte
/// cp.async, zero-filling the part of the last chunk past `valid` floats,
/// and 4-byte cp.async for the first 32 floats again into a second buffer.
extern "C" __global__ void cpAsyncCopy(const float *in, float *out,
                                       float *out4, int n, int valid) {
  __shared__ __align__(16) float buf[1024];
  __shared__ __align__(16) float buf4[32];
  for (int c = threadIdx.x; c * 4 < n; c += blockDim.x) {
    int remaining = valid - c * 4;
    uint32_t bytes = remaining >= 4 ? 16u : remaining > 0 ? 4u * remaining : 0u;
    cpAsync16(&buf[c * 4], in + (bytes ? c * 4 : 0), bytes);
  }
  cpAsyncCommit();
  if (threadIdx.x < 32)
    cpAsync4(&buf4[threadIdx.x], in + threadIdx.x);
  cpAsyncCommit();
  cpAsyncWait<0>();
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    out[i] = buf[i];
  if (threadIdx.x < 32)
    out4[threadIdx.x] = buf4[threadIdx.x];
}

/// A small tensor-core GEMM in the shape of flashc's kernels: C[M x N] =
/// A[M x K] B[K x N] (f16, row-major, f32 out) with one 64x64 tile per CTA
/// of 4 warps (each 16 rows), K in steps of 32 double-buffered with
/// cp.async, A fragments by ldmatrix.x4, B fragments by ldmatrix.x2.trans.
/// M, N multiples of 64 and K a multiple of 32.
extern "C" __global__ void gemmF16(const uint16_t *A, const uint16_t *B,
                                   float *C, int M, int N, int K) {
  __shared__ __align__(16) uint16_t sa[2][64 * 32];
  __shared__ __align__(16) uint16_t sb[2][32 * 64];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  auto load = [&](int stage, int k0) {
    // 64x32 of A and 32x64 of B: 256 + 256 chunks of 8 halves.
    for (int c = threadIdx.x; c < 256; c += blockDim.x) {
      int r = c / 4, col = (c % 4) * 8;
      cpAsync16(&sa[stage][r * 32 + col], A + (m0 + r) * K + k0 + col, 16);
      int rb = c / 8, colb = (c % 8) * 8;
      cpAsync16(&sb[stage][rb * 64 + colb], B + (k0 + rb) * N + n0 + colb, 16);
    }
    cpAsyncCommit();
  };
  float acc[8][4] = {};
  load(0, 0);
  for (int k0 = 0, stage = 0; k0 < K; k0 += 32, stage ^= 1) {
    if (k0 + 32 < K) {
      load(stage ^ 1, k0 + 32);
      cpAsyncWait<1>();
    } else {
      cpAsyncWait<0>();
    }
    __syncthreads();
    for (int kk = 0; kk < 32; kk += 16) {
      uint32_t a[4];
      uint32_t aAddr = static_cast<uint32_t>(__cvta_generic_to_shared(
          &sa[stage][(warp * 16 + lane % 16) * 32 + kk + (lane / 16) * 8]));
      asm volatile(
          "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
          : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
          : "r"(aAddr));
      for (int nt = 0; nt < 8; ++nt) {
        uint32_t b[2];
        uint32_t bAddr = static_cast<uint32_t>(__cvta_generic_to_shared(
            &sb[stage][(kk + lane % 16) * 64 + nt * 8]));
        asm volatile(
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
            : "=r"(b[0]), "=r"(b[1])
            : "r"(bAddr));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(acc[nt][0]), "+f"(acc[nt][1]), "+f"(acc[nt][2]),
              "+f"(acc[nt][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
              "r"(b[1]));
      }
    }
    __syncthreads();
  }
  int g = lane / 4, t = lane % 4;
  for (int nt = 0; nt < 8; ++nt) {
    int row = m0 + warp * 16 + g, col = n0 + nt * 8 + 2 * t;
    C[row * N + col] = acc[nt][0];
    C[row * N + col + 1] = acc[nt][1];
    C[(row + 8) * N + col] = acc[nt][2];
    C[(row + 8) * N + col + 1] = acc[nt][3];
  }
}

//===----------------------------------------------------------------------===//
// Planted defects: each must be reported by the simulator
//===----------------------------------------------------------------------===//

/// Stores one element past the end of `out` (thread n writes out[n]).
extern "C" __global__ void defectOutOfBounds(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n)
    out[i] = 1.f;
}

/// Reads a neighbour's shared-memory slot with no barrier after the write.
extern "C" __global__ void defectMissingBarrier(const float *x, float *out) {
  __shared__ float buf[128];
  buf[threadIdx.x] = x[threadIdx.x];
  // __syncthreads() missing here.
  out[threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}

/// Reads a cp.async destination before the wait that retires its group.
extern "C" __global__ void defectEarlyCpAsyncRead(const float *in,
                                                  float *out) {
  __shared__ __align__(16) float buf[128];
  cpAsync16(&buf[threadIdx.x * 4], in + threadIdx.x * 4, 16);
  cpAsyncCommit();
  out[threadIdx.x] = buf[threadIdx.x * 4];
  cpAsyncWait<0>();
}

/// Only the first warp reaches the barrier; the others exit.
extern "C" __global__ void defectDivergentBarrier(float *out) {
  if (threadIdx.x < 32) {
    __syncthreads();
    out[threadIdx.x] = 1.f;
  }
}

/// A 16-byte vector load from an address that is only 4-byte aligned.
extern "C" __global__ void defectMisalignedVector(const float *in, float *out) {
  const float4 *p = reinterpret_cast<const float4 *>(in + 1);
  float4 v = p[threadIdx.x];
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}
