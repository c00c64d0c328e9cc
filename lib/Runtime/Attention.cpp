//===- Attention.cpp - Checking and launching an attention call -----------===//
//
// Validates a call against the kernel it will run (element types, shapes,
// strides and the 16-byte alignment the kernels' vector copies need),
// chooses the split count of a decode variant with the CTA x wave model,
// allocates the split workspace, and launches the forward kernel and the
// combine, passing the arguments their manifest lists, in its order, from
// the values this runtime knows (getKnownKernelParameters):
//
//   q, k, v, out, lse, ws_out, ws_lse, B, Nq, Nk, splits,
//   strides (batch, head, row) of q, k, v, out, scale
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Core/GPUTargets.h"
#include "flashc/Support/Sizes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace flashc;
using namespace flashc::runtime;

Device::~Device() = default;

Result<TensorMapBytes> Device::encodeTensorMap(const TensorMapSpec &) {
  return Status::make(ErrorCode::NoDevice,
                      describe() + " has no tensor maps (TMA)");
}

WaveTarget runtime::getWaveTarget(const Device &device) {
  return flashc::getWaveTarget(device.getChip(), device.getNumSMs(),
                               device.getMemoryBandwidthGBs());
}

int64_t runtime::getLaunchSplitCount(const Device &device,
                                     const KernelVariant &variant,
                                     int64_t batch, int64_t seqQ,
                                     int64_t seqKV, int64_t requested) {
  if (!variant.query.decode)
    return 1;
  AttentionProblem p = getVariantProblem(variant.query, batch, seqQ, seqKV);
  if (requested > 0)
    return std::min(requested, getMaxSplitCount(p, variant.blockKV));
  return chooseSplitCount(getWaveTarget(device), p, variant.blockQ,
                          variant.blockKV)
      .splits;
}

namespace {

std::string shapeString(const TensorView &t) {
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d)
    s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

std::string stridesString(const TensorView &t) {
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d)
    s += (d ? ", " : "") + std::to_string(t.strides[d]);
  return s + "]";
}

/// The largest power of two up to 16 that the address of `t` and its
/// strides in bytes are multiples of (the stride of a dimension of one
/// element is never used).
int64_t getTensorAlignment(const TensorView &t) {
  uint64_t bits = reinterpret_cast<uintptr_t>(t.data);
  int64_t eb = getElementBytes(t.dtype);
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.sizes[d] != 1)
      bits |= static_cast<uint64_t>(t.strides[d]) * static_cast<uint64_t>(eb);
  return getAlignmentOf(bits);
}

/// `t` with the stride of each outer dimension of one element replaced by
/// the one a dense dimension would have there (the next dimension's
/// extent). Such a stride only ever multiplies 0, but DLPack and
/// as_strided views may give it any value, which would make the call look
/// less aligned, its batch and heads not fold, and a tensor map that
/// needs strides of 16-byte multiples unbuildable.
TensorView withUnitDimensionStrides(TensorView t) {
  if (t.rank < 2 || t.rank > 4)
    return t;
  for (int d = t.rank - 2; d >= 0; --d) {
    int64_t dense;
    if (t.sizes[d] == 1 && t.sizes[d + 1] > 0 && t.strides[d + 1] >= 0 &&
        !__builtin_mul_overflow(t.strides[d + 1], t.sizes[d + 1], &dense))
      t.strides[d] = dense;
  }
  return t;
}

