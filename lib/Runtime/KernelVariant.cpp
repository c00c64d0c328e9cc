//===- KernelVariant.cpp - Kernel metadata, grids and bundles -------------===//
//
// The runtime's view of a compiled kernel: its manifest entry (JSON), the
// grids the compiler recorded, and bundle directories.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"

#include "flashc/Support/Files.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Core/GPUTargets.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace flashc;
using namespace flashc::runtime;

//===----------------------------------------------------------------------===//
// Element types and tensors
//===----------------------------------------------------------------------===//

TensorView TensorView::contiguous(void *data, ElementType dtype,
                                  std::initializer_list<int64_t> sizes) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(sizes.size());
  int i = 0;
  for (int64_t s : sizes)
    t.sizes[i++] = s;
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.sizes[d];
  }
  return t;
}

Result<uint64_t> TensorView::getExtentBytes() const {
  for (int d = 0; d < rank; ++d)
    if (sizes[d] <= 0)
      return uint64_t(0);
  std::optional<int64_t> bytes =
      getStridedExtentBytes(sizes, strides, rank, getElementBytes(dtype));
  if (!bytes)
    return Status::invalidArgument("a tensor of " + std::to_string(rank) +
                                   " dimensions addresses more than 2^60 "
                                   "bytes");
  return static_cast<uint64_t>(*bytes);
}

//===----------------------------------------------------------------------===//
// Manifest entries
//===----------------------------------------------------------------------===//

namespace {

Status missing(const std::string &what) {
  return Status::error("manifest: missing or malformed '" + what + "'");
}

/// `v` as an integer: only integral values that fit in int64 are accepted.
bool getIntValue(const JsonValue &v, int64_t &out) {
  if (v.getKind() != JsonValue::Kind::Number)
    return false;
  double d = v.getNumber();
  // Only integral values that fit in int64 are accepted; checking before
  // converting keeps out-of-range doubles (1e300) well defined.
  if (!(d >= -9.2e18 && d <= 9.2e18) || d != static_cast<double>(
                                                static_cast<int64_t>(d)))
    return false;
  out = static_cast<int64_t>(d);
  return true;
}

bool getInt(const JsonValue &obj, const char *key, int64_t &out) {
  const JsonValue *v = obj.get(key);
  return v && getIntValue(*v, out);
}

bool getBool(const JsonValue &obj, const char *key, bool &out) {
  const JsonValue *v = obj.get(key);
  if (!v || v->getKind() != JsonValue::Kind::Bool)
    return false;
  out = v->getBool();
  return true;
}

bool getString(const JsonValue &obj, const char *key, std::string &out) {
  const JsonValue *v = obj.get(key);
  if (!v || v->getKind() != JsonValue::Kind::String)
    return false;
  out = v->getString();
  return true;
}

/// The 64-bit FNV-1a hash of `data`, continuing from `h`.
uint64_t fnv1a(const std::string &data, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

/// The 64-bit FNV-1a hash of `data`, as 16 hex digits.
std::string fnv1aHex(const std::string &data) {
  uint64_t h = fnv1a(data);
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(h));
  return text;
}

} // namespace

JsonValue KernelEntry::toJson() const {
  JsonValue::Object o;
  o["name"] = name;
  o["grid"] = grid.toJson();
  o["block"] = block;
  o["shared_bytes"] = sharedBytes;
  o["registers"] = registers;
  o["spill_bytes"] = spillBytes;
  if (finalAtOneSplit)
    o["final_at_one_split"] = true;
  if (programmaticLaunch)
    o["programmatic_launch"] = true;
  return JsonValue(std::move(o));
}

