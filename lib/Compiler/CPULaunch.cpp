//===- CPULaunch.cpp - Running a CPU kernel on host buffers ---------------===//
//
// The CPU side of Kernel::run, as GPUCompiler.cpp's Kernel::runGPU is the
// GPU side: the checks of a call's buffers, then the calls into the JIT's
// code. A CPU kernel's entry point (flash_attention, or
// flash_attention_decode for Nq <= max-seq-q) is called through its C
// interface, `_mlir_ciface_<name>`, as
//
//   void (MemRefDescriptor<4> *q, MemRefDescriptor<4> *k,
//         MemRefDescriptor<4> *v, MemRefDescriptor<4> *out,
//         [MemRefDescriptor<3> *lse,] float scale, int64_t splits)
//
// (the LSE only when the kernel has one). A kernel computes one KV head
// group (G query heads per KV head) over B' (batch, KV head) pairs: q is
// [B', G, Nq, D], k [B', 1, Nk, D], v [B', 1, Nk, Dv], out [B', G, Nq, Dv]
// and lse [B', G, Nq], each a descriptor {allocated, aligned, offset,
// sizes[], strides[]} with sizes and strides in elements, any strides but a
// unit innermost one. When every buffer's batch stride is Hkv times its
// stride per KV head, one call covers all B x Hkv pairs; otherwise each
// batch entry is a call over its Hkv pairs. `scale` is the run's softmax
// scale and `splits` its KV split count (Kernel::getSplitCount).
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"

#include "flashc/Support/Sizes.h"

#include "llvm/Support/FormatVariadic.h"

#include <utility>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {

template <int N> struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

llvm::Error checkBuffer(const TensorRef &t, llvm::StringRef name, ElementType dtype,
                        llvm::ArrayRef<int64_t> sizes) {
  auto shapeStr = [](llvm::ArrayRef<int64_t> s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
      r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  };
  if (!t.data)
    return llvm::createStringError(name + " buffer is null");
  if (t.dtype != dtype)
    return llvm::createStringError(
        llvm::formatv("{0} has element type {1}, expected {2}", name,
                      ::flashc::stringify(t.dtype), ::flashc::stringify(dtype))
            .str());
  if (llvm::ArrayRef<int64_t>(t.sizes) != sizes)
    return llvm::createStringError(
        llvm::formatv("{0} has shape {1}, expected {2}", name,
                      shapeStr(t.sizes), shapeStr(sizes))
            .str());
  if (t.strides.size() != sizes.size())
    return llvm::createStringError(
        llvm::formatv("{0} has {1} strides for rank {2}", name,
                      t.strides.size(), sizes.size())
            .str());
  if (t.strides.back() != 1)
    return llvm::createStringError(
        llvm::formatv("{0} must have unit stride in its last dimension, got "
                      "strides {1}",
                      name, shapeStr(t.strides))
            .str());
  for (int64_t s : t.strides)
    if (s < 0)
      return llvm::createStringError(
          llvm::formatv("{0} has a negative stride: {1}", name,
                        shapeStr(t.strides))
              .str());
  if (!flashc::getStridedExtentBytes(t.sizes.data(), t.strides.data(),
                                     static_cast<int>(t.sizes.size()),
                                     ::flashc::getElementBytes(t.dtype)))
    return llvm::createStringError(
        llvm::formatv("{0} with shape {1} and strides {2} addresses more "
                      "than 2^60 bytes",
                      name, shapeStr(t.sizes), shapeStr(t.strides))
            .str());
  return llvm::Error::success();
}

