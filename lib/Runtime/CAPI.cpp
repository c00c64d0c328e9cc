//===- CAPI.cpp - The C API of the runtime --------------------------------===//
//
// flashc_runtime.h over the C++ runtime: bundles, device selection and the
// attention call, with per-thread error messages. A C++ error becomes a
// flashc_status by its code (toCStatus), never by its message.
//
//===----------------------------------------------------------------------===//

// The C API is all that libflashc_runtime.so exports (it is built with
// hidden visibility and flashc_runtime.map).
#pragma GCC visibility push(default)
#include "flashc/Runtime/flashc_runtime.h"
#pragma GCC visibility pop

#include "flashc/Config.h"
#include "flashc/Runtime/Runtime.h"

#include "flashc/Support/Files.h"
#include "flashc/Support/Layout.h"

#include <cmath>
#include <exception>
#include <mutex>
#include <new>

using namespace flashc;
using namespace flashc::runtime;

struct flashc_bundle {
  Bundle bundle;
};

// The error codes that the C API names have their flashc_status values.
static_assert(static_cast<int>(MaskKind::None) == FLASHC_MASK_NONE &&
              static_cast<int>(MaskKind::Causal) == FLASHC_MASK_CAUSAL);
static_assert(static_cast<int>(ErrorCode::Success) == FLASHC_OK);
static_assert(static_cast<int>(ErrorCode::InvalidArgument) ==
              FLASHC_ERROR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::NotFound) == FLASHC_ERROR_NOT_FOUND);
static_assert(static_cast<int>(ErrorCode::NoDevice) == FLASHC_ERROR_NO_DEVICE);
static_assert(static_cast<int>(ErrorCode::Launch) == FLASHC_ERROR_LAUNCH);
static_assert(static_cast<int>(ErrorCode::InvalidBundle) ==
              FLASHC_ERROR_INVALID_BUNDLE);
static_assert(static_cast<int>(ErrorCode::Internal) == FLASHC_ERROR_INTERNAL);