namespace {

/// A PTX identifier: [A-Za-z_$%][A-Za-z0-9_$]*, bounded.
bool isPtxIdentifier(const std::string &name) {
  if (name.empty() || name.size() > 256 ||
      !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_' ||
        name[0] == '$'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'))
      return false;
  return true;
}

/// The value of `key` of `obj`, or an error naming it when it is missing,
/// not an integer or outside [lo, hi].
Status getBounded(const JsonValue &obj, const char *key, int64_t lo,
                  int64_t hi, int64_t &out) {
  if (!getInt(obj, key, out))
    return missing(key);
  if (out < lo || out > hi)
    return Status::error("manifest: '" + std::string(key) + "' is " +
                         std::to_string(out) + ", outside " +
                         std::to_string(lo) + " to " + std::to_string(hi));
  return Status::success();
}

} // namespace

Result<KernelEntry> KernelEntry::fromJson(const JsonValue &v) {
  KernelEntry e;
  if (!v.isObject())
    return Status::error("manifest: a kernel entry is not an object");
  if (!getString(v, "name", e.name))
    return missing("name");
  if (!isPtxIdentifier(e.name))
    return Status::error("manifest: kernel name '" +
                         escapeForMessage(e.name) +
                         "' is not a PTX identifier");
  const JsonValue *grid = v.get("grid");
  if (!grid)
    return missing("grid");
  if (grid->getKind() == JsonValue::Kind::String)
    return Status::error("manifest: kernel " + e.name +
                         " has a grid formula in text: it was built by an "
                         "older flashc (grids are now lists of factors); "
                         "rebuild the bundle with this flashc");
  Result<KernelGrid> parsedGrid = KernelGrid::fromJson(*grid);
  if (!parsedGrid)
    return Status::error(parsedGrid.message() + " (kernel " + e.name + ")");
  e.grid = *parsedGrid;
  if (Status s = getBounded(v, "block", 1, 1024, e.block))
    return s;
  // The largest opt-in shared memory of any target; the variant checks its
  // own target's.
  if (Status s = getBounded(v, "shared_bytes", 0, 227 * 1024, e.sharedBytes))
    return s;
  if (v.get("registers"))
    if (Status s = getBounded(v, "registers", -1, 255, e.registers))
      return s;
  if (v.get("spill_bytes"))
    if (Status s = getBounded(v, "spill_bytes", -1, int64_t(1) << 30,
                              e.spillBytes))
      return s;
  if (v.get("final_at_one_split") &&
      !getBool(v, "final_at_one_split", e.finalAtOneSplit))
    return Status::error("manifest: kernel " + e.name +
                         ": 'final_at_one_split' is not a boolean");
  if (v.get("programmatic_launch") &&
      !getBool(v, "programmatic_launch", e.programmaticLaunch))
    return Status::error("manifest: kernel " + e.name +
                         ": 'programmatic_launch' is not a boolean");
  return e;
}

const std::vector<KernelParameter> &runtime::getKnownKernelParameters() {
  static const std::vector<KernelParameter> parameters = [] {
    std::vector<KernelParameter> p;
    for (const char *name :
         {"q", "k", "v", "out", "lse", "ws_out", "ws_lse", "B", "Nq", "Nk",
          "splits", "q_stride_b", "q_stride_h", "q_stride_n", "k_stride_b",
          "k_stride_h", "k_stride_n", "v_stride_b", "v_stride_h",
          "v_stride_n", "out_stride_b", "out_stride_h", "out_stride_n"})
      p.push_back({name, "", 64});
    p.push_back({"scale", "", 32});
    for (const char *name : {"q_map", "k_map", "v_map", "out_map"})
      p.push_back({name, "", 1024});
    return p;
  }();
  return parameters;
}

AttentionQuery AttentionQuery::of(const AttentionProblem &problem,
                                  const std::string &target) {
  AttentionQuery q;
  q.target = target;
  q.dtype = problem.dtype;
  q.group = problem.group();
  q.headDim = problem.headDim;
  q.headDimV = problem.valueDim();
  q.mask = problem.mask;
  q.withLse = problem.withLse;
  q.decode = problem.seqQ <= kMaxDecodeSeqQ;
  return q;
}

AttentionProblem runtime::getVariantProblem(const AttentionQuery &query,
                                            int64_t batch, int64_t seqQ,
                                            int64_t seqKV) {
  AttentionProblem p;
  p.batch = batch;
  p.heads = query.group;
  p.kvHeads = 1;
  p.seqQ = seqQ;
  p.seqKV = seqKV;
  p.headDim = query.headDim;
  p.headDimV = query.headDimV;
  p.dtype = query.dtype;
  p.mask = query.mask;
  p.withLse = query.withLse;
  return p;
}

uint64_t KernelVariant::computeImageHash() const {
  // The PTX's length first, so that no split of the bytes between the
  // two images hashes alike.
  uint64_t h = fnv1a(std::to_string(ptx.size()) + ":");
  h = fnv1a(cubin, fnv1a(ptx, h));
  // 0 means "not set".
  return h ? h : 1;
}

JsonValue KernelVariant::toJson() const {
  JsonValue::Object o;
  o["id"] = id;
  o["target"] = query.target;
  o["dtype"] = stringify(query.dtype);
  o["group"] = query.group;
  o["head_dim"] = query.headDim;
  o["head_dim_v"] = query.headDimV;
  o["mask"] = query.mask.str();
  o["lse"] = query.withLse;
  o["decode"] = query.decode;
  o["block_q"] = blockQ;
  o["block_kv"] = blockKV;
  o["alignment"] = alignment;
  o["ptx"] = id + ".ptx";
  o["ptx_fnv1a"] = fnv1aHex(ptx);
  if (!cubin.empty()) {
    o["cubin"] = id + ".cubin";
    o["cubin_fnv1a"] = fnv1aHex(cubin);
  }
  o["config"] = config;
  o["compile_seconds"] = compileSeconds;
  JsonValue::Object kernels;
  kernels["forward"] = forward.toJson();
  if (combine)
    kernels["combine"] = combine->toJson();
  o["kernels"] = JsonValue(std::move(kernels));
  JsonValue::Array arguments;
  for (const KernelParameter &p : parameters) {
    JsonValue::Object a;
    a["name"] = p.name;
    a["meaning"] = p.meaning;
    a["bits"] = static_cast<int64_t>(p.bits);
    if (p.isTensorMap()) {
      a["tensor"] = p.tensor;
      JsonValue::Array box;
      for (int64_t d : p.box)
        box.push_back(JsonValue(d));
      a["box"] = JsonValue(std::move(box));
    }
    arguments.push_back(JsonValue(std::move(a)));
  }
  o["arguments"] = JsonValue(std::move(arguments));
  return JsonValue(std::move(o));
}

Result<KernelVariant> KernelVariant::fromJson(const JsonValue &v) {
  KernelVariant k;
  if (!v.isObject())
    return Status::error("manifest: a variant is not an object");
  std::string dtype;
  if (!getString(v, "id", k.id))
    return missing("id");
  if (Status s = checkVariantId(k.id))
    return s;
  if (!getString(v, "target", k.query.target))
    return missing("target");
  const GPUTargetFigures *target = findGPUTarget(k.query.target);
  if (!target)
    return Status::error("manifest: variant '" + k.id + "' has target '" +
                         escapeForMessage(k.query.target) +
                         "'; this runtime runs sm_80 and sm_90a");
  if (!getString(v, "dtype", dtype) || !parseElementType(dtype))
    return missing("dtype");
  k.query.dtype = *parseElementType(dtype);
  if (Status s = getBounded(v, "group", 1, kMaxGroup, k.query.group))
    return s;
  if (Status s = getBounded(v, "head_dim", 1, kMaxGPUHeadDim, k.query.headDim))
    return s;
  if (Status s =
          getBounded(v, "head_dim_v", 1, kMaxGPUHeadDim, k.query.headDimV))
    return s;
  std::string mask;
  if (!getString(v, "mask", mask))
    return missing("mask");
  std::optional<Mask> parsedMask = Mask::parse(mask);
  if (!parsedMask)
    return Status::error("manifest: variant '" + k.id + "' has mask '" +
                         escapeForMessage(mask) + "'; this runtime knows " +
                         getMaskKindNames());
  k.query.mask = *parsedMask;
  if (!getBool(v, "lse", k.query.withLse) ||
      !getBool(v, "decode", k.query.decode))
    return missing("lse, decode");
  // Kernels of older runtimes had the softmax scale in their code; theirs
  // take it as an argument, so a manifest naming one is from a runtime
  // whose kernels this one cannot call.
  if (v.get("scale"))
    return Status::error("manifest: variant '" + k.id +
                         "' has a fixed softmax scale: it was built for an "
                         "older runtime (kernels now take the scale as an "
                         "argument); rebuild the bundle with this flashc");
  if (Status s = getBounded(v, "block_q", 1, kMaxBlockSize, k.blockQ))
    return s;
  if (Status s = getBounded(v, "block_kv", 1, kMaxBlockSize, k.blockKV))
    return s;
  // Manifests that predate it hold 16-byte aligned kernels only.
  if (v.get("alignment")) {
    bool integer = getInt(v, "alignment", k.alignment);
    if (!integer || !isGlobalAlignment(k.alignment))
      return Status::error("manifest: variant '" + k.id + "' has 'alignment' " +
                           (integer ? std::to_string(k.alignment)
                                    : std::string("that is not an integer")) +
                           "; expected 16, 8, 4 or 2 bytes");
  }
  if (v.get("config") && !getString(v, "config", k.config))
    return missing("config");
  if (const JsonValue *t = v.get("compile_seconds")) {
    if (t->getKind() != JsonValue::Kind::Number ||
        !std::isfinite(t->getNumber()) || t->getNumber() < 0)
      return missing("compile_seconds");
    k.compileSeconds = t->getNumber();
  }
  const JsonValue *kernels = v.get("kernels");
  if (!kernels || !kernels->isObject() || !kernels->get("forward"))
    return missing("kernels.forward");
  Result<KernelEntry> fwd = KernelEntry::fromJson(*kernels->get("forward"));
  if (!fwd)
    return fwd.status();
  k.forward = *fwd;
  if (const JsonValue *c = kernels->get("combine")) {
    Result<KernelEntry> comb = KernelEntry::fromJson(*c);
    if (!comb)
      return comb.status();
    k.combine = *comb;
  }
  for (const KernelEntry *e : {&k.forward, k.combine ? &*k.combine : nullptr})
    if (e && e->sharedBytes > target->sharedBytesPerBlock)
      return Status::error(
          "manifest: kernel " + e->name + " of variant '" + k.id + "' asks " +
          std::to_string(e->sharedBytes) + " bytes of shared memory; " +
          k.query.target + " allows " +
          std::to_string(target->sharedBytesPerBlock));
  if (k.combine && k.combine->name == k.forward.name)
    return Status::error("manifest: variant '" + k.id +
                         "' names one kernel twice");
  if (k.query.decode != k.combine.has_value())
    return Status::error("manifest: variant '" + k.id +
                         "' must have a combine kernel exactly when it is a "
                         "decode variant");
  // The kernels' parameters, each one this runtime passes, at its width.
  const JsonValue *arguments = v.get("arguments");
  if (!arguments || !arguments->isArray() ||
      arguments->getArray().size() > getKnownKernelParameters().size())
    return missing("arguments");
  for (const JsonValue &a : arguments->getArray()) {
    KernelParameter p;
    int64_t bits = 0;
    if (!getString(a, "name", p.name) || !getString(a, "meaning", p.meaning) ||
        !getInt(a, "bits", bits))
      return missing("arguments");
    p.bits = static_cast<int>(bits);
    const KernelParameter *known = nullptr;
    for (const KernelParameter &k : getKnownKernelParameters())
      if (k.name == p.name)
        known = &k;
    if (!known)
      return Status::error("manifest: the kernels of variant '" + k.id +
                           "' take an argument '" + escapeForMessage(p.name) +
                           "' this runtime does not pass (rebuild the bundle "
                           "with this flashc)");
    if (known->bits != bits)
      return Status::error("manifest: argument '" + p.name + "' of variant '" +
                           k.id + "' has " + std::to_string(bits) +
                           " bits; this runtime passes " +
                           std::to_string(known->bits));
    for (const KernelParameter &q : k.parameters)
      if (q.name == p.name)
        return Status::error("manifest: variant '" + k.id +
                             "' names argument '" + p.name + "' twice");
    // A tensor map's tensor is the one its name says, and its box has 4
    // dimensions of 1 to 256 elements.
    if (known->bits == 1024) {
      const JsonValue *box = a.get("box");
      if (!getString(a, "tensor", p.tensor) || p.tensor + "_map" != p.name ||
          !box || !box->isArray() || box->getArray().size() != 4)
        return Status::error("manifest: tensor map argument '" + p.name +
                             "' of variant '" + k.id +
                             "' needs its 'tensor' and a 4-dimensional "
                             "'box'");
      for (const JsonValue &d : box->getArray()) {
        int64_t n = 0;
        if (!getIntValue(d, n) || n < 1 || n > 256)
          return Status::error("manifest: tensor map argument '" + p.name +
                               "' of variant '" + k.id +
                               "' has a box dimension that is not 1 to "
                               "256");
        p.box.push_back(n);
      }
      // The map swizzles its box's rows (Attention.cpp): a row of 32, 64
      // or 128 bytes.
      int64_t rowBytes = p.box[0] * getElementBytes(k.query.dtype);
      if (flashc::getWarpgroupSwizzleBytes(rowBytes) != rowBytes)
        return Status::error("manifest: tensor map argument '" + p.name +
                             "' of variant '" + k.id + "' has a box row of " +
                             std::to_string(rowBytes) +
                             " bytes; a swizzled box's row is 32, 64 or 128 "
                             "bytes");
    }
    k.parameters.push_back(std::move(p));
  }
  // A tensor map needs 16-byte aligned tensors: a kernel taking one is
  // built for them.
  if (k.alignment < kMaxGlobalAlignment)
    for (const KernelParameter &p : k.parameters)
      if (p.isTensorMap())
        return Status::error("manifest: variant '" + k.id + "' has '" + p.name +
                             "', a tensor map, but 'alignment' " +
                             std::to_string(k.alignment) +
                             ": tensor maps need 16-byte aligned tensors");
  return k;
}

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

std::optional<int64_t> GridSizes::lookup(const std::string &name) const {
  if (name == "B")
    return batch;
  if (name == "Nq")
    return seqQ;
  if (name == "Nk")
    return seqKV;
  if (name == "splits")
    return splits;
  return std::nullopt;
}

Result<int64_t> KernelGrid::evaluate(const GridSizes &sizes) const {
  auto fail = [&](const std::string &what) {
    return Status::error("grid " + escapeForMessage(str()) + ": " + what);
  };
  int64_t grid = 1;
  for (const GridFactor &f : factors) {
    int64_t product = 1;
    for (const GridFactor::Operand &o : f.product) {
      int64_t v = o.value;
      if (!o.size.empty()) {
        std::optional<int64_t> size = sizes.lookup(o.size);
        if (!size)
          return fail("unknown size '" + escapeForMessage(o.size) + "'");
        v = *size;
      }
      if (v < 0)
        return fail(o.size + " is " + std::to_string(v));
      if (__builtin_mul_overflow(product, v, &product))
        return fail("overflows 64 bits");
    }
    if (f.ceilDiv < 1)
      return fail("division by " + std::to_string(f.ceilDiv));
    int64_t factor = product / f.ceilDiv + (product % f.ceilDiv != 0);
    if (__builtin_mul_overflow(grid, factor, &grid))
      return fail("overflows 64 bits");
  }
  return grid;
}

std::string KernelGrid::str() const {
  std::string text;
  for (const GridFactor &f : factors) {
    if (!text.empty())
      text += "*";
    std::string product;
    for (const GridFactor::Operand &o : f.product)
      product += (product.empty() ? "" : "*") +
                 (o.size.empty() ? std::to_string(o.value) : o.size);
    text += f.ceilDiv == 1 ? product
                           : "ceildiv(" + product + "," +
                                 std::to_string(f.ceilDiv) + ")";
  }
  return text;
}

JsonValue KernelGrid::toJson() const {
  JsonValue::Array array;
  for (const GridFactor &f : factors) {
    JsonValue::Array product;
    for (const GridFactor::Operand &o : f.product)
      product.push_back(o.size.empty() ? JsonValue(o.value) : JsonValue(o.size));
    JsonValue::Object factor;
    factor["product"] = JsonValue(std::move(product));
    if (f.ceilDiv != 1)
      factor["ceildiv"] = f.ceilDiv;
    array.push_back(JsonValue(std::move(factor)));
  }
  return JsonValue(std::move(array));
}

Result<KernelGrid> KernelGrid::fromJson(const JsonValue &value) {
  auto fail = [](const std::string &what) {
    return Status::error("manifest: grid: " + what);
  };
  if (!value.isArray() || value.getArray().empty() ||
      value.getArray().size() > kMaxGridFactors)
    return fail("expected an array of 1 to " + std::to_string(kMaxGridFactors) +
                " factors");
  KernelGrid grid;
  GridSizes known;
  for (const JsonValue &f : value.getArray()) {
    GridFactor factor;
    const JsonValue *product = f.isObject() ? f.get("product") : nullptr;
    if (!product || !product->isArray() || product->getArray().empty() ||
        product->getArray().size() > kMaxGridOperands)
      return fail("a factor's 'product' is not an array of 1 to " +
                  std::to_string(kMaxGridOperands) + " operands");
    for (const JsonValue &o : product->getArray()) {
      GridFactor::Operand operand;
      if (o.getKind() == JsonValue::Kind::String) {
        operand.size = o.getString();
        if (!known.lookup(operand.size))
          return fail("'" + escapeForMessage(operand.size) +
                      "' is not a size this runtime knows (B, Nq, Nk, "
                      "splits)");
      } else {
        if (!getIntValue(o, operand.value) || operand.value < 0)
          return fail("an operand is neither a size nor a non-negative "
                      "integer");
      }
      factor.product.push_back(std::move(operand));
    }
    if (f.get("ceildiv") && (!getInt(f, "ceildiv", factor.ceilDiv) ||
                             factor.ceilDiv < 1))
      return fail("'ceildiv' is not a positive integer");
    grid.factors.push_back(std::move(factor));
  }
  return grid;
}

//===----------------------------------------------------------------------===//
// The kernel descriptor in the PTX
//===----------------------------------------------------------------------===//

namespace {

constexpr const char *kVariantTag = "// flashc-variant ";
constexpr const char *kKernelTag = "// flashc-kernel ";

std::string describeKernel(const KernelEntry &e) {
  return std::string(kKernelTag) + "name=" + e.name +
         " block=" + std::to_string(e.block) +
         " shared_bytes=" + std::to_string(e.sharedBytes) +
         (e.programmaticLaunch ? " programmatic_launch=1" : "") +
         " grid=" + e.grid.str() +
         (e.finalAtOneSplit ? " final_at_one_split=1" : "");
}

using Fields = std::vector<std::pair<std::string, std::string>>;

/// "k=v k=v ..." after a tag; `grid` takes the rest of the line.
Fields parseFields(const std::string &line, size_t from) {
  Fields fields;
  size_t pos = from;
  while (pos < line.size()) {
    size_t eq = line.find('=', pos);
    if (eq == std::string::npos)
      break;
    std::string key = line.substr(pos, eq - pos);
    size_t end = key == "grid" ? line.size() : line.find(' ', eq + 1);
    if (end == std::string::npos)
      end = line.size();
    fields.emplace_back(key, line.substr(eq + 1, end - eq - 1));
    pos = end + 1;
  }
  return fields;
}

/// The first field where `have` differs from `want`, or an empty string.
std::string firstDifference(const Fields &have, const Fields &want) {
  for (const auto &[key, value] : want) {
    auto it = std::find_if(have.begin(), have.end(),
                           [&](const auto &f) { return f.first == key; });
    if (it == have.end())
      return "the PTX does not record '" + key + "'";
    if (it->second != value)
      return "'" + key + "' is " + escapeForMessage(value) +
             " in the manifest but " + escapeForMessage(it->second) +
             " in the PTX";
  }
  if (have.size() != want.size())
    return "the PTX records other fields";
  return "";
}

/// The `.entry NAME (params) directives {` header of kernel `name` in
/// `ptx`: its parameter declarations and the text between ')' and '{'.
struct EntryHeader {
  std::vector<std::string> params;
  std::string directives;
  /// Where its body's `{` is in the PTX.
  size_t body = 0;
};

/// The first instruction of the body at `ptx[body]` (its `{`) that may
/// access global memory (a load, store, atomic, reduction, copy or
/// prefetch not of .param, .shared, .local or .const memory; generic ones
/// count) before its first unpredicated `griddepcontrol.wait`: "" when the
/// wait comes first, the instruction's text otherwise, or "(none)" when
/// the body never waits.
std::string firstAccessBeforeWait(const std::string &ptx, size_t body) {
  int depth = 0;
  size_t pos = body;
  while (pos < ptx.size()) {
    size_t end = ptx.find('\n', pos);
    if (end == std::string::npos)
      end = ptx.size();
    std::string line = ptx.substr(pos, end - pos);
    pos = end + 1;
    if (size_t comment = line.find("//"); comment != std::string::npos)
      line.erase(comment);
    for (char c : line)
      depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    size_t first = line.find_first_not_of(" \t\r");
    bool guarded =
        first != std::string::npos && line.compare(first, 1, "@") == 0;
    if (guarded)
      first = line.find_first_not_of(" \t", line.find_first_of(" \t", first));
    if (first == std::string::npos) {
      if (depth <= 0 && pos > body + 1)
        break;
      continue;
    }
    std::string op =
        line.substr(first, line.find_first_of(" \t;", first) - first);
    // A wait under a predicate may not run: it waits for nothing here.
    if (op.rfind("griddepcontrol.wait", 0) == 0 && !guarded)
      return "";
    std::string head = op.substr(0, op.find('.'));
    bool memory = head == "ld" || head == "ldu" || head == "st" ||
                  head == "atom" || head == "red" || head == "cp" ||
                  head == "prefetch" || head == "prefetchu";
    bool local = op.find(".param") != std::string::npos ||
                 op.find(".shared") != std::string::npos ||
                 op.find(".local") != std::string::npos ||
                 op.find(".const") != std::string::npos;
    if (memory && (op.find(".global") != std::string::npos || !local))
      return line.substr(first);
    if (depth <= 0)
      break;
  }
  return "(none)";
}

std::optional<EntryHeader> findEntry(const std::string &ptx,
                                     const std::string &name) {
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string::npos) {
    pos += 6;
    size_t p = pos;
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p])))
      ++p;
    if (ptx.compare(p, name.size(), name) != 0)
      continue;
    p += name.size();
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p])))
      ++p;
    if (p >= ptx.size() || ptx[p] != '(')
      continue;
    size_t close = ptx.find(')', p);
    size_t open = close == std::string::npos ? close : ptx.find('{', close);
    if (open == std::string::npos)
      return std::nullopt;
    EntryHeader header;
    std::string list = ptx.substr(p + 1, close - p - 1);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos)
        comma = list.size();
      std::string param = list.substr(start, comma - start);
      if (param.find_first_not_of(" \t\r\n") != std::string::npos)
        header.params.push_back(param);
      start = comma + 1;
    }
    header.directives = ptx.substr(close + 1, open - close - 1);
    header.body = open;
    return header;
  }
  return std::nullopt;
}