/// Checks one tensor of the call; `alignment` is what `variant` assumes
/// of its address and strides in bytes (0 or the element's size: nothing
/// beyond whole elements, which every tensor has to be at).
Status checkTensor(const TensorView &t, const char *name, ElementType dtype,
                   std::initializer_list<int64_t> sizes, int64_t alignment,
                   const KernelVariant *variant = nullptr) {
  if (!t.data)
    return Status::invalidArgument(std::string(name) + " is null");
  if (t.dtype != dtype)
    return Status::invalidArgument(std::string(name) + " has element type " +
                         stringify(t.dtype) + ", the kernel takes " +
                         stringify(dtype));
  TensorView expected;
  expected.rank = static_cast<int>(sizes.size());
  int i = 0;
  for (int64_t s : sizes)
    expected.sizes[i++] = s;
  bool same = t.rank == expected.rank;
  for (int d = 0; same && d < t.rank; ++d)
    same = t.sizes[d] == expected.sizes[d];
  if (!same)
    return Status::invalidArgument(std::string(name) + " has shape " + shapeString(t) +
                         ", expected " + shapeString(expected));
  if (t.strides[t.rank - 1] != 1)
    return Status::invalidArgument(std::string(name) +
                         " must have unit stride in its last dimension, got "
                         "strides " +
                         stridesString(t));
  for (int d = 0; d < t.rank; ++d)
    if (t.strides[d] < 0)
      return Status::invalidArgument(std::string(name) + " has a negative stride: " +
                           stridesString(t));
  if (reinterpret_cast<uintptr_t>(t.data) % getElementBytes(t.dtype) != 0)
    return Status::invalidArgument(
        std::string(name) + " is at an address that is not a multiple of its " +
        std::to_string(getElementBytes(t.dtype)) + "-byte elements");
  if (int64_t has = getTensorAlignment(t); alignment > has) {
    // Rows are copied and stored `alignment` bytes at a time (by TMA,
    // whose tensor maps need 16, where the kernel copies so).
    int64_t eb = getElementBytes(t.dtype);
    std::string what = reinterpret_cast<uintptr_t>(t.data) % alignment != 0
                           ? " is at an address that is not " +
                                 std::to_string(alignment) + "-byte aligned"
                           : " has strides " + stridesString(t) +
                                 " (elements of " + std::to_string(eb) +
                                 " bytes) that are not multiples of " +
                                 std::to_string(alignment) + " bytes";
    std::string bytes = std::to_string(has);
    return Status::invalidArgument(
        std::string(name) + what + "; kernel " +
        (variant ? variant->id : std::string("?")) + " needs " +
        std::to_string(alignment) + " (a variant built for " + bytes +
        " bytes takes it: the compile option --alignment " + bytes +
        ", or flashc bundle --alignments 16," + bytes + ")");
  }
  Result<uint64_t> extent = t.getExtentBytes();
  if (!extent)
    return Status::invalidArgument(std::string(name) + ": " + extent.message());
  return Status::success();
}

LaunchArg pointer(const void *p, uint64_t extent) {
  LaunchArg a;
  a.value = reinterpret_cast<uint64_t>(p);
  a.isPointer = true;
  a.extentBytes = p ? extent : 0;
  return a;
}

LaunchArg scalar(int64_t v) {
  LaunchArg a;
  a.value = static_cast<uint64_t>(v);
  return a;
}

} // namespace

namespace {

/// One launch of a variant's kernels over `batch` = (batch, KV head) pairs.
struct Slice {
  const char *q, *k, *v, *out, *lse;
  int64_t batch;
};

} // namespace

int64_t runtime::getCallAlignment(const AttentionCall &call) {
  int64_t alignment = kMaxGlobalAlignment;
  for (const TensorView *t : {&call.q, &call.k, &call.v, &call.out})
    if (t->rank > 0 &&
        hasWholeChunkRows(t->sizes[t->rank - 1], getElementBytes(t->dtype)))
      alignment = std::min(alignment, getTensorAlignment(*t));
  return alignment;
}

