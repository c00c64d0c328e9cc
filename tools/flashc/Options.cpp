//===- Options.cpp - Command-line options of the flashc driver ------------===//

#include "Options.h"
#include "Tool.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir::flash;

int flashc::reportError(llvm::Error error) {
  // One line, whatever the error holds (joined errors are one a line).
  std::string text = llvm::toString(std::move(error));
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  llvm::errs() << getToolName() << ": error: ";
  llvm::interleave(
      lines, llvm::errs(),
      [](llvm::StringRef line) { llvm::errs() << line.trim(); }, "; ");
  llvm::errs() << "\n";
  return 1;
}

llvm::Expected<flashc::Options>
flashc::Options::parse(llvm::ArrayRef<const char *> args,
                       const std::set<std::string> &flags,
                       const std::set<std::string> &valued) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if (!arg.consume_front("--") && !(arg == "-o"))
      return llvm::createStringError("unexpected argument '" + arg + "'");
    if (arg == "-o")
      arg = "o";
    auto [name, value] = arg.split('=');
    bool hasValue = arg.contains('=');
    if (flags.count(name.str())) {
      if (hasValue)
        return llvm::createStringError("--" + name + " takes no value");
      options.values[name] = "1";
      continue;
    }
    if (!valued.count(name.str()))
      return llvm::createStringError("unknown option '--" + name + "'");
    if (!hasValue) {
      if (i + 1 >= args.size())
        return llvm::createStringError("--" + name + " needs a value");
      // An option where the value should be is a value left out (`--lse
      // --simulate` in `flashc run`, whose --lse names a file), not a
      // value; `--name=--x` still gives one that starts with "--".
      llvm::StringRef next = args[i + 1];
      std::string nextName = next == "-o" ? "o"
                             : next.starts_with("--")
                                 ? next.drop_front(2).split('=').first.str()
                                 : "";
      if (!nextName.empty() &&
          (flags.count(nextName) || valued.count(nextName)))
        return llvm::createStringError(
            "--" + name + " needs a value, and '" + next +
            "' is an option (--" + name + "=" + next +
            " gives it that value)");
      value = args[++i];
    }
    options.values[name] = value.str();
  }
  return options;
}

std::string flashc::Options::str(llvm::StringRef name,
                                 llvm::StringRef dflt) const {
  auto it = values.find(name);
  return it == values.end() ? dflt.str() : it->second;
}

llvm::Expected<int64_t> flashc::Options::integer(llvm::StringRef name,
                                                 int64_t dflt) const {
  auto it = values.find(name);
  if (it == values.end())
    return dflt;
  int64_t value;
  if (llvm::StringRef(it->second).getAsInteger(10, value))
    return llvm::createStringError("--" + name + " expects an integer, got '" +
                                   it->second + "'");
  return value;
}

llvm::Expected<double> flashc::Options::real(llvm::StringRef name,
                                             double dflt) const {
  auto it = values.find(name);
  if (it == values.end())
    return dflt;
  double value;
  if (llvm::StringRef(it->second).getAsDouble(value))
    return llvm::createStringError("--" + name + " expects a number, got '" +
                                   it->second + "'");
  return value;
}

const std::set<std::string> &flashc::shapeFlags() {
  static const std::set<std::string> flags = {"causal", "lse"};
  return flags;
}

const std::set<std::string> &flashc::shapeValued() {
  static const std::set<std::string> valued = [] {
    std::set<std::string> names = {"batch",    "heads",      "kv-heads",
                                   "seq-q",    "seq-kv",     "head-dim",
                                   "head-dim-v", "dtype",    "scale",
                                   "mask"};
    for (const PipelineOptionInfo &o : getPipelineOptions())
      if (o.driver)
        names.insert(o.name.str());
    return names;
  }();
  return valued;
}