/// The numbers after `directive` in `text` (".reqntid 128, 1, 1").
std::optional<std::vector<int64_t>> directiveNumbers(const std::string &text,
                                                    const char *directive) {
  size_t pos = text.find(directive);
  if (pos == std::string::npos)
    return std::nullopt;
  pos += std::strlen(directive);
  std::vector<int64_t> numbers;
  while (numbers.size() < 3) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
    if (pos >= text.size() ||
        !std::isdigit(static_cast<unsigned char>(text[pos])))
      break;
    int64_t v = 0;
    while (pos < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[pos])) && v < 100000)
      v = v * 10 + (text[pos++] - '0');
    numbers.push_back(v);
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
    if (pos < text.size() && text[pos] == ',')
      ++pos;
    else
      break;
  }
  return numbers;
}

} // namespace

std::string runtime::getVariantDescriptor(const KernelVariant &v) {
  const AttentionQuery &q = v.query;
  std::string text =
      std::string(kVariantTag) + "target=" + q.target +
      " dtype=" + stringify(q.dtype) + " group=" + std::to_string(q.group) +
      " head_dim=" + std::to_string(q.headDim) +
      " head_dim_v=" + std::to_string(q.headDimV) +
      " causal=" + (q.mask.isCausal() ? "1" : "0") +
      " lse=" + (q.withLse ? "1" : "0") + " decode=" + (q.decode ? "1" : "0") +
      " block_q=" + std::to_string(v.blockQ) +
      " block_kv=" + std::to_string(v.blockKV) +
      // Only kernels built for less than 16 bytes say it (older ones
      // were all built for 16).
      (v.alignment != kMaxGlobalAlignment
           ? " alignment=" + std::to_string(v.alignment)
           : std::string()) +
      "\n";
  text += describeKernel(v.forward) + "\n";
  if (v.combine)
    text += describeKernel(*v.combine) + "\n";
  return text;
}

