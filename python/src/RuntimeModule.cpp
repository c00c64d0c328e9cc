//===- RuntimeModule.cpp - flashc._runtime --------------------------------===//
//
// The LLVM-free half of the Python package: loads a bundle of precompiled
// GPU kernels and launches them on the CUDA driver (device pointers, the
// caller's stream) or on the PTX simulator (host memory). It links the
// runtime library only, so `flashc.load_bundle` works where the compiler is
// not installed. It also defines flashc.FlashcError (a ValueError) and
// flashc.FlashcTypeError (a FlashcError and a TypeError: an argument of the
// wrong type), which the compiler module raises too.
//
//===----------------------------------------------------------------------===//

#include "Tensors.h"

#include "flashc/Runtime/Runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>

namespace py = pybind11;
namespace rt = flashc::runtime;
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

flashc::ElementType elementType(const std::string &name) {
  std::optional<flashc::ElementType> t = flashc::parseElementType(name);
  if (!t)
    fail("unsupported element type '" + name + "'; expected f32, f16 or bf16");
  return *t;
}

/// The mask `name` names; FlashcError listing the kinds otherwise.
flashc::Mask toMask(const std::string &name) {
  std::optional<flashc::Mask> mask = flashc::Mask::parse(name);
  if (!mask) {
    std::string kinds;
    for (flashc::MaskKind kind : flashc::kMaskKinds)
      kinds += (kinds.empty() ? "'" : ", '") +
               std::string(flashc::stringify(kind)) + "'";
    fail("unknown mask '" + name + "'; expected " + kinds);
  }
  return *mask;
}

/// The variant query of a call, as Python passes it to find and
/// explain_miss.
rt::AttentionQuery toQuery(const std::string &target, const std::string &dtype,
                           int64_t group, int64_t headDim, int64_t headDimV,
                           const std::string &mask, bool withLse,
                           bool decode) {
  rt::AttentionQuery q;
  q.target = target;
  q.dtype = elementType(dtype);
  q.group = group;
  q.headDim = headDim;
  q.headDimV = headDimV;
  q.mask = toMask(mask);
  q.withLse = withLse;
  q.decode = decode;
  return q;
}

/// `value` as a T; FlashcTypeError naming `name` when it does not convert.
/// A bool is only a Python or numpy bool (pybind11 would take 1 for True).
template <typename T> T as(py::handle value, const std::string &name) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!PyBool_Check(value.ptr())) {
      std::string type = typeName(value);
      if (type != "bool_")
        raise(typeErrorType(), name + " has the wrong type (" + type + ")");
    }
  }
  return castOrRaise<T>(value, name, typeErrorType());
}

rt::TensorView toView(const TensorDesc &d, const char *what) {
  if (d.sizes.size() > 4)
    fail(std::string(what) + " has rank " + std::to_string(d.sizes.size()) +
         "; at most 4");
  rt::TensorView v;
  v.data = reinterpret_cast<void *>(d.data);
  v.dtype = elementType(d.dtype);
  v.rank = static_cast<int>(d.sizes.size());
  for (size_t i = 0; i < d.sizes.size(); ++i) {
    v.sizes[i] = d.sizes[i];
    v.strides[i] = d.strides[i];
  }
  return v;
}

py::dict variantInfo(const rt::KernelVariant &v) {
  py::dict d;
  // The strings come from a manifest, which may hold any bytes.
  d["id"] = toStr(v.id);
  d["target"] = toStr(v.query.target);
  d["dtype"] = std::string(flashc::stringify(v.query.dtype));
  d["group"] = v.query.group;
  d["head_dim"] = v.query.headDim;
  d["head_dim_v"] = v.query.headDimV;
  d["mask"] = v.query.mask.str();
  d["causal"] = v.query.mask.isCausal();
  d["with_lse"] = v.query.withLse;
  d["decode"] = v.query.decode;
  d["block_q"] = v.blockQ;
  d["block_kv"] = v.blockKV;
  d["alignment"] = v.alignment;
  d["shared_bytes"] = v.forward.sharedBytes;
  d["registers"] = v.forward.registers;
  d["threads_per_block"] = v.forward.block;
  d["grid"] = toStr(v.forward.grid.str());
  d["has_cubin"] = !v.cubin.empty();
  return d;
}

/// The options of the simulator devices of the launches to come.
rt::SimulatorOptions &simulatorOptions() {
  static rt::SimulatorOptions options;
  return options;
}

