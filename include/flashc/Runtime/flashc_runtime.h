/*===- flashc_runtime.h - The C API of flashc's runtime -----------*- C -*-===*\
|*                                                                            *|
|* Loads a bundle of precompiled flashc GPU kernels and runs attention with  *|
|* them, from any language with a C FFI, without the compiler:               *|
|*                                                                            *|
|*   flashc_bundle *bundle;                                                   *|
|*   if (flashc_bundle_open("kernels/", &bundle) != FLASHC_OK)                *|
|*     fprintf(stderr, "%s\n", flashc_last_error());                         *|
|*   flashc_tensor q = {qptr, FLASHC_F16, 4, {B, N, H, D}, {...}};            *|
|*   flashc_attention(bundle, FLASHC_DEVICE_CUDA, FLASHC_LAYOUT_BNHD,        *|
|*                    &q, &k, &v, &o, NULL, FLASHC_MASK_CAUSAL, 0.0, stream); *|
|*                                                                            *|
|* Errors are return codes; flashc_last_error() gives the message of the     *|
|* calling thread's last failure.                                             *|
\*===----------------------------------------------------------------------===*/

#ifndef FLASHC_RUNTIME_FLASHC_RUNTIME_H
#define FLASHC_RUNTIME_FLASHC_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  FLASHC_OK = 0,
  /* A null, malformed or inconsistent argument: a tensor's rank, shape,
   * dtype, strides, alignment or memory (an output overlapping another
   * tensor), a scale that is not finite, an unknown device kind. */
  FLASHC_ERROR_INVALID_ARGUMENT = 1,
  /* No bundle at the path, or no kernel in it for the call. */
  FLASHC_ERROR_NOT_FOUND = 2,
  FLASHC_ERROR_NO_DEVICE = 3,
  /* The device or the simulator failed to run a kernel. */
  FLASHC_ERROR_LAUNCH = 4,
  /* The bundle exists but cannot be trusted: a malformed or inconsistent
   * manifest, a file that is missing, not a regular file, too large, or
   * not the one its entry was written with. */
  FLASHC_ERROR_INVALID_BUNDLE = 5,
  /* Out of memory, or an error inside the runtime. */
  FLASHC_ERROR_INTERNAL = 6,
} flashc_status;

typedef enum { FLASHC_F32 = 0, FLASHC_F16 = 1, FLASHC_BF16 = 2 } flashc_dtype;

typedef enum {
  /* The CUDA driver's current device (device pointers). */
  FLASHC_DEVICE_CUDA = 0,
  /* The PTX simulator (host pointers; slow, checks every access). */
  FLASHC_DEVICE_SIMULATOR = 1,
} flashc_device_kind;

/* The order in which a call gives its tensors' sizes and strides. B is the
 * batch, H the heads, N the tokens (sequence), D the head dim. */
typedef enum {
  /* [B, H, N, D], as PyTorch's scaled_dot_product_attention. */
  FLASHC_LAYOUT_BHND = 0,
  /* [B, N, H, D], as FlashAttention's flash_attn_func. */
  FLASHC_LAYOUT_BNHD = 1,
  /* [B, H, N, D] sizes with strides in any order (a permuted view). */
  FLASHC_LAYOUT_STRIDED = 2,
} flashc_layout;

/* Which keys a query row attends to (the `mask` of flashc_attention). */
typedef enum {
  /* Every query attends to every key. */
  FLASHC_MASK_NONE = 0,
  /* Query i attends to keys j <= i + (Nk - Nq): aligned at the bottom
   * right, so that the last query sees every key. */
  FLASHC_MASK_CAUSAL = 1,
} flashc_mask;

/* A strided tensor: sizes and strides in elements (not bytes), in the
 * order the call's flashc_layout names; rank <= 4. The innermost
 * dimension (D) must have stride 1. */
typedef struct {
  void *data;
  flashc_dtype dtype;
  int32_t rank;
  int64_t sizes[4];
  int64_t strides[4];
} flashc_tensor;

typedef struct flashc_bundle flashc_bundle;

/* Opens the bundle directory `dir` (manifest.json and its kernels). */
flashc_status flashc_bundle_open(const char *dir, flashc_bundle **bundle);
void flashc_bundle_close(flashc_bundle *bundle);
/* Number of kernel variants in the bundle. */
int64_t flashc_bundle_size(const flashc_bundle *bundle);

/* 1 when a CUDA device that can run flashc's kernels is present. */
int flashc_cuda_available(void);

/* O = softmax(scale Q K^T) V. In BHND order: q [B, Hq, Nq, D],
 * k [B, Hkv, Nk, D], v [B, Hkv, Nk, Dv], out [B, Hq, Nq, Dv]; `layout`
 * names the order the four tensors' sizes and strides are given in. For
 * FLASHC_LAYOUT_BHND and FLASHC_LAYOUT_BNHD the strides must be that order
 * in memory too (over dimensions of more than one element and a non-zero
 * stride they do not grow inwards); a tensor whose strides are another
 * order is refused (FLASHC_ERROR_INVALID_ARGUMENT), since it was most
 * likely described in the wrong order. lse is [B, Hq, Nq] (f32, whatever
 * the layout) or NULL.
 * scale <= 0 selects 1/sqrt(D); a NaN or infinite scale is an error.
 * out and lse must not overlap each other or q, k, v. The bundle must hold the
 * matching kernel (target of the device, dtype, heads, head dims, mask, LSE;
 * the decode variant when Nq <= 16 and the bundle has one; where the
 * tensors' addresses or strides are not multiples of 16 bytes, the first
 * of those built for their alignment, `flashc bundle --alignments`). `mask` is
 * a flashc_mask (an int, so that 0 and 1 keep meaning no mask and causal);
 * another value is FLASHC_ERROR_INVALID_ARGUMENT. */
flashc_status flashc_attention(flashc_bundle *bundle,
                               flashc_device_kind device,
                               flashc_layout layout,
                               const flashc_tensor *q, const flashc_tensor *k,
                               const flashc_tensor *v,
                               const flashc_tensor *out,
                               const flashc_tensor *lse, int mask,
                               double scale, void *stream);

/* The PTX simulator's budget: a thread that executes more than
 * `per_thread` instructions (a runaway kernel) fails its launch with
 * FLASHC_ERROR_LAUNCH; 0 means no limit, the default is 10^8. Applies to
 * the FLASHC_DEVICE_SIMULATOR launches that follow. */
flashc_status flashc_simulator_set_max_instructions(uint64_t per_thread);

/* The message of the calling thread's last error ("" when none). */
const char *flashc_last_error(void);

/* The version of the runtime library, "MAJOR.MINOR.PATCH" (flashc's
 * version). The library's SONAME (libflashc_runtime.so.0) changes only
 * when this API changes incompatibly. */
const char *flashc_runtime_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHC_RUNTIME_FLASHC_RUNTIME_H */