Status runtime::checkVariantAgainstPTX(const KernelVariant &v) {
  auto fail = [&](const std::string &what) {
    return Status::error("variant '" + escapeForMessage(v.id) +
                         "': the manifest disagrees with its PTX: " + what);
  };
  // The descriptor the compiler wrote: one variant line, one line per
  // kernel, each equal to what the manifest says.
  std::vector<std::string> variantLines, kernelLines;
  size_t pos = 0;
  while (pos < v.ptx.size()) {
    size_t end = v.ptx.find('\n', pos);
    if (end == std::string::npos)
      end = v.ptx.size();
    std::string line = v.ptx.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.rfind(kVariantTag, 0) == 0)
      variantLines.push_back(line);
    else if (line.rfind(kKernelTag, 0) == 0)
      kernelLines.push_back(line);
    pos = end + 1;
  }
  if (variantLines.size() != 1)
    return fail("the PTX holds " + std::to_string(variantLines.size()) +
                " flashc-variant descriptors, expected 1 (not a kernel "
                "built by this flashc)");
  std::string want = getVariantDescriptor(v);
  Fields wantVariant =
      parseFields(want.substr(0, want.find('\n')), std::strlen(kVariantTag));
  std::string diff = firstDifference(
      parseFields(variantLines[0], std::strlen(kVariantTag)), wantVariant);
  if (!diff.empty())
    return fail(diff);
  std::vector<const KernelEntry *> kernels = {&v.forward};
  if (v.combine)
    kernels.push_back(&*v.combine);
  if (kernelLines.size() != kernels.size())
    return fail("the PTX describes " + std::to_string(kernelLines.size()) +
                " kernel(s), the manifest " + std::to_string(kernels.size()));
  const size_t numParams = v.parameters.size();
  for (const KernelEntry *e : kernels) {
    Fields wantKernel =
        parseFields(describeKernel(*e), std::strlen(kKernelTag));
    const std::string *line = nullptr;
    for (const std::string &l : kernelLines)
      if (parseFields(l, std::strlen(kKernelTag)).front() ==
          wantKernel.front())
        line = &l;
    if (!line)
      return fail("the PTX describes no kernel named " + e->name);
    diff = firstDifference(parseFields(*line, std::strlen(kKernelTag)),
                           wantKernel);
    if (!diff.empty())
      return fail("kernel " + e->name + ": " + diff);
    // What the code itself declares: the entry, its parameters and the
    // block size it requires.
    std::optional<EntryHeader> header = findEntry(v.ptx, e->name);
    if (!header)
      return fail("the PTX has no .entry " + e->name);
    if (header->params.size() != numParams)
      return fail(".entry " + e->name + " takes " +
                  std::to_string(header->params.size()) +
                  " parameters; the manifest names " +
                  std::to_string(numParams));
    for (size_t i = 0; i < numParams; ++i) {
      const KernelParameter &p = v.parameters[i];
      const std::string &param = header->params[i];
      bool typed =
          p.bits == 1024 ? param.find(".b8") != std::string::npos &&
                               param.find("[128]") != std::string::npos &&
                               param.find(".align 64") != std::string::npos
          : p.bits == 64 ? param.find(".u64") != std::string::npos ||
                               param.find(".b64") != std::string::npos ||
                               param.find(".s64") != std::string::npos
                         : param.find(".f32") != std::string::npos ||
                               param.find(".b32") != std::string::npos;
      if (param.find(".param") == std::string::npos || !typed)
        return fail(".entry " + e->name + ": parameter " + std::to_string(i) +
                    " (" + p.name + ") is not a " +
                    (p.bits == 1024 ? "64-byte aligned .b8 [128] .param"
                     : p.bits == 64 ? "64-bit .param"
                                    : ".f32 .param"));
    }
    // Parameter names are distinct (ptxas refuses a duplicate; the
    // simulator would bind both to one slot).
    std::vector<std::string> names;
    for (const std::string &param : header->params) {
      size_t end = param.find_last_not_of(" \t\r\n");
      size_t start = param.find_last_of(" \t\r\n", end);
      names.push_back(param.substr(start + 1, end - start));
    }
    std::sort(names.begin(), names.end());
    auto twice = std::adjacent_find(names.begin(), names.end());
    if (twice != names.end())
      return fail(".entry " + e->name + " declares parameter " +
                  escapeForMessage(*twice) + " twice");
    // A kernel launched to start before its predecessor has finished
    // waits for it before it touches global memory.
    if (e->programmaticLaunch) {
      std::string access = firstAccessBeforeWait(v.ptx, header->body);
      if (access == "(none)")
        return fail(".entry " + e->name +
                    " is launched early (programmatic_launch) but never "
                    "waits for its predecessor (griddepcontrol.wait)");
      if (!access.empty())
        return fail(".entry " + e->name +
                    " is launched early (programmatic_launch) but accesses "
                    "memory before griddepcontrol.wait: '" +
                    escapeForMessage(access) + "'");
    }
    std::optional<std::vector<int64_t>> reqntid =
        directiveNumbers(header->directives, ".reqntid");
    if (!reqntid || reqntid->empty())
      return fail(".entry " + e->name + " declares no .reqntid");
    int64_t threads = 1;
    for (int64_t n : *reqntid)
      threads *= n;
    if (threads != e->block || (*reqntid)[0] != e->block)
      return fail(".entry " + e->name + " requires " +
                  std::to_string(threads) +
                  " threads a block (.reqntid), the manifest launches " +
                  std::to_string(e->block));
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

namespace {

/// The largest manifest, PTX file and cubin a bundle may hold.
constexpr uint64_t kMaxManifestBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxKernelFileBytes = uint64_t(64) << 20;

} // namespace

Status runtime::checkVariantId(const std::string &id) {
  // Names a file in the bundle: no separators, no NUL, no hidden or
  // parent entries.
  bool ok = !id.empty() && id.size() <= 200 && id[0] != '.';
  for (char c : id)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                c == '-' || c == '.');
  if (!ok)
    return Status::error("manifest: variant id '" + escapeForMessage(id) +
                         "' is not a plain file name (letters, digits, '_', "
                         "'-' and '.', not starting with '.', at most 200)");
  return Status::success();
}