llvm::Error flashc::readSpec(const Options &o, AttentionSpec &spec) {
  auto get = [&](llvm::StringRef name, int64_t &field) -> llvm::Error {
    llvm::Expected<int64_t> v = o.integer(name, field);
    if (!v)
      return v.takeError();
    field = *v;
    return llvm::Error::success();
  };
  if (llvm::Error e = get("batch", spec.batch))
    return e;
  if (llvm::Error e = get("heads", spec.heads))
    return e;
  if (o.has("heads") && !o.has("kv-heads"))
    spec.kvHeads = spec.heads;
  if (llvm::Error e = get("kv-heads", spec.kvHeads))
    return e;
  if (llvm::Error e = get("seq-q", spec.seqQ))
    return e;
  if (o.has("seq-q") && !o.has("seq-kv"))
    spec.seqKV = spec.seqQ;
  if (llvm::Error e = get("seq-kv", spec.seqKV))
    return e;
  if (llvm::Error e = get("head-dim", spec.headDim))
    return e;
  if (llvm::Error e = get("head-dim-v", spec.headDimV))
    return e;
  if (o.has("dtype")) {
    std::optional<ElementType> dtype = ::flashc::parseElementType(o.str("dtype"));
    if (!dtype)
      return llvm::createStringError("--dtype must be f32, f16 or bf16, got '" +
                                     o.str("dtype") + "'");
    spec.dtype = *dtype;
  }
  if (o.has("mask")) {
    std::optional<Mask> mask = Mask::parse(o.str("mask"));
    if (!mask)
      return llvm::createStringError("--mask must be one of " +
                                     ::flashc::getMaskKindNames() + ", got '" +
                                     o.str("mask") + "'");
    spec.mask = *mask;
  }
  // --causal: --mask causal.
  if (o.has("causal")) {
    if (o.has("mask") && !spec.mask.isCausal())
      return llvm::createStringError("--causal contradicts --mask " +
                                     o.str("mask"));
    spec.mask = Mask::causal();
  }
  if (o.has("lse"))
    spec.withLse = true;
  if (o.has("scale")) {
    llvm::Expected<double> scale = o.real("scale", 0);
    if (!scale)
      return scale.takeError();
    spec.scale = *scale;
  }
  return spec.validate();
}

llvm::Error flashc::readConfig(const Options &o, PipelineConfig &config) {
  for (const PipelineOptionInfo &option : getPipelineOptions())
    if (option.driver && o.has(option.name))
      if (llvm::Error e = option.set(config, o.str(option.name)))
        return llvm::createStringError("--" + llvm::toString(std::move(e)));
  return config.validate();
}

std::string flashc::describePipelineOptions(bool cpu, bool gpu) {
  std::string text;
  for (const PipelineOptionInfo &o : getPipelineOptions()) {
    if (!o.driver || o.name == "target" ||
        !((cpu && o.cpuPipeline) || (gpu && o.gpuPipeline)))
      continue;
    std::string flag = "  --" + o.name.str() + " ";
    flag += o.values.empty() ? (o.kind == PipelineOptionInfo::Kind::Integer
                                    ? "N"
                                    : o.kind == PipelineOptionInfo::Kind::Bool
                                          ? "on|off"
                                          : "TEXT")
                             : o.values.str();
    // The description from column 28, wrapped at 78.
    constexpr size_t kColumn = 28, kWidth = 78;
    if (flag.size() < kColumn)
      flag.append(kColumn - flag.size(), ' ');
    else
      flag += "\n" + std::string(kColumn, ' ');
    text += flag;
    size_t column = kColumn;
    llvm::SmallVector<llvm::StringRef> words;
    o.description.split(words, ' ', -1, /*KeepEmpty=*/false);
    for (size_t i = 0; i < words.size(); ++i) {
      if (i && column + 1 + words[i].size() > kWidth) {
        text += "\n" + std::string(kColumn, ' ');
        column = kColumn;
      } else if (i) {
        text += " ";
        ++column;
      }
      text += words[i].str();
      column += words[i].size();
    }
    text += "\n";
  }
  return text;
}
