//===- KernelVariant.cpp - Kernel metadata, grids and bundles -------------===//
//
// The runtime's view of a compiled kernel: its manifest entry (JSON), the
// grid expressions the compiler recorded, and bundle directories.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace flashc;
using namespace flashc::runtime;

//===----------------------------------------------------------------------===//
// Element types and tensors
//===----------------------------------------------------------------------===//

const char *runtime::stringify(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<ElementType> runtime::parseElementType(const std::string &name) {
  if (name == "f32")
    return ElementType::F32;
  if (name == "f16")
    return ElementType::F16;
  if (name == "bf16")
    return ElementType::BF16;
  return std::nullopt;
}

int64_t runtime::getElementBytes(ElementType type) {
  return type == ElementType::F32 ? 4 : 2;
}

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
  // 1 + sum (size - 1) * stride elements, in checked arithmetic.
  __int128 last = 0;
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] <= 0)
      return uint64_t(0);
    last += static_cast<__int128>(sizes[d] - 1) * strides[d];
  }
  __int128 bytes = (last + 1) * getElementBytes(dtype);
  if (bytes > (static_cast<__int128>(1) << 62))
    return Status::error("a tensor of " + std::to_string(rank) +
                         " dimensions addresses more than 2^62 bytes");
  return static_cast<uint64_t>(bytes);
}

//===----------------------------------------------------------------------===//
// Manifest entries
//===----------------------------------------------------------------------===//

namespace {

/// An exact text form of a double (C99 hexadecimal).
std::string hexDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

Status missing(const std::string &what) {
  return Status::error("manifest: missing or malformed '" + what + "'");
}

bool getInt(const JsonValue &obj, const char *key, int64_t &out) {
  const JsonValue *v = obj.get(key);
  if (!v || v->getKind() != JsonValue::Kind::Number)
    return false;
  double d = v->getNumber();
  // Only integral values that fit in int64 are accepted; checking before
  // converting keeps out-of-range doubles (1e300) well defined.
  if (!(d >= -9.2e18 && d <= 9.2e18) || d != static_cast<double>(
                                                static_cast<int64_t>(d)))
    return false;
  out = static_cast<int64_t>(d);
  return true;
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

/// The 64-bit FNV-1a hash of `data`, as 16 hex digits.
std::string fnv1aHex(const std::string &data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(h));
  return text;
}

} // namespace

JsonValue KernelEntry::toJson() const {
  JsonValue::Object o;
  o["name"] = name;
  o["grid"] = grid;
  o["block"] = block;
  o["shared_bytes"] = sharedBytes;
  o["registers"] = registers;
  o["spill_bytes"] = spillBytes;
  return JsonValue(std::move(o));
}

Result<KernelEntry> KernelEntry::fromJson(const JsonValue &v) {
  KernelEntry e;
  if (!getString(v, "name", e.name))
    return missing("name");
  if (!getString(v, "grid", e.grid))
    return missing("grid");
  if (!getInt(v, "block", e.block) || e.block <= 0 || e.block > 1024)
    return missing("block");
  if (!getInt(v, "shared_bytes", e.sharedBytes) || e.sharedBytes < 0)
    return missing("shared_bytes");
  if (v.get("registers") && !getInt(v, "registers", e.registers))
    return missing("registers");
  if (v.get("spill_bytes") && !getInt(v, "spill_bytes", e.spillBytes))
    return missing("spill_bytes");
  return e;
}