Result<Bundle> Bundle::load(const std::string &directory) {
  if (Status s = checkPathText(directory, "bundle path"))
    return s;
  std::string manifestPath = directory + "/manifest.json";
  Result<std::string> text = readRegularFile(manifestPath, kMaxManifestBytes);
  if (!text)
    return Status::make(text.status().code() == ErrorCode::NotFound
                            ? ErrorCode::NotFound
                            : ErrorCode::InvalidBundle,
                        "not a flashc bundle: " + text.message());
  Result<JsonValue> json = JsonValue::parse(*text);
  if (!json)
    return Status::make(ErrorCode::InvalidBundle,
                        escapeForMessage(manifestPath) + ": " + json.message());
  manifestPath = escapeForMessage(manifestPath);
  const JsonValue *format = json->get("format");
  if (!format || format->getKind() != JsonValue::Kind::String ||
      format->getString() != "flashc-bundle-1")
    return Status::make(ErrorCode::InvalidBundle,
                        manifestPath + ": not a flashc-bundle-1 manifest");
  const JsonValue *list = json->get("variants");
  if (!list || !list->isArray())
    return Status::make(ErrorCode::InvalidBundle,
                        manifestPath + ": no 'variants' array");
  Bundle bundle;
  for (const JsonValue &entry : list->getArray()) {
    Result<KernelVariant> v = KernelVariant::fromJson(entry);
    if (!v)
      return Status::make(ErrorCode::InvalidBundle,
                          manifestPath + ": " + v.message());
    for (const KernelVariant &other : bundle.variants)
      if (other.id == v->id)
        return Status::make(ErrorCode::InvalidBundle,
                            manifestPath + ": variant '" + v->id +
                                "' appears twice");
    // A file must be the one its entry was written with (the checksum,
    // where the manifest has one): two processes sharing a kernel cache can
    // each save a variant of the same id built with other options.
    auto load = [&](const std::string &ext, std::string &into) -> Status {
      std::string path = directory + "/" + v->id + "." + ext;
      const JsonValue *name = entry.get(ext);
      if (name && (name->getKind() != JsonValue::Kind::String ||
                   name->getString() != v->id + "." + ext))
        return Status::make(ErrorCode::InvalidBundle,
                            manifestPath + ": variant '" + v->id +
                                "' names its " + ext + " file other than '" +
                                v->id + "." + ext + "'");
      Result<std::string> text = readRegularFile(path, kMaxKernelFileBytes);
      if (!text)
        return Status::make(ErrorCode::InvalidBundle, text.message());
      const JsonValue *sum = entry.get(ext + "_fnv1a");
      if (sum && (sum->getKind() != JsonValue::Kind::String ||
                  sum->getString() != fnv1aHex(*text)))
        return Status::make(ErrorCode::InvalidBundle,
                            escapeForMessage(path) +
                                " does not match its manifest entry (its "
                                "checksum differs)");
      into = std::move(*text);
      return Status::success();
    };
    if (Status s = load("ptx", v->ptx))
      return s;
    if (entry.get("cubin"))
      if (Status s = load("cubin", v->cubin))
        return s;
    if (Status s = checkVariantAgainstPTX(*v))
      return Status::make(ErrorCode::InvalidBundle,
                          manifestPath + ": " + s.message());
    v->updateImageHash();
    bundle.variants.push_back(std::move(*v));
  }
  return bundle;
}