Status runtime::launchAttention(Device &device, const KernelVariant &variant,
                                const AttentionCall &original,
                                LaunchReport *report) {
  AttentionCall call = original;
  const AttentionQuery &q = variant.query;
  // Where each of the kernels' parameters is among the values this
  // runtime passes (getKnownKernelParameters).
  const std::vector<KernelParameter> &known = getKnownKernelParameters();
  std::vector<size_t> order;
  for (const KernelParameter &p : variant.parameters) {
    size_t i = 0;
    while (i < known.size() && known[i].name != p.name)
      ++i;
    if (i == known.size())
      return Status::make(ErrorCode::InvalidBundle,
                          "variant '" + variant.id + "': kernel argument '" +
                              p.name + "' is not one this runtime passes");
    order.push_back(i);
  }
  for (auto [t, name] : {std::pair<const TensorView *, const char *>{
                             &call.q, "query"},
                         {&call.k, "key"},
                         {&call.v, "value"},
                         {&call.out, "output"}})
    if (t->rank != 4)
      return Status::invalidArgument(std::string(name) +
                           " must have rank 4 [B, H, N, D], got rank " +
                           std::to_string(t->rank));
  int64_t batch = call.q.sizes[0], heads = call.q.sizes[1];
  int64_t seqQ = call.q.sizes[2], kvHeads = call.k.sizes[1];
  int64_t seqKV = call.k.sizes[2];
  if (batch <= 0 || seqQ <= 0 || seqKV <= 0 || kvHeads <= 0)
    return Status::invalidArgument("batch, KV heads, query length and key length must "
                         "be positive, got B=" +
                         std::to_string(batch) + " Hkv=" +
                         std::to_string(kvHeads) + " Nq=" +
                         std::to_string(seqQ) + " Nk=" + std::to_string(seqKV));
  AttentionProblem limits = getVariantProblem(q, batch, seqQ, seqKV);
  limits.heads = heads;
  limits.kvHeads = kvHeads;
  std::string problem = checkProblemSizes(limits);
  if (!problem.empty())
    return Status::invalidArgument(problem);
  // The kernels scale in f32, and take max(scale s) = scale max(s): the
  // scale must be a positive normal f32.
  const double scale = call.scale != 0
                           ? call.scale
                           : 1.0 / std::sqrt(static_cast<double>(q.headDim));
  const float scale32 = static_cast<float>(scale);
  if (!std::isfinite(scale) || !(scale > 0) || !std::isfinite(scale32) ||
      scale32 < std::numeric_limits<float>::min())
    return Status::invalidArgument(
        "scale must be finite, positive and a normal f32 (1.2e-38 to "
        "3.4e+38; 0 selects 1/sqrt(D)), got " +
        std::to_string(call.scale));
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &scale32, sizeof(scaleBits));
  if (heads != q.group * kvHeads)
    return Status::invalidArgument("the kernel packs " + std::to_string(q.group) +
                         " query head(s) per KV head, but the call has " +
                         std::to_string(heads) + " query heads over " +
                         std::to_string(kvHeads) + " KV heads");
  // Rows of whole 16-byte units are moved up to the variant's alignment
  // at a time: their addresses and strides must have it. Other rows go
  // element by element.
  int64_t eb = getElementBytes(q.dtype);
  int64_t alignD = getRowAlignment(q.headDim, eb, variant.alignment),
          alignDv = getRowAlignment(q.headDimV, eb, variant.alignment);
  if (Status s = checkTensor(call.q, "query", q.dtype,
                             {batch, heads, seqQ, q.headDim}, alignD, &variant))
    return s;
  if (Status s =
          checkTensor(call.k, "key", q.dtype,
                      {batch, kvHeads, seqKV, q.headDim}, alignD, &variant))
    return s;
  if (Status s =
          checkTensor(call.v, "value", q.dtype,
                      {batch, kvHeads, seqKV, q.headDimV}, alignDv, &variant))
    return s;
  if (Status s =
          checkTensor(call.out, "output", q.dtype,
                      {batch, heads, seqQ, q.headDimV}, alignDv, &variant))
    return s;
  if (q.withLse != (call.lse != nullptr))
    return Status::invalidArgument(q.withLse
                             ? "the kernel writes an LSE buffer but none "
                               "was given"
                             : "an LSE buffer was given but the kernel has "
                               "no LSE output");
  if (call.lse) {
    if (Status s = checkTensor(*call.lse, "lse", ElementType::F32,
                               {batch, heads, seqQ}, 0))
      return s;
    // Contiguous, but for the strides of dimensions of one element, which
    // the kernels never use.
    const TensorView &l = *call.lse;
    if ((heads != 1 && l.strides[1] != seqQ) ||
        (batch != 1 && l.strides[0] != heads * seqQ))
      return Status::invalidArgument("lse must be contiguous, got strides " +
                           stridesString(l));
  }
  // The kernels read their inputs while they write: an output over an
  // input (or over the other output) gives wrong results.
  {
    const std::pair<const TensorView *, const char *> tensors[] = {
        {&call.q, "query"}, {&call.k, "key"},     {&call.v, "value"},
        {&call.out, "output"}, {call.lse, "lse"}};
    for (size_t i = 3; i < 5; ++i) {
      const TensorView *o = tensors[i].first;
      if (!o)
        continue;
      for (size_t j = 0; j < 5; ++j) {
        const TensorView *t = tensors[j].first;
        if (j == i || !t)
          continue;
        if (rangesOverlap(o->data, *o->getExtentBytes(), t->data,
                          *t->getExtentBytes()))
          return Status::invalidArgument(
              std::string(tensors[i].second) + " overlaps " +
              tensors[j].second +
              " in memory; outputs must not share memory with another "
              "tensor of the call");
      }
    }
  }
  // The tensors are checked (their messages give the caller's strides);
  // what the kernels take of them has dense strides for dimensions of one
  // element.
  for (TensorView *t : {&call.q, &call.k, &call.v, &call.out})
    *t = withUnitDimensionStrides(*t);
  if (call.splits < 0)
    return Status::invalidArgument("splits must be non-negative, got " +
                         std::to_string(call.splits));
  if (!q.decode && call.splits > 1)
    return Status::invalidArgument("a prefill kernel does not split its KV loop (" +
                         std::to_string(call.splits) + " splits asked)");

  // The kernels see [B', G, N, D] query/output and [B', 1, N, D] key/value
  // blocks with B' = (batch, KV head) pairs. When every tensor's batch
  // stride is Hkv times its stride per KV head, one launch covers B x Hkv;
  // otherwise each batch entry is a launch over its Hkv heads.
  auto folds = [&](const TensorView &t, int64_t headsPerKV) {
    return batch == 1 || t.strides[0] == kvHeads * headsPerKV * t.strides[1];
  };
  bool fold = folds(call.q, q.group) && folds(call.out, q.group) &&
              folds(call.k, 1) && folds(call.v, 1);
  std::vector<Slice> slices;
  auto base = [](const TensorView &t, int64_t b, int64_t bytes) {
    return static_cast<const char *>(t.data) + b * t.strides[0] * bytes;
  };
  const char *lse = call.lse ? static_cast<const char *>(call.lse->data) : nullptr;
  if (fold) {
    slices.push_back({base(call.q, 0, eb), base(call.k, 0, eb),
                      base(call.v, 0, eb), base(call.out, 0, eb), lse,
                      batch * kvHeads});
  } else {
    for (int64_t b = 0; b < batch; ++b)
      slices.push_back({base(call.q, b, eb), base(call.k, b, eb),
                        base(call.v, b, eb), base(call.out, b, eb),
                        lse ? lse + b * heads * seqQ * 4 : nullptr, kvHeads});
  }
  int64_t kernelBatch = slices.front().batch;

  // The split count of a decode variant: the CTA x wave model over the
  // whole call, unless the caller fixes it; every split keeps at least one
  // KV block.
  int64_t splits = getLaunchSplitCount(device, variant, batch * kvHeads,
                                       seqQ, seqKV, call.splits);

  GridSizes sizes{kernelBatch, seqQ, seqKV, splits};
  // Grids beyond a launch's 2^31 - 1 CTAs come from the call's sizes; a
  // grid of no CTA from a kernel's factors.
  auto grid = [&](const KernelEntry &e) -> Result<int64_t> {
    Result<int64_t> g = e.grid.evaluate(sizes);
    if (!g)
      return g.status();
    if (*g <= 0)
      return Status::error("kernel " + e.name + ": a grid of " +
                           std::to_string(*g) + " CTAs");
    if (*g > 0x7fffffff)
      return Status::invalidArgument(
          "kernel " + e.name + ": a grid of " + std::to_string(*g) +
          " CTAs is more than a launch allows (2^31 - 1)");
    // Every CTA of flashc's kernels owns at least one query row (of one
    // split): a grid that asks for more CTAs than that is not one of
    // them (a bundle claiming 2^31 - 1 CTAs kept the simulator busy for
    // days).
    __int128 rows = static_cast<__int128>(kernelBatch) * q.group * seqQ;
    if (*g > rows * splits)
      return Status::error("kernel " + e.name + ": its grid '" +
                           e.grid.str() + "' asks for " + std::to_string(*g) +
                           " CTAs for " +
                           std::to_string(static_cast<int64_t>(rows)) +
                           " query rows and " + std::to_string(splits) +
                           " split(s); flashc's kernels launch at most one "
                           "CTA a row and split");
    return g;
  };
  Result<int64_t> forwardGrid = grid(variant.forward);
  if (!forwardGrid)
    return forwardGrid.status();
  // A forward kernel that writes the output itself at one split needs
  // neither the combine nor the workspace then.
  bool combine = variant.combine &&
                 !(splits == 1 && variant.forward.finalAtOneSplit);
  int64_t combineGrid = 0;
  if (combine) {
    Result<int64_t> g = grid(*variant.combine);
    if (!g)
      return g.status();
    combineGrid = *g;
  }

  // The combine kernel divides row indices in 32 bits.
  if (q.decode && static_cast<__int128>(kernelBatch) * q.group * seqQ >=
                      (static_cast<__int128>(1) << 31))
    return Status::invalidArgument("a decode call of " + std::to_string(kernelBatch) +
                         " x " + std::to_string(q.group) + " x " +
                         std::to_string(seqQ) +
                         " rows exceeds the combine kernel's 2^31 rows");

  // Workspace of the split partials, reused by every launch (they are
  // ordered on one stream): [S, B', G, Nq, Dv] and [S, B', G, Nq] f32.
  void *wsOut = nullptr, *wsLse = nullptr;
  uint64_t wsOutBytes = 0, wsLseBytes = 0;
  if (combine) {
    __int128 rows =
        static_cast<__int128>(splits) * kernelBatch * q.group * seqQ;
    __int128 bytes = rows * q.headDimV * 4;
    if (bytes > (static_cast<__int128>(1) << 62))
      return Status::invalidArgument("the split workspace overflows");
    wsOutBytes = static_cast<uint64_t>(bytes);
    wsLseBytes = static_cast<uint64_t>(rows * 4);
    Result<void *> a = device.allocate(wsOutBytes + wsLseBytes, call.stream);
    if (!a)
      return a.status();
    wsOut = *a;
    wsLse = static_cast<char *>(*a) + wsOutBytes;
  }

  // Extents of one slice's views, for the simulator's bounds checking.
  auto extent = [&](const TensorView &t, int64_t headsPerKV) {
    TensorView v = t;
    v.rank = 3;
    v.sizes[0] = kernelBatch * headsPerKV;
    v.strides[0] = t.strides[1];
    v.sizes[1] = t.sizes[2];
    v.strides[1] = t.strides[2];
    v.sizes[2] = t.sizes[3];
    v.strides[2] = 1;
    return *v.getExtentBytes();
  };
  Status status;
  for (const Slice &slice : slices) {
    // Every value this runtime passes, in getKnownKernelParameters' order;
    // the kernels take those their manifest names, in its order.
    std::vector<LaunchArg> values = {
        pointer(slice.q, extent(call.q, q.group)),
        pointer(slice.k, extent(call.k, 1)),
        pointer(slice.v, extent(call.v, 1)),
        pointer(slice.out, extent(call.out, q.group)),
        pointer(slice.lse,
                static_cast<uint64_t>(kernelBatch * q.group * seqQ * 4)),
        pointer(wsOut, wsOutBytes),
        pointer(wsLse, wsLseBytes),
        scalar(kernelBatch),
        scalar(seqQ),
        scalar(seqKV),
        scalar(splits)};
    // Strides of the kernel views: (batch', head, row).
    for (auto [t, headsPerKV] :
         {std::pair<const TensorView *, int64_t>{&call.q, q.group},
          {&call.k, 1},
          {&call.v, 1},
          {&call.out, q.group}}) {
      values.push_back(scalar(headsPerKV * t->strides[1]));
      values.push_back(scalar(t->strides[1]));
      values.push_back(scalar(t->strides[2]));
    }
    // The f32 in the low bytes: a 4-byte parameter takes those.
    values.push_back(scalar(scaleBits));
    // The tensor maps of a kernel that copies by TMA: each tensor as
    // [B', heads, N, D], dimensions innermost first, with the box its
    // manifest gives. Rows of whole 16-byte units (the only ones such
    // kernels are built for) have the 16-byte strides and base a map
    // needs; checkTensor required them above.
    TensorMapBytes maps[4];
    static const char *const tensors[] = {"q", "k", "v", "out"};
    static const char *const names[] = {"query", "key", "value", "output"};
    const TensorView *views[] = {&call.q, &call.k, &call.v, &call.out};
    const char *bases[] = {slice.q, slice.k, slice.v, slice.out};
    for (const KernelParameter &p : variant.parameters) {
      if (!p.isTensorMap())
        continue;
      // The manifest's loader admits q, k, v and out only.
      int which = static_cast<int>(
          std::find(std::begin(tensors), std::end(tensors), p.tensor) -
          std::begin(tensors));
      if (which == 4) {
        status = Status::make(ErrorCode::InvalidBundle,
                              "variant '" + variant.id + "': tensor map '" +
                                  p.name + "' of an unknown tensor");
        break;
      }
      const TensorView &t = *views[which];
      int64_t headsPerKV = which == 0 || which == 3 ? q.group : 1;
      TensorMapSpec spec;
      spec.type = q.dtype;
      spec.rank = 4;
      spec.address = bases[which];
      spec.dims[0] = static_cast<uint64_t>(t.sizes[3]);
      spec.dims[1] = static_cast<uint64_t>(t.sizes[2]);
      spec.dims[2] = static_cast<uint64_t>(headsPerKV);
      spec.dims[3] = static_cast<uint64_t>(kernelBatch);
      spec.strides[0] = static_cast<uint64_t>(t.strides[2] * eb);
      spec.strides[1] = static_cast<uint64_t>(t.strides[1] * eb);
      spec.strides[2] = static_cast<uint64_t>(headsPerKV * t.strides[1] * eb);
      for (size_t d = 0; d < p.box.size() && d < 5; ++d)
        spec.box[d] = static_cast<uint32_t>(p.box[d]);
      // The swizzle spans the box's row: 32, 64 or 128 bytes (1, 2, 3), as
      // the manifest's loader checked.
      uint64_t boxRowBytes = spec.box[0] * static_cast<uint64_t>(eb);
      spec.swizzle = boxRowBytes == 32 ? 1 : boxRowBytes == 64 ? 2 : 3;
      Result<TensorMapBytes> map = device.encodeTensorMap(spec);
      if (!map) {
        status = Status::invalidArgument(
            "kernel " + variant.forward.name +
            " copies by TMA: the tensor "
            "map of " +
            names[which] + " could not be built (" + map.message() +
            "); a variant built with --tma off or a lower --alignment "
            "copies without one");
        break;
      }
      maps[which] = *map;
    }
    if (status)
      break;
    for (const TensorMapBytes &map : maps) {
      LaunchArg a;
      a.tensorMap = &map;
      values.push_back(a);
    }
    std::vector<LaunchArg> args;
    for (size_t i : order)
      args.push_back(values[i]);
    status = device.launch(variant, variant.forward,
                           static_cast<uint64_t>(*forwardGrid), args,
                           call.stream);
    if (!status && combine)
      status = device.launch(variant, *variant.combine,
                             static_cast<uint64_t>(combineGrid), args,
                             call.stream);
    if (status)
      break;
  }
  if (wsOut) {
    Status freed = device.release(wsOut, call.stream);
    if (!status && freed)
      status = freed;
  }
  if (status)
    return status;
  if (report) {
    report->launches = static_cast<int64_t>(slices.size());
    report->splits = splits;
    report->forwardGrid = *forwardGrid;
    report->combineGrid = combineGrid;
  }
  return Status::success();
}