const std::vector<KernelParameter> &runtime::getKernelParameters() {
  static const std::vector<KernelParameter> parameters = {
      {"q", "Q: batch x G query heads x Nq x D elements (one KV head's group)"},
      {"k", "K: batch x Nk x D elements"},
      {"v", "V: batch x Nk x Dv elements"},
      {"out", "O: batch x G x Nq x Dv elements"},
      {"lse", "log-sum-exp, f32, batch x G x Nq (read only by lse variants)"},
      {"ws_out", "split partial outputs, f32 (decode variants)"},
      {"ws_lse", "split partial log-sum-exps, f32 (decode variants)"},
      {"B", "batch: the call's batch x KV heads when they fold"},
      {"Nq", "query rows per head"},
      {"Nk", "keys"},
      {"splits", "KV splits (decode variants; 1 otherwise)"},
      {"q_stride_b", "elements between batch entries of q"},
      {"q_stride_h", "elements between query heads of q"},
      {"q_stride_n", "elements between rows of q"},
      {"k_stride_b", "elements between batch entries of k"},
      {"k_stride_h", "elements between heads of k"},
      {"k_stride_n", "elements between rows of k"},
      {"v_stride_b", "elements between batch entries of v"},
      {"v_stride_h", "elements between heads of v"},
      {"v_stride_n", "elements between rows of v"},
      {"out_stride_b", "elements between batch entries of out"},
      {"out_stride_h", "elements between query heads of out"},
      {"out_stride_n", "elements between rows of out"},
  };
  return parameters;
}

JsonValue KernelVariant::toJson() const {
  JsonValue::Object o;
  o["id"] = id;
  o["target"] = query.target;
  o["dtype"] = stringify(query.dtype);
  o["group"] = query.group;
  o["head_dim"] = query.headDim;
  o["head_dim_v"] = query.headDimV;
  o["causal"] = query.causal;
  o["lse"] = query.withLse;
  o["scale"] = hexDouble(query.scale);
  o["decode"] = query.decode;
  o["block_q"] = blockQ;
  o["block_kv"] = blockKV;
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
  for (const KernelParameter &p : getKernelParameters()) {
    JsonValue::Object a;
    a["name"] = p.name;
    a["meaning"] = p.meaning;
    arguments.push_back(JsonValue(std::move(a)));
  }
  o["arguments"] = JsonValue(std::move(arguments));
  return JsonValue(std::move(o));
}

Result<KernelVariant> KernelVariant::fromJson(const JsonValue &v) {
  KernelVariant k;
  if (!v.isObject())
    return Status::error("manifest: a variant is not an object");
  std::string dtype, scale;
  if (!getString(v, "id", k.id) || k.id.empty() ||
      k.id.find('/') != std::string::npos)
    return missing("id");
  if (!getString(v, "target", k.query.target))
    return missing("target");
  if (!getString(v, "dtype", dtype) || !parseElementType(dtype))
    return missing("dtype");
  k.query.dtype = *parseElementType(dtype);
  if (!getInt(v, "group", k.query.group) ||
      !getInt(v, "head_dim", k.query.headDim) ||
      !getInt(v, "head_dim_v", k.query.headDimV) || k.query.group <= 0 ||
      k.query.headDim <= 0 || k.query.headDimV <= 0)
    return missing("group, head_dim, head_dim_v");
  if (!getBool(v, "causal", k.query.causal) ||
      !getBool(v, "lse", k.query.withLse) ||
      !getBool(v, "decode", k.query.decode))
    return missing("causal, lse, decode");
  if (!getString(v, "scale", scale))
    return missing("scale");
  errno = 0;
  char *end = nullptr;
  k.query.scale = std::strtod(scale.c_str(), &end);
  if (errno || *end || !(k.query.scale > 0))
    return missing("scale");
  if (!getInt(v, "block_q", k.blockQ) || !getInt(v, "block_kv", k.blockKV))
    return missing("block_q, block_kv");
  getString(v, "config", k.config);
  if (const JsonValue *t = v.get("compile_seconds")) {
    if (t->getKind() != JsonValue::Kind::Number)
      return missing("compile_seconds");
    k.compileSeconds = t->getNumber();
  }
  const JsonValue *kernels = v.get("kernels");
  if (!kernels || !kernels->get("forward"))
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
  if (k.query.decode != k.combine.has_value())
    return Status::error("manifest: variant '" + k.id +
                         "' must have a combine kernel exactly when it is a "
                         "decode variant");
  // The kernels' parameters must be the ones this runtime passes.
  const JsonValue *arguments = v.get("arguments");
  if (!arguments || !arguments->isArray())
    return missing("arguments");
  std::string have, want;
  for (const JsonValue &a : arguments->getArray()) {
    std::string name;
    if (!getString(a, "name", name))
      return missing("arguments");
    have += (have.empty() ? "" : ", ") + name;
  }
  for (const KernelParameter &p : getKernelParameters())
    want += (want.empty() ? "" : ", ") + std::string(p.name);
  if (have != want)
    return Status::error("manifest: the kernels of variant '" + k.id +
                         "' take (" + have + "); this runtime passes (" +
                         want + ")");
  return k;
}