namespace {

thread_local std::string lastError;

/// The C API's code for `s`: its own where flashc_status names it, else
/// `otherwise`, the code of the operation that failed (FLASHC_ERROR_LAUNCH
/// for a fault the simulator found in a launched kernel, a driver error).
flashc_status toCStatus(const Status &s, flashc_status otherwise) {
  switch (s.code()) {
  case ErrorCode::Success:
  case ErrorCode::InvalidArgument:
  case ErrorCode::NotFound:
  case ErrorCode::NoDevice:
  case ErrorCode::Launch:
  case ErrorCode::InvalidBundle:
  case ErrorCode::Internal:
    return static_cast<flashc_status>(s.code());
  default:
    return otherwise;
  }
}

flashc_status fail(flashc_status code, const std::string &message) {
  lastError = message;
  return code;
}

/// Fails with `s`'s message and code (see toCStatus).
flashc_status fail(const Status &s, flashc_status otherwise) {
  return fail(toCStatus(s, otherwise), s.message());
}

/// `t` as a view in [B, H, N, D] order: a rank-4 tensor given in `layout`'s
/// order is permuted (null `layout`: taken as it is, as for the LSE).
bool toView(const flashc_tensor *t, const char *name, TensorView &view,
            const Layout *layout = nullptr) {
  if (!t) {
    lastError = std::string(name) + " is null";
    return false;
  }
  if (t->rank < 1 || t->rank > 4) {
    lastError = std::string(name) + " has rank " + std::to_string(t->rank) +
                ", expected 1 to 4";
    return false;
  }
  if (t->dtype < FLASHC_F32 || t->dtype > FLASHC_BF16) {
    lastError = std::string(name) + " has an unknown dtype";
    return false;
  }
  view.data = t->data;
  view.dtype = t->dtype == FLASHC_F32   ? ElementType::F32
               : t->dtype == FLASHC_F16 ? ElementType::F16
                                        : ElementType::BF16;
  view.rank = t->rank;
  for (int d = 0; d < t->rank; ++d) {
    view.sizes[d] = t->sizes[d];
    view.strides[d] = t->strides[d];
  }
  if (layout && view.rank == 4) {
    std::string error = toBHND(*layout, view.sizes, view.strides, name);
    if (!error.empty()) {
      lastError = std::move(error);
      return false;
    }
  }
  return true;
}

flashc_status attention(flashc_bundle *bundle, int kind, int layout,
                        const flashc_tensor *q, const flashc_tensor *k,
                        const flashc_tensor *v, const flashc_tensor *out,
                        const flashc_tensor *lse, int mask, double scale,
                        void *stream);

/// The C API's simulator device, created at first use; with
/// `maxInstructions`, a new one with that per-thread budget replaces it
/// for the launches that follow.
std::shared_ptr<Device> getCAPISimulator(const uint64_t *maxInstructions) {
  static std::mutex mutex;
  static std::shared_ptr<Device> simulator;
  static SimulatorOptions options;
  std::lock_guard<std::mutex> lock(mutex);
  if (maxInstructions) {
    options.maxInstructionsPerThread = *maxInstructions;
    simulator.reset();
  }
  if (!simulator)
    simulator = getSimulatorDevice("sm_80", options);
  return simulator;
}

/// Runs `body`, turning any C++ exception into an error code: none may
/// reach a C caller.
template <typename Body> flashc_status guarded(Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(FLASHC_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception &e) {
    return fail(FLASHC_ERROR_INTERNAL,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(FLASHC_ERROR_INTERNAL, "internal error");
  }
}

} // namespace

extern "C" {

flashc_status flashc_bundle_open(const char *dir, flashc_bundle **out) {
  if (!dir || !out)
    return fail(FLASHC_ERROR_INVALID_ARGUMENT, "null argument");
  return guarded([&] {
    Result<Bundle> bundle = Bundle::load(dir);
    if (!bundle)
      return fail(bundle.status(), FLASHC_ERROR_INVALID_BUNDLE);
    *out = new flashc_bundle{std::move(*bundle)};
    lastError.clear();
    return FLASHC_OK;
  });
}

void flashc_bundle_close(flashc_bundle *bundle) { delete bundle; }

int64_t flashc_bundle_size(const flashc_bundle *bundle) {
  return bundle ? static_cast<int64_t>(bundle->bundle.variants.size()) : 0;
}

int flashc_cuda_available(void) {
  return getCudaDevice(0) ? 1 : 0;
}

flashc_status flashc_attention(flashc_bundle *bundle, flashc_device_kind kind,
                               flashc_layout layout, const flashc_tensor *q,
                               const flashc_tensor *k, const flashc_tensor *v,
                               const flashc_tensor *out,
                               const flashc_tensor *lse, int mask,
                               double scale, void *stream) {
  // As an int: a C caller may pass any value, which is not a valid
  // flashc_device_kind to load (UBSan's enum check).
  int kindValue = kind, layoutValue = layout;
  return guarded([&] {
    return attention(bundle, kindValue, layoutValue, q, k, v, out, lse, mask,
                     scale, stream);
  });
}

flashc_status flashc_simulator_set_max_instructions(uint64_t perThread) {
  return guarded([&] {
    getCAPISimulator(&perThread);
    return FLASHC_OK;
  });
}

const char *flashc_last_error(void) { return lastError.c_str(); }

const char *flashc_runtime_version(void) { return FLASHC_VERSION_STRING; }

} // extern "C"

namespace {

flashc_status attention(flashc_bundle *bundle, int kind, int layout,
                        const flashc_tensor *q, const flashc_tensor *k,
                        const flashc_tensor *v, const flashc_tensor *out,
                        const flashc_tensor *lse, int mask, double scale,
                        void *stream) {
  if (!bundle)
    return fail(FLASHC_ERROR_INVALID_ARGUMENT, "bundle is null");
  if (layout < FLASHC_LAYOUT_BHND || layout > FLASHC_LAYOUT_STRIDED)
    return fail(FLASHC_ERROR_INVALID_ARGUMENT,
                "unknown layout " + std::to_string(layout) +
                    "; expected FLASHC_LAYOUT_BHND, FLASHC_LAYOUT_BNHD or "
                    "FLASHC_LAYOUT_STRIDED");
  const Layout order = layout == FLASHC_LAYOUT_BHND   ? Layout::BHND
                       : layout == FLASHC_LAYOUT_BNHD ? Layout::BNHD
                                                      : Layout::Strided;
  AttentionCall call;
  if (!toView(q, "query", call.q, &order) ||
      !toView(k, "key", call.k, &order) ||
      !toView(v, "value", call.v, &order) ||
      !toView(out, "output", call.out, &order))
    return FLASHC_ERROR_INVALID_ARGUMENT;
  TensorView lseView;
  if (lse) {
    if (!toView(lse, "lse", lseView))
      return FLASHC_ERROR_INVALID_ARGUMENT;
    call.lse = &lseView;
  }
  call.stream = stream;
  if (call.q.rank != 4 || call.k.rank != 4 || call.v.rank != 4)
    return fail(FLASHC_ERROR_INVALID_ARGUMENT,
                "query, key and value must have rank 4");

  std::shared_ptr<Device> device;
  if (kind == FLASHC_DEVICE_SIMULATOR) {
    device = getCAPISimulator(/*maxInstructions=*/nullptr);
  } else if (kind == FLASHC_DEVICE_CUDA) {
    Result<std::shared_ptr<Device>> cuda = getCudaDevice(0);
    if (!cuda)
      return fail(cuda.status(), FLASHC_ERROR_NO_DEVICE);
    device = *cuda;
  } else {
    return fail(FLASHC_ERROR_INVALID_ARGUMENT, "unknown device kind");
  }

  AttentionQuery query;
  query.dtype = call.q.dtype;
  if (call.k.sizes[1] <= 0 || call.q.sizes[1] % call.k.sizes[1] != 0)
    return fail(FLASHC_ERROR_INVALID_ARGUMENT,
                "the query heads (" + std::to_string(call.q.sizes[1]) +
                    ") must be a multiple of the key heads (" +
                    std::to_string(call.k.sizes[1]) + ")");
  query.group = call.q.sizes[1] / call.k.sizes[1];
  query.headDim = call.q.sizes[3];
  query.headDimV = call.v.sizes[3];
  switch (mask) {
  case FLASHC_MASK_NONE:
    query.mask = Mask::none();
    break;
  case FLASHC_MASK_CAUSAL:
    query.mask = Mask::causal();
    break;
  default:
    return fail(FLASHC_ERROR_INVALID_ARGUMENT,
                "unknown mask " + std::to_string(mask) +
                    "; expected FLASHC_MASK_NONE or FLASHC_MASK_CAUSAL");
  }
  query.withLse = lse != nullptr;
  if (!std::isfinite(scale))
    return fail(FLASHC_ERROR_INVALID_ARGUMENT,
                "scale must be finite (<= 0 selects 1/sqrt(D)), got " +
                    std::to_string(scale));
  call.scale = scale > 0 ? scale : 0;
  // A kernel for the device's chip; on the simulator, any chip's. The
  // first query in this order with a variant the call's alignment fits
  // (KernelVariant::alignment) runs; where none fits, the first with any
  // variant, whose launch then says what the tensors lack.
  const KernelVariant *variant = nullptr, *unfit = nullptr;
  const int64_t alignment = getCallAlignment(call);
  // For the error: the closest miss of the queries tried.
  std::string miss;
  size_t missMatched = 0;
  for (bool decode : {call.q.sizes[2] <= kMaxDecodeSeqQ, false}) {
    query.decode = decode;
    for (const char *chip : {"sm_90a", "sm_80"}) {
      if (!device->isSimulator() && device->getChip() != chip &&
          !(device->getChip() == "sm_90a" && std::string(chip) == "sm_80"))
        continue;
      query.target = chip;
      if (const KernelVariant *found = bundle->bundle.find(query, alignment)) {
        if (found->alignment <= alignment) {
          variant = found;
          break;
        }
        if (!unfit)
          unfit = found;
        continue;
      }
      size_t matched = 0;
      std::string why = bundle->bundle.explainMiss(query, &matched);
      if (miss.empty() || matched > missMatched) {
        miss = why;
        missMatched = matched;
      }
    }
    if (variant)
      break;
  }
  if (!variant)
    variant = unfit;
  if (!variant)
    return fail(FLASHC_ERROR_NOT_FOUND,
                std::string("the bundle has no kernel for ") +
                    stringify(query.dtype) + " with " +
                    std::to_string(query.group) +
                    " query head(s) per KV "
                    "head, D=" +
                    std::to_string(query.headDim) +
                    " Dv=" + std::to_string(query.headDimV) +
                    (query.mask.isNone() ? "" : " " + query.mask.str()) +
                    (query.withLse ? " with LSE" : "") + " on " +
                    device->describe() + ": " + miss);
  if (Status s = launchAttention(*device, *variant, call))
    return fail(s, FLASHC_ERROR_LAUNCH);
  lastError.clear();
  return FLASHC_OK;
}

} // namespace