Status Bundle::save(const std::string &directory) const {
  if (Status s = checkPathText(directory, "bundle path"))
    return s;
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return Status::error("cannot create '" + escapeForMessage(directory) +
                         "': " + ec.message());
  JsonValue::Array list;
  for (const KernelVariant &v : variants) {
    if (Status s = checkVariantId(v.id))
      return s;
    list.push_back(v.toJson());
    if (Status s = writeFileAtomically(directory + "/" + v.id + ".ptx", v.ptx))
      return s;
    if (!v.cubin.empty())
      if (Status s = writeFileAtomically(directory + "/" + v.id + ".cubin",
                                         v.cubin))
        return s;
  }
  JsonValue::Object manifest;
  manifest["format"] = "flashc-bundle-1";
  manifest["variants"] = JsonValue(std::move(list));
  // Written last, so that a reader never sees a manifest naming files that
  // are not there yet. Two processes saving at once: the last manifest
  // wins, and the other's new entries are compiled again when next asked
  // for (never a torn file).
  return writeFileAtomically(directory + "/manifest.json",
                             JsonValue(std::move(manifest)).printPretty());
}

namespace {
/// A query's fields, in the order a variant is matched: (name, value).
std::vector<std::pair<const char *, std::string>>
getQueryFields(const AttentionQuery &q) {
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  return {{"target", q.target},
          {"dtype", stringify(q.dtype)},
          {"group", std::to_string(q.group)},
          {"head_dim", std::to_string(q.headDim)},
          {"head_dim_v", std::to_string(q.headDimV)},
          {"mask", q.mask.str()},
          {"lse", flag(q.withLse)},
          {"decode", flag(q.decode)}};
}
} // namespace