//===----------------------------------------------------------------------===//
// Grid expressions
//===----------------------------------------------------------------------===//

namespace {

/// expr := term ('*' term)* ; term := INT | NAME | ceildiv(expr, expr) |
/// '(' expr ')'.
class GridParser {
public:
  GridParser(const std::string &text, const GridSizes &sizes)
      : s(text), sizes(sizes) {}

  Result<int64_t> parse() {
    Result<int64_t> v = expr();
    if (!v)
      return v;
    if (pos != s.size())
      return fail("unexpected '" + s.substr(pos) + "'");
    return v;
  }

private:
  const std::string &s;
  const GridSizes &sizes;
  size_t pos = 0;

  Status fail(const std::string &what) {
    return Status::error("grid expression '" + s + "': " + what);
  }

  Result<int64_t> expr() {
    Result<int64_t> v = term();
    if (!v)
      return v;
    int64_t acc = *v;
    while (pos < s.size() && s[pos] == '*') {
      ++pos;
      Result<int64_t> r = term();
      if (!r)
        return r;
      if (__builtin_mul_overflow(acc, *r, &acc))
        return fail("overflows 64 bits");
    }
    return acc;
  }

  Result<int64_t> term() {
    if (pos >= s.size())
      return fail("unexpected end");
    if (s.compare(pos, 8, "ceildiv(") == 0) {
      pos += 8;
      Result<int64_t> a = expr();
      if (!a)
        return a;
      if (pos >= s.size() || s[pos] != ',')
        return fail("expected ','");
      ++pos;
      Result<int64_t> b = expr();
      if (!b)
        return b;
      if (pos >= s.size() || s[pos] != ')')
        return fail("expected ')'");
      ++pos;
      if (*b <= 0)
        return fail("division by a non-positive value");
      return *a / *b + (*a % *b != 0);
    }
    if (s[pos] == '(') {
      ++pos;
      Result<int64_t> v = expr();
      if (!v)
        return v;
      if (pos >= s.size() || s[pos] != ')')
        return fail("expected ')'");
      ++pos;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(s[pos]))) {
      int64_t v = 0;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, s[pos] - '0', &v))
          return fail("number overflows 64 bits");
        ++pos;
      }
      return v;
    }
    size_t start = pos;
    while (pos < s.size() && std::isalpha(static_cast<unsigned char>(s[pos])))
      ++pos;
    std::string name = s.substr(start, pos - start);
    if (name == "B")
      return sizes.batch;
    if (name == "Nq")
      return sizes.seqQ;
    if (name == "Nk")
      return sizes.seqKV;
    if (name == "splits")
      return sizes.splits;
    return fail("unknown name '" + name + "'");
  }
};

} // namespace

Result<int64_t> runtime::evaluateGrid(const std::string &expression,
                                      const GridSizes &sizes) {
  return GridParser(expression, sizes).parse();
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

namespace {

Result<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

/// Writes `path` whole or not at all: into a temporary file of this
/// process and thread, renamed into place, so that a reader (another
/// process sharing a kernel cache) never sees a file half written.
Status writeFile(const std::string &path, const std::string &data) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  std::ofstream out(tmp, std::ios::binary);
  if (!out)
    return Status::error("cannot write '" + path + "'");
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error("writing '" + path + "' failed");
  }
  return Status::success();
}

} // namespace

