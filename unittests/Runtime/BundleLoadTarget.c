/*===- BundleLoadTarget.c - A bundle through the C API, for fuzzing -------===*\
|*                                                                            *|
|* The bundle target of scripts/fuzz.py: opens the bundle directory it is     *|
|* given with flashc_bundle_open and, if that succeeds, runs tiny attention   *|
|* calls on FLASHC_DEVICE_SIMULATOR with it: f16, D = 64, 4 query heads over  *|
|* one KV head, Nk = 45, Nq = 1 (the decode kernels) or 37 (prefill), causal  *|
|* or not, with or without the log-sum-exp, on 16-byte aligned buffers of     *|
|* small random values. A bundle's kernels may be anything, so results are    *|
|* not checked: only the C API's contract is. Each failure prints one line    *|
|* on stderr:                                                                 *|
|*                                                                            *|
|*   error: CALL: status N: MESSAGE                                           *|
|*                                                                            *|
|* and a broken contract one line that starts with "violation:": a status     *|
|* outside flashc_status, a failure with an empty message or a message of     *|
|* more than one line, a handle set by a failed open, a negative bundle       *|
|* size.                                                                      *|
|*                                                                            *|
|* Usage: FlashcBundleLoadTarget DIR [CALL...]                                *|
|*   CALL: [causal-][lse-](prefill|decode), the suffix of the variant id the  *|
|*   call runs; none: all eight.                                              *|
|* Exit status: 0 when every call succeeded or failed with a code and a       *|
|* message, 2 on a violation, 1 on a usage error.                             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L
#include "DenseTensor.h"
#include "flashc/Runtime/flashc_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HQ = 4, HKV = 1, D = 64, NK = 45 };

static int violations = 0;

/* Prints `text` on the rest of the line, control bytes as \xNN. */
static void printEscaped(const char *text) {
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
    if (*p < 0x20 || *p == 0x7f)
      fprintf(stderr, "\\x%02x", *p);
    else
      fputc(*p, stderr);
  }
  fputc('\n', stderr);
}

/* Checks one call's status and message; returns 1 when it succeeded. */
static int report(const char *call, flashc_status status) {
  const char *message = flashc_last_error();
  if (status == FLASHC_OK)
    return 1;
  if (!message) {
    fprintf(stderr, "violation: %s: status %d with a null message\n", call,
            (int)status);
    ++violations;
    return 0;
  }
  fprintf(stderr, "error: %s: status %d: ", call, (int)status);
  printEscaped(message);
  if ((int)status < (int)FLASHC_ERROR_INVALID_ARGUMENT ||
      (int)status > (int)FLASHC_ERROR_INTERNAL) {
    fprintf(stderr, "violation: %s: status %d is not a flashc_status\n", call,
            (int)status);
    ++violations;
  }
  if (message[0] == '\0') {
    fprintf(stderr, "violation: %s: status %d with an empty message\n", call,
            (int)status);
    ++violations;
  }
  if (strchr(message, '\n') || strchr(message, '\r')) {
    fprintf(stderr, "violation: %s: a message of more than one line\n", call);
    ++violations;
  }
  return 0;
}

static uint64_t rngState = 0x2545f4914f6cdd1dull;

/* xorshift64 */
static uint64_t nextRandom(void) {
  rngState ^= rngState << 13;
  rngState ^= rngState >> 7;
  rngState ^= rngState << 17;
  return rngState;
}

/* An f16 of magnitude below 1: a random mantissa, exponents -8 to -1. */
static uint16_t smallHalf(void) {
  uint64_t r = nextRandom();
  uint16_t sign = (uint16_t)((r & 1) << 15);
  uint16_t exponent = (uint16_t)(7 + (r >> 1) % 8);
  uint16_t mantissa = (uint16_t)((r >> 8) & 0x3ff);
  return (uint16_t)(sign | (exponent << 10) | mantissa);
}

static void *alignedAlloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 16, bytes) != 0) {
    fprintf(stderr, "FlashcBundleLoadTarget: cannot allocate %zu bytes\n",
            bytes);
    exit(1);
  }
  return p;
}

/* Parses a call's name, [causal-][lse-](prefill|decode); 0 if it is not
 * one. */
static int parseCall(const char *name, int *causal, int *withLse,
                     int64_t *seqQ) {
  const char *rest = name;
  *causal = *withLse = 0;
  if (strncmp(rest, "causal-", 7) == 0) {
    *causal = 1;
    rest += 7;
  }
  if (strncmp(rest, "lse-", 4) == 0) {
    *withLse = 1;
    rest += 4;
  }
  if (strcmp(rest, "prefill") == 0)
    *seqQ = 37;
  else if (strcmp(rest, "decode") == 0)
    *seqQ = 1;
  else
    return 0;
  return 1;
}

