/*===- CAPITest.c - The runtime's C API, from C ---------------------------===*\
|*                                                                            *|
|* A C99 program that uses flashc_runtime.h and nothing else of flashc, as a  *|
|* user of libflashc_runtime.so would: it opens the bundle the build wrote    *|
|* for the runtime tests, runs attention in the PTX simulator on random f16   *|
|* inputs (a decode call with the log-sum-exp, a prefill call without) and    *|
|* compares with a float64 reference computed here, then checks the error     *|
|* codes and messages of bad calls. Exits 0 on success, 1 on any failure.     *|
|*                                                                            *|
|* Usage: FlashcCAPITest [BUNDLE_DIR [trap]]; FLASHC_TEST_SEED repeats a run. *|
|* With `trap` (and a small FLASHC_SIM_MAX_INSTRUCTIONS), only checks that a  *|
|* kernel the simulator stops is FLASHC_ERROR_LAUNCH.                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L
#include "DenseTensor.h"
#include "flashc/Runtime/flashc_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FLASHC_TEST_BUNDLE
#error "FLASHC_TEST_BUNDLE must name the bundle built for these tests"
#endif

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/*===----------------------------------------------------------------------===*/
/* f16 and random numbers                                                   */
/*===----------------------------------------------------------------------===*/

/* f32 -> IEEE binary16, rounding to nearest even (inputs here are normal
 * numbers of modest size, or zero). */
static uint16_t floatToHalf(float value) {
  uint32_t x;
  memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    /* Subnormal or zero. */
    if (exp < -10)
      return (uint16_t)sign;
    uint32_t m = mant | 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1)))
      ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    ++h;
  return (uint16_t)(sign | h);
}

