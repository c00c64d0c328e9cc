/*===- main.c - A bundled attention kernel through flashc's C API ---------===*\
|*                                                                            *|
|* Uses flashc_runtime.h and nothing else of flashc: opens the bundle named  *|
|* on the command line, runs a causal grouped-query attention (f16, D = 64,  *|
|* 8 query heads over 2 KV heads) in the PTX simulator on random inputs and  *|
|* compares every output element with a float64 reference computed here.     *|
|* Exits 0 when all are within 4e-3 (about 4 f16 ulps at 1), 1 otherwise.    *|
|* FLASHC_EXAMPLE_SEED repeats a run's inputs (the seed is printed).         *|
|*                                                                            *|
|* Usage: runtime-c-api BUNDLE_DIR                                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "flashc/Runtime/flashc_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { B = 1, HQ = 8, HKV = 2, NQ = 24, NK = 40, D = 64 };

/* f32 -> IEEE binary16, rounding to nearest even (normal inputs of modest
 * size, as here). */
static uint16_t floatToHalf(float value) {
  uint32_t x;
  memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0)
    return (uint16_t)sign; /* flushed: |value| < 2^-14 */
  uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    ++h;
  return (uint16_t)(sign | h);
}

/* IEEE binary16 -> double (exact). */
static double halfToDouble(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0x1f ? (mant ? NAN : INFINITY)
             : exp == 0  ? ldexp((double)mant, -24)
                         : ldexp((double)(mant | 0x400), exp - 25);
  return (h >> 15) ? -v : v;
}

static uint64_t rngState;

/* A standard normal value (splitmix64, Box-Muller). */
static double normal(void) {
  double u[2];
  for (int i = 0; i < 2; ++i) {
    uint64_t z = (rngState += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    u[i] = (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
  }
  return sqrt(-2.0 * log(u[0] + 1e-300)) * cos(6.283185307179586 * u[1]);
}

/* A dense [B, H, N, D]-ordered tensor. */
static flashc_tensor tensor(uint16_t *data, int64_t heads, int64_t seq) {
  flashc_tensor t = {.data = data,
                     .dtype = FLASHC_F16,
                     .rank = 4,
                     .sizes = {B, heads, seq, D},
                     .strides = {heads * seq * D, seq * D, D, 1}};
  return t;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s BUNDLE_DIR\n", argv[0]);
    return 2;
  }
  printf("runtime-c-api: flashc runtime %s\n", flashc_runtime_version());
  flashc_bundle *bundle = NULL;
  if (flashc_bundle_open(argv[1], &bundle) != FLASHC_OK) {
    fprintf(stderr, "runtime-c-api: %s\n", flashc_last_error());
    return 1;
  }

  rngState = (uint64_t)time(NULL);
  if (getenv("FLASHC_EXAMPLE_SEED"))
    rngState = strtoull(getenv("FLASHC_EXAMPLE_SEED"), NULL, 10);
  printf("runtime-c-api: seed %llu\n", (unsigned long long)rngState);
  static uint16_t q[B * HQ * NQ * D], k[B * HKV * NK * D], v[B * HKV * NK * D],
      out[B * HQ * NQ * D];
  for (size_t i = 0; i < sizeof(q) / 2; ++i)
    q[i] = floatToHalf((float)normal());
  for (size_t i = 0; i < sizeof(k) / 2; ++i) {
    k[i] = floatToHalf((float)normal());
    v[i] = floatToHalf((float)normal());
  }
  for (size_t i = 0; i < sizeof(out) / 2; ++i)
    out[i] = 0x7e00; /* NaN: an element not written shows */

  flashc_tensor tq = tensor(q, HQ, NQ), tk = tensor(k, HKV, NK),
                tv = tensor(v, HKV, NK), tout = tensor(out, HQ, NQ);
  if (flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BHND, &tq,
                       &tk, &tv, &tout, NULL, FLASHC_MASK_CAUSAL,
                       /*scale=*/0.0, /*stream=*/NULL) != FLASHC_OK) {
    fprintf(stderr, "runtime-c-api: %s\n", flashc_last_error());
    flashc_bundle_close(bundle);
    return 1;
  }
  flashc_bundle_close(bundle);

  /* softmax(Q K^T / sqrt(D)) V in float64; query i sees key j when
   * j <= i + NK - NQ. */
  double worst = 0;
  int bad = 0;
  for (int h = 0; h < HQ; ++h)
    for (int i = 0; i < NQ; ++i) {
      const uint16_t *qr = q + (h * NQ + i) * D;
      int hk = h / (HQ / HKV), visible = i + NK - NQ + 1;
      double s[NK], row[D] = {0}, max = -INFINITY, sum = 0;
      for (int j = 0; j < visible; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += halfToDouble(qr[d]) * halfToDouble(k[(hk * NK + j) * D + d]);
        s[j] = dot / sqrt((double)D);
        max = s[j] > max ? s[j] : max;
      }
      for (int j = 0; j < visible; ++j) {
        double p = exp(s[j] - max);
        sum += p;
        for (int d = 0; d < D; ++d)
          row[d] += p * halfToDouble(v[(hk * NK + j) * D + d]);
      }
      for (int d = 0; d < D; ++d) {
        double got = halfToDouble(out[(h * NQ + i) * D + d]);
        double err = fabs(got - row[d] / sum);
        if (!(err <= 4e-3) && bad++ < 5)
          fprintf(stderr,
                  "runtime-c-api: out[0, %d, %d, %d] = %g, expected %g\n", h, i,
                  d, got, row[d] / sum);
        if (!(err <= worst))
          worst = err;
      }
    }
  printf("runtime-c-api: %d outputs, largest error %.3g, %d above 4e-3\n",
         B * HQ * NQ * D, worst, bad);
  return bad == 0 ? 0 : 1;
}