/// An error when an output (out, lse) shares bytes with another tensor of
/// the call: the kernels read their inputs while they write, so an output
/// over an input gives wrong results.
llvm::Error checkOutputsApart(
    llvm::ArrayRef<std::pair<const TensorRef *, const char *>> tensors,
    size_t firstOutput) {
  auto extent = [](const TensorRef &t) -> uint64_t {
    return flashc::getStridedExtentBytes(t.sizes.data(), t.strides.data(),
                                         static_cast<int>(t.sizes.size()),
                                         ::flashc::getElementBytes(t.dtype))
        .value_or(0);
  };
  for (size_t i = firstOutput; i < tensors.size(); ++i) {
    const TensorRef *o = tensors[i].first;
    if (!o)
      continue;
    for (size_t j = 0; j < tensors.size(); ++j) {
      const TensorRef *t = tensors[j].first;
      if (j == i || !t || t->onDevice != o->onDevice)
        continue;
      if (flashc::rangesOverlap(o->data, extent(*o), t->data, extent(*t)))
        return llvm::createStringError(
            llvm::formatv("{0} overlaps {1} in memory; outputs must not share "
                          "memory with another tensor of the call",
                          tensors[i].second, tensors[j].second)
                .str());
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error Kernel::runCPU(const TensorRef &q, const TensorRef &k,
                           const TensorRef &v, const TensorRef &out,
                           const TensorRef *lse,
                           const RunOptions &options) const {
  if (options.simulate || options.device || options.stream)
    return llvm::createStringError(
        "a CPU kernel runs on the host: GPU run options (simulate, device, "
        "stream) do not apply");
  for (const TensorRef *t : {&q, &k, &v, &out, lse})
    if (t && t->onDevice)
      return llvm::createStringError(
          "a CPU kernel cannot read device memory");
  // The batch and lengths are the buffers': the kernel takes any.
  for (auto [t, name] : {std::pair<const TensorRef *, const char *>{&q, "query"},
                         {&k, "key"},
                         {&v, "value"},
                         {&out, "output"}})
    if (t->sizes.size() != 4)
      return llvm::createStringError(
          llvm::formatv("{0} must have rank 4, got rank {1}", name,
                        t->sizes.size())
              .str());
  // The batch, head counts and lengths are the buffers': the kernel serves
  // any, for its group size (query heads per KV head).
  int64_t group = spec.heads / spec.kvHeads;
  AttentionSpec s = spec;
  s.batch = q.sizes[0];
  s.heads = q.sizes[1];
  s.kvHeads = k.sizes[1];
  s.seqQ = q.sizes[2];
  s.seqKV = k.sizes[2];
  if (llvm::Error e = s.validate())
    return llvm::createStringError("the buffers' sizes: " +
                                   llvm::toString(std::move(e)));
  if (s.heads != group * s.kvHeads)
    return llvm::createStringError(
        llvm::formatv("query has {0} heads for {1} key heads, a group of {2}; "
                      "the kernel is compiled for groups of {3} query heads "
                      "per KV head",
                      s.heads, s.kvHeads, s.heads / s.kvHeads, group)
            .str());
  if (llvm::Error e = checkBuffer(q, "query", s.dtype,
                                  {s.batch, s.heads, s.seqQ, s.headDim}))
    return e;
  if (llvm::Error e = checkBuffer(k, "key", s.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, s.headDim}))
    return e;
  if (llvm::Error e = checkBuffer(v, "value", s.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, s.valueDim()}))
    return e;
  if (llvm::Error e = checkBuffer(out, "output", s.dtype,
                                  {s.batch, s.heads, s.seqQ, s.valueDim()}))
    return e;
  if (s.withLse != (lse != nullptr))
    return llvm::createStringError(
        s.withLse ? "the kernel writes an LSE buffer but none was given"
                  : "an LSE buffer was given but the kernel has no LSE "
                    "output");
  if (lse)
    if (llvm::Error e =
            checkBuffer(*lse, "lse", ElementType::F32, {s.batch, s.heads, s.seqQ}))
      return e;
  if (options.splits < 0)
    return llvm::createStringError(
        llvm::formatv("the split count must be positive (0: chosen), got {0}",
                      options.splits)
            .str());
  const double scale = options.scale ? *options.scale : spec.effectiveScale();
  if (llvm::Error e = checkScale(scale))
    return e;
  if (llvm::Error e = checkOutputsApart(
          {{&q, "query"}, {&k, "key"}, {&v, "value"}, {&out, "output"},
           {lse, "lse"}},
          /*firstOutput=*/3))
    return e;
  // Decode shapes take the entry point without the transposed copy of K:
  // each key block is read by one Q tile only.
  llvm::Expected<void *> compiled = getEntry(s.seqQ);
  if (!compiled)
    return compiled.takeError();
  void *entry = *compiled;

  // The kernel sees [B', G, N, D] query/output and [B', 1, N, D] key/value
  // blocks with B' = (batch, KV head) pairs. When every buffer's batch
  // stride is Hkv times its stride per KV head, one call covers B x Hkv;
  // otherwise each batch entry is a call over its Hkv heads.
  int64_t hkv = s.kvHeads;
  auto folds = [&](const TensorRef &t, int64_t perKV) {
    return s.batch == 1 || hkv == 1 ||
           t.strides[0] == hkv * perKV * t.strides[1];
  };
  bool fold = folds(q, group) && folds(out, group) && folds(k, 1) &&
              folds(v, 1) && (!lse || folds(*lse, group));
  // Batch entry `b` (and the `count` - 1 after it when folding) of `t` as
  // `count` blocks of `perKV` heads.
  auto blocks = [&](const TensorRef &t, int64_t perKV, int64_t b, int64_t count,
                    auto &d) {
    constexpr int rank = sizeof(d.sizes) / sizeof(int64_t);
    char *base =
        static_cast<char *>(t.data) + b * t.strides[0] * ::flashc::getElementBytes(t.dtype);
    d.allocated = d.aligned = base;
    d.offset = 0;
    d.sizes[0] = count;
    d.strides[0] = hkv == 1 ? t.strides[0] : perKV * t.strides[1];
    d.sizes[1] = perKV;
    d.strides[1] = t.strides[1];
    for (int i = 2; i < rank; ++i) {
      d.sizes[i] = t.sizes[i];
      d.strides[i] = t.strides[i];
    }
  };
  int64_t count = fold ? s.batch * hkv : hkv;
  int64_t splits = getSplitCount(count, s.seqQ, s.seqKV, options,
                                 /*kvHeads=*/1);
  for (int64_t b = 0; b < s.batch; b += fold ? s.batch : 1) {
    MemRefDescriptor<4> dq, dk, dv, dout;
    blocks(q, group, b, count, dq);
    blocks(k, 1, b, count, dk);
    blocks(v, 1, b, count, dv);
    blocks(out, group, b, count, dout);
    if (lse) {
      MemRefDescriptor<3> dl;
      blocks(*lse, group, b, count, dl);
      auto fn = reinterpret_cast<void (*)(void *, void *, void *, void *,
                                          void *, float, int64_t)>(entry);
      fn(&dq, &dk, &dv, &dout, &dl, static_cast<float>(scale), splits);
    } else {
      auto fn = reinterpret_cast<void (*)(void *, void *, void *, void *, float,
                                          int64_t)>(entry);
      fn(&dq, &dk, &dv, &dout, static_cast<float>(scale), splits);
    }
  }
  return llvm::Error::success();
}
