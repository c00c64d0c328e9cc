//===- CompilerModule.cpp - flashc._compiler ------------------------------===//
//
// The compiler half of the Python package: compiles attention kernels for
// the CPU (JIT) and the GPU targets through the C++ API, runs them (CPU
// kernels on host memory, GPU kernels on device pointers or in the PTX
// simulator), and exposes the IR of every pipeline stage, the PTX, the
// kernel metadata and the IO cost report. Kernels come from the process's
// compiler cache, keyed without the sizes that are kernel arguments. The
// GIL is released while a kernel compiles or runs. Errors raise
// flashc.FlashcError (defined by flashc._runtime) with the C++ message; a
// value of the wrong type raises flashc.FlashcTypeError.
//
//===----------------------------------------------------------------------===//

#include "Tensors.h"

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Analysis/CostModel.h"
#include "flashc/Compiler/JIT.h"
#include "flashc/Pipelines/Pipelines.h"
#include "flashc/Target/TargetInfo.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace mlir::flash;
using namespace flashc_python;

namespace {

py::object &errorType() {
  static py::object *type = new py::object();
  return *type;
}

py::object &typeErrorType() {
  static py::object *type = new py::object();
  return *type;
}

[[noreturn]] void fail(const std::string &message) {
  raise(errorType(), message);
}

[[noreturn]] void fail(llvm::Error error) {
  fail(llvm::toString(std::move(error)));
}

template <typename T> T unwrap(llvm::Expected<T> value) {
  if (!value)
    fail(value.takeError());
  return std::move(*value);
}

ElementType toDType(const std::string &name) {
  std::optional<ElementType> t = ::flashc::parseElementType(name);
  if (!t)
    fail("unsupported dtype '" + name + "'; expected f32, f16 or bf16");
  return *t;
}

/// The entry `key` of an options dict as a T; FlashcTypeError naming
/// the key when it does not convert.
template <typename T> T fieldAs(const py::handle &value, const std::string &key) {
  return castOrRaise<T>(value, key, typeErrorType());
}

/// The compiler's spec of a flashc.AttentionSpec: the problem description
/// (flashc._runtime.AttentionProblem) it is.
AttentionSpec toSpec(py::handle spec) {
  AttentionSpec s;
  try {
    static_cast<::flashc::AttentionProblem &>(s) =
        spec.cast<const ::flashc::AttentionProblem &>();
  } catch (const py::cast_error &) {
    raise(typeErrorType(),
          "spec must be a flashc.AttentionSpec, got " + typeName(spec));
  }
  return s;
}

/// Python's name of a pipeline option: `block-kv` is `block_kv`.
std::string pythonName(llvm::StringRef name) {
  std::string s = name.str();
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

/// A PipelineConfig from keyword options: those of the pipeline options
/// table the driver takes (flashc/Pipelines/PipelineOptions.def), by their
/// Python names; unknown keys are errors.
PipelineConfig toConfig(const std::string &target, const py::dict &options) {
  PipelineConfig c;
  c.target = target;
  for (auto [key, value] : options) {
    std::string name = fieldAs<std::string>(key, "a compile option's name");
    const PipelineOptionInfo *option = nullptr;
    for (const PipelineOptionInfo &o : getPipelineOptions())
      if (o.driver && o.name != "target" && pythonName(o.name) == name)
        option = &o;
    if (!option) {
      std::string known;
      for (const PipelineOptionInfo &o : getPipelineOptions())
        if (o.driver && o.name != "target")
          known += (known.empty() ? "" : ", ") + pythonName(o.name);
      fail("unknown compile option '" + name + "'; expected " + known);
    }
    std::string text;
    switch (option->kind) {
    case PipelineOptionInfo::Kind::Integer:
      text = std::to_string(fieldAs<int64_t>(value, name));
      break;
    case PipelineOptionInfo::Kind::Bool:
      text = fieldAs<bool>(value, name) ? "1" : "0";
      break;
    case PipelineOptionInfo::Kind::String:
      text = fieldAs<std::string>(value, name);
      break;
    }
    if (llvm::Error e = option->set(c, text))
      fail(std::move(e));
  }
  return c;
}

TensorRef toRef(const TensorDesc &d) {
  TensorRef r;
  r.data = reinterpret_cast<void *>(d.data);
  r.dtype = toDType(d.dtype);
  r.sizes.assign(d.sizes.begin(), d.sizes.end());
  r.strides.assign(d.strides.begin(), d.strides.end());
  r.onDevice = d.onDevice;
  return r;
}

py::object jsonToPython(const llvm::json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return py::module_::import("json").attr("loads")(text);
}

/// A compiled kernel, shared with the compiler's cache.
struct PyKernel {
  std::shared_ptr<const Kernel> kernel;

  const std::string &ir(const std::string &stage) const {
    const KernelMetadata &m = kernel->getMetadata();
    std::string names;
    for (const auto &[name, text] : m.stageIR) {
      if (name == stage)
        return text;
      names += (names.empty() ? "" : ", ") + name;
    }
    fail("no IR for stage '" + stage + "'; this kernel has " + names);
  }

  py::dict metadata() const {
    const KernelMetadata &m = kernel->getMetadata();
    py::dict d;
    d["target"] = m.target;
    d["config"] = m.config;
    d["block_q"] = m.tiles.blockQ;
    d["block_kv"] = m.tiles.blockKV;
    d["splits"] = m.splits;
    d["compile_seconds"] = m.compileSeconds;
    py::list stages;
    for (const auto &entry : m.stageIR)
      stages.append(entry.first);
    d["stages"] = stages;
    if (m.gpu) {
      const auto &f = m.gpu->forward;
      d["entry"] = f.name;
      d["grid"] = f.grid.str();
      d["threads_per_block"] = f.block;
      d["shared_bytes"] = f.sharedBytes;
      d["registers"] = f.registers;
      d["spill_bytes"] = f.spillBytes;
      d["combine_entry"] =
          m.gpu->combine ? py::object(py::str(m.gpu->combine->name))
                         : py::object(py::none());
      d["variant"] = m.gpu->id;
      d["alignment"] = m.gpu->alignment;
      // The variants runs on less aligned tensors fell back to.
      py::list fallbacks;
      for (const Kernel::Fallback &f : kernel->getFallbacks()) {
        py::dict e;
        e["alignment"] = f.alignment;
        e["variant"] = f.variant->id;
        e["entry"] = f.variant->forward.name;
        e["reason"] = f.reason;
        fallbacks.append(e);
      }
      d["fallbacks"] = fallbacks;
    }
    return d;
  }
};

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "flashc's compiler: JIT CPU kernels, GPU kernels as PTX, the IR "
            "of every stage and the IO cost model";
  py::module_ runtime = py::module_::import("flashc._runtime");
  errorType() = runtime.attr("FlashcError");
  typeErrorType() = runtime.attr("FlashcTypeError");
  translateExceptions(errorType(), typeErrorType());

  py::class_<PyKernel>(m, "Kernel")
      .def_property_readonly(
          "is_gpu", [](const PyKernel &k) { return k.kernel->isGPU(); })
      .def("ir", &PyKernel::ir, py::arg("stage"),
           "The IR after pipeline stage `stage`.")
      .def_property_readonly("ptx",
                             [](const PyKernel &k) -> py::object {
                               const KernelMetadata &m =
                                   k.kernel->getMetadata();
                               if (!m.gpu)
                                 return py::none();
                               return py::str(m.gpu->ptx);
                             })
      .def_property_readonly("metadata", &PyKernel::metadata)
      .def(
          "assemble",
          [](const PyKernel &k) {
            const KernelMetadata &m = k.kernel->getMetadata();
            if (!m.gpu)
              fail("assemble is for GPU kernels (ptxas); this one is for " +
                   m.target);
            // A copy: the cached kernel keeps its own variant.
            flashc::runtime::KernelVariant v = *m.gpu;
            llvm::Error err = [&] {
              py::gil_scoped_release release;
              return Compiler::assembleGPUVariant(
                  v, PipelineConfig().toolkitPath);
            }();
            if (err)
              fail(std::move(err));
            py::dict d;
            d["registers"] = v.forward.registers;
            d["spill_bytes"] = v.forward.spillBytes;
            d["cubin_bytes"] = v.cubin.size();
            if (v.combine) {
              d["combine_registers"] = v.combine->registers;
              d["combine_spill_bytes"] = v.combine->spillBytes;
            }
            return d;
          },
          "Assembles the kernel's PTX with the toolkit's ptxas: registers "
          "and spill bytes per kernel.")
      .def_property_readonly(
          "spec", [](const PyKernel &k) { return k.kernel->getSpec().str(); })
      .def(
          "split_count",
          [](const PyKernel &k, int64_t batch, int64_t seqQ, int64_t seqKV,
             int64_t kvHeads) {
            return k.kernel->getSplitCount(batch, seqQ, seqKV, {}, kvHeads);
          },
          py::arg("batch"), py::arg("seq_q"), py::arg("seq_kv"),
          py::arg("kv_heads") = 0)
      .def(
          "run",
          [](const PyKernel &k, py::handle q, py::handle kk, py::handle v,
             py::handle out, py::handle lse, bool simulate, int64_t splits,
             uintptr_t stream) {
            TensorRef qr = toRef(toDesc(q)), kr = toRef(toDesc(kk)),
                      vr = toRef(toDesc(v)), outr = toRef(toDesc(out));
            std::optional<TensorRef> lser;
            if (!lse.is_none())
              lser = toRef(toDesc(lse));
            RunOptions options;
            // Python has put the tensors in [B, H, N, D] order; their
            // strides are the arrays' own.
            options.layout = flashc::Layout::Strided;
            options.simulate = simulate;
            options.splits = splits;
            options.stream = reinterpret_cast<void *>(stream);
            llvm::Error err = [&] {
              py::gil_scoped_release release;
              return k.kernel->run(qr, kr, vr, outr, lser ? &*lser : nullptr,
                                   options);
            }();
            if (err)
              fail(std::move(err));
          },
          py::arg("q"), py::arg("k"), py::arg("v"), py::arg("out"),
          py::arg("lse"), py::arg("simulate"), py::arg("splits"),
          py::arg("stream"));

  m.def(
      "pipeline_options",
      [] {
        py::list list;
        for (const PipelineOptionInfo &o : getPipelineOptions()) {
          if (!o.driver || o.name == "target")
            continue;
          py::dict d;
          d["name"] = pythonName(o.name);
          d["kind"] = o.kind == PipelineOptionInfo::Kind::Integer ? "int"
                      : o.kind == PipelineOptionInfo::Kind::Bool  ? "bool"
                                                                  : "str";
          py::list values;
          llvm::SmallVector<llvm::StringRef> parts;
          o.values.split(parts, '|', -1, /*KeepEmpty=*/false);
          for (llvm::StringRef v : parts)
            values.append(v.str());
          d["values"] = values;
          d["description"] = o.description.str();
          d["default"] = o.get(PipelineConfig());
          list.append(d);
        }
        return list;
      },
      "The compile options (flashc/Pipelines/PipelineOptions.def): name, "
      "kind (int, bool or str), values, description and default.");
  m.def(
      "compile",
      [](py::handle spec, const std::string &target,
         const py::dict &options) {
        AttentionSpec s = toSpec(spec);
        PipelineConfig c = toConfig(target, options);
        auto kernel = [&] {
          py::gil_scoped_release release;
          return Compiler::global().compile(s, target, c);
        }();
        return PyKernel{unwrap(std::move(kernel))};
      },
      py::arg("spec"), py::arg("target"), py::arg("options"));

  m.def(
      "cost",
      [](py::handle spec, const std::string &target, int64_t sramBytes,
         const std::string &loopOrder) {
        AttentionSpec s = toSpec(spec);
        if (llvm::Error e = s.validate())
          fail(std::move(e));
        TargetInfo t = unwrap(TargetInfo::get(target));
        if (sramBytes < 0)
          fail(llvm::formatv("sram_bytes must be positive, got {0}",
                             sramBytes)
                   .str());
        if (sramBytes > 0)
          t.sramBytes = sramBytes;
        std::optional<LoopOrder> order = parseLoopOrder(loopOrder);
        if (!order)
          fail("unknown loop order '" + loopOrder +
               "'; expected fa2 or algorithm1");
        CostOptions options;
        options.order = *order;
        CostReport report = unwrap(computeCostReport(t, s.shape(), options));
        return jsonToPython(llvm::json::Value(costReportToJSON(report)));
      },
      py::arg("spec"), py::arg("target"), py::arg("sram_bytes"),
      py::arg("loop_order"));

  m.def("cache_size", [] { return Compiler::global().getCacheSize(); },
        "Kernels in the process's compiler cache.");
  m.def(
      "set_cache_directory",
      [](const std::string &directory) {
        Compiler::global().setCacheDirectory(directory);
      },
      py::arg("directory"),
      "Keeps compiled GPU kernels in a bundle directory ('' turns it off).");
}