Result<Bundle> Bundle::load(const std::string &directory) {
  Result<std::string> text = readFile(directory + "/manifest.json");
  if (!text)
    return Status::error("not a flashc bundle: " + text.message());
  Result<JsonValue> json = JsonValue::parse(*text);
  if (!json)
    return Status::error(directory + "/manifest.json: " + json.message());
  const JsonValue *format = json->get("format");
  if (!format || format->getKind() != JsonValue::Kind::String ||
      format->getString() != "flashc-bundle-1")
    return Status::error(directory +
                         "/manifest.json: not a flashc-bundle-1 manifest");
  const JsonValue *list = json->get("variants");
  if (!list || !list->isArray())
    return Status::error(directory + "/manifest.json: no 'variants' array");
  Bundle bundle;
  for (const JsonValue &entry : list->getArray()) {
    Result<KernelVariant> v = KernelVariant::fromJson(entry);
    if (!v)
      return Status::error(directory + "/manifest.json: " + v.message());
    // A file must be the one its entry was written with (the checksum,
    // where the manifest has one): two processes sharing a kernel cache can
    // each save a variant of the same id built with other options.
    auto load = [&](const std::string &ext, std::string &into) -> Status {
      std::string path = directory + "/" + v->id + "." + ext;
      Result<std::string> text = readFile(path);
      if (!text)
        return text.status();
      const JsonValue *sum = entry.get(ext + "_fnv1a");
      if (sum && (sum->getKind() != JsonValue::Kind::String ||
                  sum->getString() != fnv1aHex(*text)))
        return Status::error(path + " does not match its manifest entry "
                                    "(its checksum differs)");
      into = std::move(*text);
      return Status::success();
    };
    if (Status s = load("ptx", v->ptx))
      return s;
    if (entry.get("cubin"))
      if (Status s = load("cubin", v->cubin))
        return s;
    bundle.variants.push_back(std::move(*v));
  }
  return bundle;
}

Status Bundle::save(const std::string &directory) const {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return Status::error("cannot create '" + directory + "': " + ec.message());
  JsonValue::Array list;
  for (const KernelVariant &v : variants) {
    list.push_back(v.toJson());
    if (Status s = writeFile(directory + "/" + v.id + ".ptx", v.ptx))
      return s;
    if (!v.cubin.empty())
      if (Status s = writeFile(directory + "/" + v.id + ".cubin", v.cubin))
        return s;
  }
  JsonValue::Object manifest;
  manifest["format"] = "flashc-bundle-1";
  manifest["variants"] = JsonValue(std::move(list));
  // Written last, so that a reader never sees a manifest naming files that
  // are not there yet. Two processes saving at once: the last manifest
  // wins, and the other's new entries are compiled again when next asked
  // for (never a torn file).
  return writeFile(directory + "/manifest.json",
                   JsonValue(std::move(manifest)).printPretty());
}

const KernelVariant *Bundle::find(const AttentionQuery &q) const {
  for (const KernelVariant &v : variants) {
    const AttentionQuery &k = v.query;
    if (k.target == q.target && k.dtype == q.dtype && k.group == q.group &&
        k.headDim == q.headDim &&
        k.headDimV == q.headDimV && k.causal == q.causal &&
        k.withLse == q.withLse && k.scale == q.scale && k.decode == q.decode)
      return &v;
  }
  return nullptr;
}

void Bundle::add(KernelVariant variant) {
  for (KernelVariant &v : variants)
    if (v.id == variant.id) {
      v = std::move(variant);
      return;
    }
  variants.push_back(std::move(variant));
}