/* One call, named like the variant it runs. */
static void runCall(flashc_bundle *bundle, const char *name) {
  int causal = 0, withLse = 0;
  int64_t seqQ = 1;
  parseCall(name, &causal, &withLse, &seqQ);
  int64_t qSizes[4] = {1, HQ, seqQ, D}, kSizes[4] = {1, HKV, NK, D};
  int64_t lseSizes[3] = {1, HQ, seqQ};
  size_t qElems = (size_t)(HQ * seqQ * D), kElems = (size_t)(HKV * NK * D);
  uint16_t *q = alignedAlloc(qElems * 2), *k = alignedAlloc(kElems * 2),
           *v = alignedAlloc(kElems * 2), *out = alignedAlloc(qElems * 2);
  float *lse = alignedAlloc((size_t)(HQ * seqQ) * 4);
  for (size_t i = 0; i < qElems; ++i)
    q[i] = smallHalf();
  for (size_t i = 0; i < kElems; ++i) {
    k[i] = smallHalf();
    v[i] = smallHalf();
  }
  memset(out, 0, qElems * 2);
  memset(lse, 0, (size_t)(HQ * seqQ) * 4);
  flashc_tensor tq = dense(q, FLASHC_F16, 4, qSizes);
  flashc_tensor tk = dense(k, FLASHC_F16, 4, kSizes);
  flashc_tensor tv = dense(v, FLASHC_F16, 4, kSizes);
  flashc_tensor tout = dense(out, FLASHC_F16, 4, qSizes);
  flashc_tensor tlse = dense(lse, FLASHC_F32, 3, lseSizes);
  flashc_status status = flashc_attention(
      bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BHND, &tq, &tk, &tv, &tout,
      withLse ? &tlse : NULL, causal ? FLASHC_MASK_CAUSAL : FLASHC_MASK_NONE,
      0.0, NULL);
  if (report(name, status))
    printf("%s: ok\n", name);
  free(q);
  free(k);
  free(v);
  free(out);
  free(lse);
}

/* The harness's time limit: FLASHC_SIM_MAX_INSTRUCTIONS (a decimal
 * count), the simulator's per-thread instruction budget, which the fuzzer
 * sets so that a runaway kernel fails its call in time. */
static void setInstructionBudget(void) {
  const char *text = getenv("FLASHC_SIM_MAX_INSTRUCTIONS");
  if (!text || *text < '0' || *text > '9')
    return;
  char *end = NULL;
  errno = 0;
  unsigned long long n = strtoull(text, &end, 10);
  if (*end || errno)
    return;
  if (flashc_simulator_set_max_instructions(n) != FLASHC_OK) {
    fprintf(stderr, "violation: set_max_instructions: %s\n",
            flashc_last_error());
    ++violations;
  }
}

int main(int argc, char **argv) {
  static const char *const allCalls[] = {
      "prefill",        "causal-prefill", "lse-prefill", "causal-lse-prefill",
      "decode",         "causal-decode",  "lse-decode",  "causal-lse-decode"};
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    fprintf(stderr, "usage: FlashcBundleLoadTarget DIR "
                    "[[causal-][lse-](prefill|decode) ...]\n");
    return 1;
  }
  for (int i = 2; i < argc; ++i) {
    int causal, withLse;
    int64_t seqQ;
    if (!parseCall(argv[i], &causal, &withLse, &seqQ)) {
      fprintf(stderr, "FlashcBundleLoadTarget: unknown call '%s'\n", argv[i]);
      return 1;
    }
  }
  setInstructionBudget();
  flashc_bundle *bundle = NULL;
  flashc_status status = flashc_bundle_open(argv[1], &bundle);
  if (!report("open", status)) {
    if (bundle) {
      fprintf(stderr, "violation: open: a failed open set the handle\n");
      ++violations;
    }
    return violations ? 2 : 0;
  }
  if (!bundle) {
    fprintf(stderr, "violation: open: success without a handle\n");
    return 2;
  }
  int64_t size = flashc_bundle_size(bundle);
  printf("open: %lld variants\n", (long long)size);
  if (size < 0) {
    fprintf(stderr, "violation: open: %lld variants\n", (long long)size);
    ++violations;
  }
  if (argc > 2) {
    for (int i = 2; i < argc; ++i)
      runCall(bundle, argv[i]);
  } else {
    for (size_t i = 0; i < sizeof(allCalls) / sizeof(allCalls[0]); ++i)
      runCall(bundle, allCalls[i]);
  }
  flashc_bundle_close(bundle);
  return violations ? 2 : 0;
}