/* IEEE binary16 -> double (exact). */
static double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexp((double)mant, -24);
  else
    v = ldexp((double)(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

static uint64_t rngState;

/* splitmix64 */
static uint64_t nextRandom(void) {
  uint64_t z = (rngState += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A standard normal value (Box-Muller). */
static double normal(void) {
  double u1 = ((double)(nextRandom() >> 11) + 1.0) / 9007199254740993.0;
  double u2 = (double)(nextRandom() >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/*===----------------------------------------------------------------------===*/
/* One attention call                                                       */
/*===----------------------------------------------------------------------===*/

enum { B = 1, HQ = 8, HKV = 2, D = 64 };

typedef struct {
  int64_t seqQ, seqKV;
  int mask, withLse; /* mask: a flashc_mask */
  double scale; /* 0: 1/sqrt(D) */
  uint16_t *q, *k, *v, *out;
  float *lse;
  flashc_tensor tq, tk, tv, tout, tlse;
} Call;

static void *alignedAlloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

static void fillRandom(uint16_t *data, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    data[i] = floatToHalf((float)normal());
}

static void initCall(Call *c, int64_t seqQ, int64_t seqKV, int mask,
                     int withLse) {
  memset(c, 0, sizeof(*c));
  c->seqQ = seqQ;
  c->seqKV = seqKV;
  c->mask = mask;
  c->withLse = withLse;
  int64_t qSizes[4] = {B, HQ, seqQ, D}, kSizes[4] = {B, HKV, seqKV, D};
  int64_t lseSizes[3] = {B, HQ, seqQ};
  c->q = alignedAlloc(B * HQ * seqQ * D * 2);
  c->k = alignedAlloc(B * HKV * seqKV * D * 2);
  c->v = alignedAlloc(B * HKV * seqKV * D * 2);
  c->out = alignedAlloc(B * HQ * seqQ * D * 2);
  c->lse = alignedAlloc(B * HQ * seqQ * 4);
  fillRandom(c->q, B * HQ * seqQ * D);
  fillRandom(c->k, B * HKV * seqKV * D);
  fillRandom(c->v, B * HKV * seqKV * D);
  /* NaN and a sentinel: an element the kernel does not write is seen. */
  for (int64_t i = 0; i < B * HQ * seqQ * D; ++i)
    c->out[i] = 0x7e00;
  for (int64_t i = 0; i < B * HQ * seqQ; ++i)
    c->lse[i] = 12345.0f;
  c->tq = dense(c->q, FLASHC_F16, 4, qSizes);
  c->tk = dense(c->k, FLASHC_F16, 4, kSizes);
  c->tv = dense(c->v, FLASHC_F16, 4, kSizes);
  c->tout = dense(c->out, FLASHC_F16, 4, qSizes);
  c->tlse = dense(c->lse, FLASHC_F32, 3, lseSizes);
}

static void freeCall(Call *c) {
  free(c->q);
  free(c->k);
  free(c->v);
  free(c->out);
  free(c->lse);
}

static flashc_status run(flashc_bundle *bundle, Call *c) {
  return flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BHND,
                          &c->tq, &c->tk, &c->tv, &c->tout,
                          c->withLse ? &c->tlse : NULL, c->mask, c->scale,
                          NULL);
}

/* [B, H, N, D] -> [B, N, H, D] (`toBNHD`) or back, for `heads` heads of
 * `seq` tokens of D f16 elements. */
static void transposeHN(const uint16_t *from, uint16_t *to, int64_t heads,
                        int64_t seq, int toBNHD) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t n = 0; n < seq; ++n) {
        int64_t bhnd = ((b * heads + h) * seq + n) * D;
        int64_t bnhd = ((b * seq + n) * heads + h) * D;
        memcpy(to + (toBNHD ? bnhd : bhnd), from + (toBNHD ? bhnd : bnhd),
               D * 2);
      }
}

/* Compares every row with softmax(Q K^T / sqrt(D)) V in float64; the causal
 * mask shows key j to query i when j <= i + Nk - Nq. Tolerances: 4e-3
 * absolute on the output, 1e-3 relative on the log-sum-exp. */
static void checkCall(const char *name, const Call *c) {
  double worst = 0, worstLse = 0;
  int bad = 0;
  double row[D];
  double *s = malloc(sizeof(double) * (size_t)c->seqKV);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < HQ; ++h)
      for (int64_t i = 0; i < c->seqQ; ++i) {
        int64_t hk = h / (HQ / HKV);
        int64_t visible = c->seqKV;
        if (c->mask == FLASHC_MASK_CAUSAL) {
          visible = i + c->seqKV - c->seqQ + 1;
          visible = visible < 0 ? 0 : visible > c->seqKV ? c->seqKV : visible;
        }
        const uint16_t *qr = c->q + ((b * HQ + h) * c->seqQ + i) * D;
        double mx = -INFINITY, sum = 0, l = -INFINITY;
        for (int d = 0; d < D; ++d)
          row[d] = 0;
        for (int64_t j = 0; j < visible; ++j) {
          const uint16_t *kr = c->k + ((b * HKV + hk) * c->seqKV + j) * D;
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += halfToDouble(qr[d]) * halfToDouble(kr[d]);
          s[j] = c->scale > 0 ? dot * c->scale : dot / sqrt((double)D);
          if (s[j] > mx)
            mx = s[j];
        }
        for (int64_t j = 0; j < visible; ++j) {
          const uint16_t *vr = c->v + ((b * HKV + hk) * c->seqKV + j) * D;
          double p = exp(s[j] - mx);
          sum += p;
          for (int d = 0; d < D; ++d)
            row[d] += p * halfToDouble(vr[d]);
        }
        if (visible > 0) {
          for (int d = 0; d < D; ++d)
            row[d] /= sum;
          l = mx + log(sum);
        }
        const uint16_t *got = c->out + ((b * HQ + h) * c->seqQ + i) * D;
        for (int d = 0; d < D; ++d) {
          double g = halfToDouble(got[d]);
          double err = isfinite(g) ? fabs(g - row[d]) : INFINITY;
          if (err > worst)
            worst = err;
          if (err > 4e-3 && bad++ < 8)
            fprintf(stderr, "%s: out[%lld, %lld, %lld, %d] = %g, expected %g\n",
                    name, (long long)b, (long long)h, (long long)i, d, g,
                    row[d]);
        }
        if (c->withLse) {
          double g = c->lse[(b * HQ + h) * c->seqQ + i];
          double err = isinf(l) ? (g == l ? 0 : INFINITY)
                                : fabs(g - l) / (fabs(l) > 1 ? fabs(l) : 1);
          if (!(err <= worstLse))
            worstLse = isnan(err) ? INFINITY : err;
          if (!(err <= 1e-3) && bad++ < 8)
            fprintf(stderr, "%s: lse[%lld, %lld, %lld] = %g, expected %g\n",
                    name, (long long)b, (long long)h, (long long)i, g, l);
        }
      }
  free(s);
  printf("%s: max |error| %.2e, lse relative error %.2e\n", name, worst,
         worstLse);
  CHECK(bad == 0 && worst <= 4e-3 && worstLse <= 1e-3,
        "%s: %d elements off the float64 reference", name, bad);
}

/* Checks the output `o` of call `c` written as [B, N, H, D]: transposed
 * back into c->out, against the float64 reference. */
static void checkBNHD(const char *name, Call *c, const uint16_t *o) {
  transposeHN(o, c->out, HQ, c->seqQ, 0);
  checkCall(name, c);
}

/* Checks a failed call's status and that its message holds `needle`. */
static void expectError(const char *what, flashc_status got,
                        flashc_status expected, const char *needle) {
  const char *message = flashc_last_error();
  CHECK(got == expected, "%s: status %d, expected %d (%s)", what, (int)got,
        (int)expected, message);
  CHECK(message && message[0] != '\0', "%s: no error message", what);
  CHECK(message && strstr(message, needle) != NULL,
        "%s: the message '%s' does not mention '%s'", what, message, needle);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : FLASHC_TEST_BUNDLE;
  const char *seedText = getenv("FLASHC_TEST_SEED");
  uint64_t seed = seedText ? strtoull(seedText, NULL, 10)
                           : (uint64_t)time(NULL) ^ (uint64_t)clock();
  rngState = seed;
  printf("FlashcCAPITest: seed %llu (FLASHC_TEST_SEED repeats it)\n",
         (unsigned long long)seed);

  flashc_bundle *bundle = NULL;
  flashc_status status = flashc_bundle_open(dir, &bundle);
  if (status != FLASHC_OK) {
    fprintf(stderr, "cannot open the bundle %s: %s\n", dir,
            flashc_last_error());
    return 1;
  }
  CHECK(flashc_bundle_size(bundle) == 8, "the bundle has %lld variants",
        (long long)flashc_bundle_size(bundle));
  CHECK(flashc_last_error()[0] == '\0', "an error after success: %s",
        flashc_last_error());

  /* A fault the simulator finds in a kernel (here, a thread over the
   * instruction budget flashc_simulator_set_max_instructions set) is a
   * launch error; the default budget runs the same call. */
  if (argc > 2 && strcmp(argv[2], "trap") == 0) {
    Call t;
    initCall(&t, 9, 300, FLASHC_MASK_CAUSAL, 1);
    CHECK(flashc_simulator_set_max_instructions(100) == FLASHC_OK,
          "set_max_instructions: %s", flashc_last_error());
    expectError("trapped kernel", run(bundle, &t), FLASHC_ERROR_LAUNCH,
                "the thread exceeded 100 instructions");
    CHECK(flashc_simulator_set_max_instructions(100000000) == FLASHC_OK,
          "set_max_instructions: %s", flashc_last_error());
    flashc_status again = run(bundle, &t);
    CHECK(again == FLASHC_OK, "with the default budget: status %d: %s",
          (int)again, flashc_last_error());
    if (again == FLASHC_OK)
      checkCall("with the default budget", &t);
    freeCall(&t);
    flashc_bundle_close(bundle);
    return failures ? 1 : 0;
  }

  /* Decode (Nq <= 16): causal, with the log-sum-exp; two KV blocks, so the
   * call may split. */
  Call c;
  initCall(&c, 9, 300, FLASHC_MASK_CAUSAL, 1);
  status = run(bundle, &c);
  CHECK(status == FLASHC_OK, "decode: status %d: %s", (int)status,
        flashc_last_error());
  CHECK(flashc_last_error()[0] == '\0', "an error after success: %s",
        flashc_last_error());
  if (status == FLASHC_OK)
    checkCall("decode", &c);

  /* A bad call on the same tensors: misaligned rows. */
  c.tk.data = (char *)c.k + 2;
  expectError("misaligned key", run(bundle, &c), FLASHC_ERROR_INVALID_ARGUMENT,
              "key is at an address that is not 16-byte aligned");
  c.tk.data = c.k;
  /* The LSE buffer of the wrong element type. */
  c.tlse.dtype = FLASHC_F16;
  expectError("f16 lse", run(bundle, &c), FLASHC_ERROR_INVALID_ARGUMENT,
              "lse has element type f16");
  freeCall(&c);

  /* Prefill, neither causal nor with the log-sum-exp. */
  initCall(&c, 37, 45, FLASHC_MASK_NONE, 0);
  status = run(bundle, &c);
  CHECK(status == FLASHC_OK, "prefill: status %d: %s", (int)status,
        flashc_last_error());
  if (status == FLASHC_OK)
    checkCall("prefill", &c);

  /* Error paths: each sets a code and a message. */
  flashc_bundle *missing = NULL;
  expectError("missing bundle",
              flashc_bundle_open("/nonexistent/flashc-bundle", &missing),
              FLASHC_ERROR_NOT_FOUND, "/nonexistent/flashc-bundle");
  CHECK(missing == NULL, "a bundle handle for a missing directory");
  expectError("empty directory", flashc_bundle_open("", &missing),
              FLASHC_ERROR_NOT_FOUND, "bundle path is empty");
  expectError("null directory", flashc_bundle_open(NULL, &missing),
              FLASHC_ERROR_INVALID_ARGUMENT, "null");

  expectError("null query",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, NULL, &c.tk, &c.tv, &c.tout,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "query is null");
  expectError("null output",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, NULL,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "output is null");
  expectError("null bundle",
              flashc_attention(NULL, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &c.tout,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "bundle is null");
  expectError("unknown mask",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &c.tout,
                               NULL, 7, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT,
              "unknown mask 7; expected FLASHC_MASK_NONE or "
              "FLASHC_MASK_CAUSAL");
  flashc_tensor rank5 = c.tq;
  rank5.rank = 5;
  expectError("rank 5",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &rank5, &c.tk, &c.tv,
                               &c.tout, NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "query has rank 5");

  /* Configurations the bundle lacks: a head dim, bf16. */
  flashc_tensor q128 = c.tq, v128 = c.tv;
  q128.sizes[3] = 128;
  v128.sizes[3] = 128;
  expectError("D = 128",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &q128, &c.tk, &v128, &c.tout,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_NOT_FOUND, "D=128 Dv=128 on flashc PTX simulator");
  /* ... naming the closest variant and the field it differs in. */
  expectError("D = 128 names the field",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &q128, &c.tk, &v128, &c.tout,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_NOT_FOUND,
              "differs in head_dim (64; the call "
              "needs 128)");
  /* Every kernel takes the scale as an argument: any scale runs. */
  {
    Call t;
    for (int i = 0; i < 2; ++i) {
      initCall(&t, 30, 50, FLASHC_MASK_CAUSAL, 1);
      t.scale = i == 0 ? 0.5 : 0.01;
      status = run(bundle, &t);
      CHECK(status == FLASHC_OK, "scale %g: status %d: %s", t.scale,
            (int)status, flashc_last_error());
      if (status == FLASHC_OK)
        checkCall(i == 0 ? "scale 0.5" : "scale 0.01", &t);
      freeCall(&t);
    }
    /* A scale the kernels cannot take in f32. */
    initCall(&t, 30, 50, FLASHC_MASK_CAUSAL, 1);
    t.scale = 1e-39;
    expectError("subnormal scale", run(bundle, &t),
                FLASHC_ERROR_INVALID_ARGUMENT, "normal f32");
    freeCall(&t);
  }
  flashc_tensor qb = c.tq, kb = c.tk, vb = c.tv;
  qb.dtype = kb.dtype = vb.dtype = FLASHC_BF16;
  expectError("bf16",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &qb, &kb, &vb, &c.tout, NULL,
                               1, 0.0, NULL),
              FLASHC_ERROR_NOT_FOUND, "no kernel for bf16");
  flashc_tensor k3 = c.tk, v3 = c.tv;
  k3.sizes[1] = v3.sizes[1] = 3;
  expectError(
      "8 query heads over 3 KV heads",
      flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BHND,
                       &c.tq, &k3, &v3, &c.tout, NULL, 0, 0.0, NULL),
      FLASHC_ERROR_INVALID_ARGUMENT, "must be a multiple of the key heads (3)");

  /* A scale that is not a number is an error, not the default. */
  expectError("NaN scale",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &c.tout,
                               NULL, 0, nan(""), NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "scale must be finite");
  expectError("infinite scale",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &c.tout,
                               NULL, 0, INFINITY, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "scale must be finite");
  /* Outputs over inputs (the kernels read Q, K, V while they write O). */
  flashc_tensor overQ = c.tout;
  overQ.data = c.q;
  expectError("output over the query",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &overQ,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "output overlaps query");
  flashc_tensor overV = c.tout;
  overV.data = (char *)c.v + 16;
  expectError("output inside the value",
              flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &overV,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "output overlaps");
  /* A directory where the manifest should be: a bundle that cannot be
   * trusted, not a missing one. */
  {
    char bad[] = "/tmp/flashc-capi-XXXXXX";
    if (mkdtemp(bad)) {
      char manifest[64];
      snprintf(manifest, sizeof(manifest), "%s/manifest.json", bad);
      mkdir(manifest, 0700);
      expectError("manifest is a directory",
                  flashc_bundle_open(bad, &missing),
                  FLASHC_ERROR_INVALID_BUNDLE, "is not a regular file");
      rmdir(manifest);
      rmdir(bad);
    }
  }

  /* The same call in FlashAttention's layout, [B, N, H, D]: sizes and
   * strides in that order, the data transposed. The output, transposed
   * back, must match the float64 reference. */
  {
    Call t;
    initCall(&t, 40, 70, FLASHC_MASK_CAUSAL, 1);
    int64_t qn[4] = {B, t.seqQ, HQ, D}, kn[4] = {B, t.seqKV, HKV, D};
    uint16_t *q = alignedAlloc(B * HQ * t.seqQ * D * 2);
    uint16_t *k = alignedAlloc(B * HKV * t.seqKV * D * 2);
    uint16_t *v = alignedAlloc(B * HKV * t.seqKV * D * 2);
    uint16_t *o = alignedAlloc(B * HQ * t.seqQ * D * 2);
    transposeHN(t.q, q, HQ, t.seqQ, 1);
    transposeHN(t.k, k, HKV, t.seqKV, 1);
    transposeHN(t.v, v, HKV, t.seqKV, 1);
    flashc_tensor tq = dense(q, FLASHC_F16, 4, qn),
                  tk = dense(k, FLASHC_F16, 4, kn),
                  tv = dense(v, FLASHC_F16, 4, kn),
                  to = dense(o, FLASHC_F16, 4, qn);
    status =
        flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BNHD,
                         &tq, &tk, &tv, &to, &t.tlse, 1, 0.0, NULL);
    CHECK(status == FLASHC_OK, "bnhd: status %d: %s", (int)status,
          flashc_last_error());
    if (status == FLASHC_OK)
      checkBNHD("bnhd", &t, o);
    /* The BNHD buffers described in [B, H, N, D] order: as a permuted view
     * (strided) they run; named bhnd they are refused, since the strides
     * say the heads lie inside the tokens. */
    flashc_tensor vq = tq, vk = tk, vv = tv, vo = to;
    flashc_tensor *views[4] = {&vq, &vk, &vv, &vo};
    for (int i = 0; i < 4; ++i) {
      int64_t size = views[i]->sizes[1], stride = views[i]->strides[1];
      views[i]->sizes[1] = views[i]->sizes[2];
      views[i]->strides[1] = views[i]->strides[2];
      views[i]->sizes[2] = size;
      views[i]->strides[2] = stride;
    }
    expectError("bnhd memory named bhnd",
                flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                                 FLASHC_LAYOUT_BHND, &vq, &vk, &vv, &vo, NULL,
                                 1, 0.0, NULL),
                FLASHC_ERROR_INVALID_ARGUMENT, "is not a bhnd tensor");
    for (int64_t i = 0; i < B * HQ * t.seqQ * D; ++i)
      o[i] = 0x7e00;
    status =
        flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_STRIDED,
                         &vq, &vk, &vv, &vo, &t.tlse, 1, 0.0, NULL);
    CHECK(status == FLASHC_OK, "strided: status %d: %s", (int)status,
          flashc_last_error());
    if (status == FLASHC_OK)
      checkBNHD("strided", &t, o);
    expectError("unknown layout",
                flashc_attention(bundle, FLASHC_DEVICE_SIMULATOR,
                                 (flashc_layout)9, &tq, &tk, &tv, &to, NULL, 1,
                                 0.0, NULL),
                FLASHC_ERROR_INVALID_ARGUMENT, "unknown layout 9");
    free(q);
    free(k);
    free(v);
    free(o);
    freeCall(&t);
  }

  /* No CUDA driver on a machine without a GPU. */
  if (!flashc_cuda_available()) {
    expectError("CUDA device",
                flashc_attention(bundle, FLASHC_DEVICE_CUDA, FLASHC_LAYOUT_BHND,
                                 &c.tq, &c.tk, &c.tv, &c.tout, NULL, 0, 0.0,
                                 NULL),
                FLASHC_ERROR_NO_DEVICE, "CUDA");
  } else {
    printf("a CUDA device is present: the no-device check is skipped\n");
  }
  expectError("unknown device",
              flashc_attention(bundle, (flashc_device_kind)7,
                               FLASHC_LAYOUT_BHND, &c.tq, &c.tk, &c.tv, &c.tout,
                               NULL, 0, 0.0, NULL),
              FLASHC_ERROR_INVALID_ARGUMENT, "unknown device kind");

  freeCall(&c);
  flashc_bundle_close(bundle);
  if (failures) {
    fprintf(stderr, "FlashcCAPITest: %d check(s) failed (seed %llu)\n",
            failures, (unsigned long long)seed);
    return 1;
  }
  printf("FlashcCAPITest: all checks passed\n");
  return 0;
}