/// One device per kind, created on first use (the CUDA device loads the
/// driver with dlopen).
std::shared_ptr<rt::Device> getDevice(const std::string &kind,
                                      const std::string &chip) {
  if (kind == "sim")
    return rt::getSimulatorDevice(chip, simulatorOptions());
  if (kind != "cuda")
    fail("unknown device kind '" + kind + "'; expected cuda or sim");
  static std::mutex mutex;
  static std::shared_ptr<rt::Device> cuda;
  std::lock_guard<std::mutex> lock(mutex);
  if (!cuda) {
    flashc::Result<std::shared_ptr<rt::Device>> d = rt::getCudaDevice();
    if (!d)
      fail(d.status().message());
    cuda = *d;
  }
  return cuda;
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "flashc's LLVM-free runtime: bundles of GPU kernels, the CUDA "
            "driver and the PTX simulator";
  errorType() = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "flashc.FlashcError",
      "An error from flashc: bad shapes, dtypes or layouts, arguments of "
      "the wrong type, a bad bundle, a failed compilation or launch. The "
      "message names the argument or is the C++ layer's.",
      PyExc_ValueError, nullptr));
  if (!errorType())
    throw py::error_already_set();
  m.attr("FlashcError") = errorType();
  py::tuple typeErrorBases =
      py::make_tuple(errorType(), py::handle(PyExc_TypeError));
  typeErrorType() =
      py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
          "flashc.FlashcTypeError",
          "An argument of the wrong type (a FlashcError and a TypeError); "
          "the message names the argument.",
          typeErrorBases.ptr(), nullptr));
  if (!typeErrorType())
    throw py::error_already_set();
  m.attr("FlashcTypeError") = typeErrorType();
  translateExceptions(errorType(), typeErrorType());

  // flashc's one description of an attention problem (flashc/Core/
  // Problem.h): flashc.AttentionSpec derives from it, and the compiler
  // module takes it as it is. FIELDS lists the attributes, in order.
  py::class_<flashc::AttentionProblem> problem(m, "AttentionProblem");
  problem.def(py::init<>());
  // Each field converts what it is given or raises FlashcTypeError naming
  // it (never pybind11's TypeError).
  auto integer = [&](const char *name, int64_t flashc::AttentionProblem::*f) {
    problem.def_property(
        name, [f](const flashc::AttentionProblem &p) { return p.*f; },
        [f, name](flashc::AttentionProblem &p, py::handle value) {
          p.*f = as<int64_t>(value, name);
        });
  };
  integer("batch", &flashc::AttentionProblem::batch);
  integer("heads", &flashc::AttentionProblem::heads);
  integer("kv_heads", &flashc::AttentionProblem::kvHeads);
  integer("seq_q", &flashc::AttentionProblem::seqQ);
  integer("seq_kv", &flashc::AttentionProblem::seqKV);
  integer("head_dim", &flashc::AttentionProblem::headDim);
  integer("head_dim_v", &flashc::AttentionProblem::headDimV);
  problem
      .def_property(
          "dtype",
          [](const flashc::AttentionProblem &p) {
            return std::string(flashc::stringify(p.dtype));
          },
          [](flashc::AttentionProblem &p, py::handle name) {
            p.dtype = elementType(as<std::string>(name, "dtype"));
          })
      .def_property(
          "mask",
          [](const flashc::AttentionProblem &p) { return p.mask.str(); },
          [](flashc::AttentionProblem &p, py::handle name) {
            p.mask = toMask(as<std::string>(name, "mask"));
          })
      .def_property(
          "scale",
          [](const flashc::AttentionProblem &p) { return p.scale; },
          [](flashc::AttentionProblem &p, py::handle value) {
            p.scale = value.is_none()
                          ? std::nullopt
                          : std::optional<double>(as<double>(value, "scale"));
          })
      .def_property(
          "with_lse",
          [](const flashc::AttentionProblem &p) { return p.withLse; },
          [](flashc::AttentionProblem &p, py::handle value) {
            p.withLse = as<bool>(value, "with_lse");
          })
      .def_property(
          "layout",
          [](const flashc::AttentionProblem &p) {
            return std::string(flashc::stringify(p.layout));
          },
          [](flashc::AttentionProblem &p, py::handle value) {
            std::string name = as<std::string>(value, "layout");
            std::optional<flashc::Layout> layout = flashc::parseLayout(name);
            if (!layout)
              fail("unknown layout '" + name + "'");
            p.layout = *layout;
          })
      .def_property_readonly("value_dim", &flashc::AttentionProblem::valueDim)
      .def_property_readonly("effective_scale",
                             &flashc::AttentionProblem::effectiveScale)
      .def(
          "check",
          [](const flashc::AttentionProblem &p) {
            if (flashc::Status s = p.check())
              fail(s.message());
          },
          "Raises FlashcError naming the first invalid field.")
      .def("__str__", &flashc::AttentionProblem::str)
      .def_property_readonly_static("FIELDS", [](py::object) {
        return py::make_tuple("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                              "head_dim", "head_dim_v", "dtype", "mask",
                              "scale", "with_lse", "layout");
      });
  m.def(
      "mask_kinds",
      [] {
        py::list kinds;
        for (flashc::MaskKind kind : flashc::kMaskKinds)
          kinds.append(std::string(flashc::stringify(kind)));
        return kinds;
      },
      "The masks flashc knows, by name ('none', 'causal').");

  py::class_<rt::Bundle>(m, "Bundle")
      .def_static(
          "load",
          // `path` is bytes (os.fsencode) or a str.
          [](const std::string &path) {
            flashc::Result<rt::Bundle> b = rt::Bundle::load(path);
            if (!b)
              fail(b.status().message());
            return std::move(*b);
          },
          py::arg("path"))
      .def_property_readonly("variants",
                             [](const rt::Bundle &b) {
                               py::list out;
                               for (const rt::KernelVariant &v : b.variants)
                                 out.append(variantInfo(v));
                               return out;
                             })
      .def(
          "find",
          [](const rt::Bundle &b, const std::string &target,
             const std::string &dtype, int64_t group, int64_t headDim,
             int64_t headDimV, const std::string &mask, bool withLse,
             bool decode) -> py::object {
            rt::AttentionQuery q = toQuery(target, dtype, group, headDim,
                                           headDimV, mask, withLse, decode);
            const rt::KernelVariant *found = b.find(q);
            if (!found)
              return py::none();
            return py::int_(found - b.variants.data());
          },
          py::arg("target"), py::arg("dtype"), py::arg("group"),
          py::arg("head_dim"), py::arg("head_dim_v"), py::arg("mask"),
          py::arg("with_lse"), py::arg("decode"))
      .def(
          "launch",
          [](const rt::Bundle &b, size_t index, const std::string &device,
             py::handle q, py::handle k, py::handle v, py::handle out,
             py::handle lse, uintptr_t stream, int64_t splits, double scale) {
            if (index >= b.variants.size())
              fail("no variant " + std::to_string(index) + " in the bundle");
            const rt::KernelVariant *variant = &b.variants[index];
            rt::AttentionCall call;
            call.q = toView(toDesc(q), "q");
            call.k = toView(toDesc(k), "k");
            call.v = toView(toDesc(v), "v");
            call.out = toView(toDesc(out), "out");
            rt::TensorView lseView;
            if (!lse.is_none()) {
              lseView = toView(toDesc(lse), "lse");
              call.lse = &lseView;
            }
            call.stream = reinterpret_cast<void *>(stream);
            call.splits = splits;
            call.scale = scale;
            // Tensors less aligned than the variant assumes run on the
            // bundle's variant built for them, where it has one.
            if (int64_t alignment = rt::getCallAlignment(call);
                alignment < variant->alignment)
              if (const rt::KernelVariant *v =
                      b.find(variant->query, alignment))
                variant = v;
            std::shared_ptr<rt::Device> dev =
                getDevice(device, variant->query.target);
            flashc::Status status;
            {
              py::gil_scoped_release release;
              status = rt::launchAttention(*dev, *variant, call);
            }
            if (!status.ok())
              fail(status.message());
            return static_cast<size_t>(variant - b.variants.data());
          },
          py::arg("index"), py::arg("device"), py::arg("q"), py::arg("k"),
          py::arg("v"), py::arg("out"), py::arg("lse"), py::arg("stream"),
          py::arg("splits"), py::arg("scale"));

  m.def(
      "explain_miss",
      [](const rt::Bundle &b, const std::string &target,
         const std::string &dtype, int64_t group, int64_t headDim,
         int64_t headDimV, const std::string &mask, bool withLse,
         bool decode) {
        return b.explainMiss(toQuery(target, dtype, group, headDim, headDimV,
                                     mask, withLse, decode));
      },
      "Why the bundle has no variant for the query: the closest variant "
      "and the field in which it differs.");
  m.def(
      "set_simulator_max_instructions",
      [](uint64_t perThread) {
        simulatorOptions().maxInstructionsPerThread = perThread;
      },
      py::arg("per_thread"),
      "The simulator's budget for the launches that follow: a thread that "
      "executes more instructions fails its launch (0: no limit; default "
      "10^8).");
  m.def(
      "cuda_chip",
      []() { return getDevice("cuda", "")->getChip(); },
      "The chip of CUDA device 0 (sm_80, sm_90a); raises FlashcError where "
      "there is none.");
  m.def(
      "cuda_status",
      []() -> std::string {
        flashc::Result<std::shared_ptr<rt::Device>> d = rt::getCudaDevice();
        return d ? std::string() : d.status().message();
      },
      "An empty string when a CUDA device can be used, else why not.");
}
