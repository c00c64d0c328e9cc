/*===- DenseTensor.h - A dense flashc_tensor, for the C test programs -----===*\
|*                                                                            *|
|* Shared by CAPITest.c and BundleLoadTarget.c.                               *|
\*===----------------------------------------------------------------------===*/

#ifndef FLASHC_UNITTESTS_RUNTIME_DENSETENSOR_H
#define FLASHC_UNITTESTS_RUNTIME_DENSETENSOR_H

#include "flashc/Runtime/flashc_runtime.h"

#include <string.h>

/* A densely packed row-major tensor over `data`. */
static inline flashc_tensor dense(void *data, flashc_dtype dtype, int32_t rank,
                                  const int64_t *sizes) {
  flashc_tensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    t.sizes[d] = sizes[d];
    t.strides[d] = stride;
    stride *= sizes[d];
  }
  return t;
}

#endif /* FLASHC_UNITTESTS_RUNTIME_DENSETENSOR_H */