std::string runtime::getMismatchedField(const AttentionQuery &k,
                                        const AttentionQuery &q) {
  auto a = getQueryFields(k), b = getQueryFields(q);
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].second != b[i].second)
      return a[i].first;
  return "";
}

std::string Bundle::explainMiss(const AttentionQuery &q,
                                size_t *matchedFields) const {
  auto wanted = getQueryFields(q);
  const KernelVariant *closest = nullptr;
  size_t closestMatched = 0;
  for (const KernelVariant &v : variants) {
    auto have = getQueryFields(v.query);
    size_t matched = 0;
    while (matched < have.size() &&
           have[matched].second == wanted[matched].second)
      ++matched;
    if (!closest || matched > closestMatched) {
      closest = &v;
      closestMatched = matched;
    }
  }
  if (matchedFields)
    *matchedFields = closestMatched;
  if (!closest)
    return "the bundle is empty";
  if (closestMatched == wanted.size())
    return "";
  auto have = getQueryFields(closest->query);
  return "the closest variant, " + closest->id + ", differs in " +
         have[closestMatched].first + " (" + have[closestMatched].second +
         "; the call needs " + wanted[closestMatched].second + ")";
}

const KernelVariant *Bundle::find(const AttentionQuery &q,
                                  int64_t alignment) const {
  // Field by field, as getMismatchedField compares their text, without
  // building it: find runs at every call. Of the variants computing the
  // query, the one that assumes the most of `alignment`, else the one that
  // assumes the least (its launch then says what the call lacks).
  const KernelVariant *best = nullptr;
  auto better = [&](const KernelVariant &v) {
    if (!best)
      return true;
    bool fits = v.alignment <= alignment,
         bestFits = best->alignment <= alignment;
    if (fits != bestFits)
      return fits;
    return fits ? v.alignment > best->alignment : v.alignment < best->alignment;
  };
  for (const KernelVariant &v : variants) {
    const AttentionQuery &k = v.query;
    if (k.target == q.target && k.dtype == q.dtype && k.group == q.group &&
        k.headDim == q.headDim && k.headDimV == q.headDimV &&
        k.mask == q.mask && k.withLse == q.withLse && k.decode == q.decode &&
        better(v))
      best = &v;
  }
  return best;
}

void Bundle::add(KernelVariant variant) {
  variant.updateImageHash();
  for (KernelVariant &v : variants)
    if (v.id == variant.id) {
      v = std::move(variant);
      return;
    }
  variants.push_back(std::move(variant));
}
