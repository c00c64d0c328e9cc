//===- JIT.h - Compile, cache and run attention kernels ---------*- C++ -*-===//
//
// The C++ API of flashc. Describe an attention problem with an
// AttentionSpec (or hand in an MLIR module holding one attention), compile
// it for a target, and run the resulting Kernel on caller-owned buffers:
//
//   flash::AttentionSpec spec;
//   spec.batch = 2; spec.heads = 8; spec.seqQ = spec.seqKV = 1024;
//   spec.headDim = 64; spec.dtype = flash::DType::F16; spec.causal = true;
//   auto kernel = flash::Compiler::global().compile(spec, "cpu");
//   if (!kernel) ... llvm::toString(kernel.takeError()) ...
//   if (llvm::Error e = (*kernel)->run(q, k, v, out)) ...
//
// Compilation is content-addressed and thread-safe: the same spec, target
// and options compile once per process.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_JIT_H
#define FLASHC_RUNTIME_JIT_H

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Pipelines/Pipelines.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class ExecutionEngine;

namespace flash {

enum class DType { F32, F16, BF16 };
llvm::StringRef stringifyDType(DType dtype);
std::optional<DType> parseDType(llvm::StringRef name);
int64_t getDTypeBytes(DType dtype);

/// One attention problem: O = softmax(scale * Q K^T) V with
/// Q [batch, heads, seqQ, headDim], K [batch, kvHeads, seqKV, headDim],
/// V [batch, kvHeads, seqKV, headDimV], O [batch, heads, seqQ, headDimV] and
/// optionally LSE [batch, heads, seqQ] (f32).
struct AttentionSpec {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kvHeads = 1;
  int64_t seqQ = 1;
  int64_t seqKV = 1;
  int64_t headDim = 64;
  /// 0 means equal to headDim.
  int64_t headDimV = 0;
  DType dtype = DType::F32;
  bool causal = false;
  /// Unset means 1/sqrt(headDim).
  std::optional<double> scale;
  bool withLse = false;

  int64_t valueDim() const { return headDimV ? headDimV : headDim; }
  double effectiveScale() const;
  /// Checks sizes, the GQA ratio and the scale; the error names the field.
  llvm::Error validate() const;
  /// A canonical one-line form, used as the cache key.
  std::string str() const;
  /// The problem in the terms of the tile-size and cost models.
  AttentionShape shape() const;
  /// The kernel module: `func.func @flash_attention` taking Q, K, V, O (and
  /// LSE) as memrefs with any strides but a unit innermost stride, wrapping
  /// one flash.attention.
  std::string toMLIR() const;

  /// Reads the spec of the single flash.attention (or naive graph, which is
  /// fused first) of `source`, whose operands must be static function
  /// arguments. The error explains what did not fit.
  static llvm::Expected<AttentionSpec> fromMLIR(llvm::StringRef source);
};

/// A caller-owned strided buffer. Sizes and strides are in elements.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;

  /// A densely packed row-major tensor.
  static TensorRef contiguous(void *data, DType dtype,
                              llvm::ArrayRef<int64_t> sizes);
};

/// What the compiler chose, and the IR after each stage.
struct KernelMetadata {
  std::string target;
  std::string config;
  TileSizes tiles;
  int64_t splits = 1;
  double compileSeconds = 0;
  /// (stage, IR after it), in pipeline order.
  std::vector<std::pair<std::string, std::string>> stageIR;
};

/// A compiled attention kernel for one AttentionSpec.
class Kernel {
public:
  ~Kernel();
  const AttentionSpec &getSpec() const { return spec; }
  const KernelMetadata &getMetadata() const { return metadata; }

  /// Runs the kernel. Checks every buffer's element type, sizes and strides
  /// against the spec first; a mismatch is an error naming the buffer, not
  /// a crash. `lse` must be given exactly when the spec asks for it.
  llvm::Error run(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                  const TensorRef &out, const TensorRef *lse = nullptr) const;

  /// Writes `<NN>-<stage>.mlir` for every stage into `directory`.
  llvm::Error dumpIR(llvm::StringRef directory) const;

private:
  friend class Compiler;
  friend struct KernelBuilder;
  Kernel() = default;
  AttentionSpec spec;
  KernelMetadata metadata;
  // The engine keeps using the target machine and the IR transformer (for
  // code it compiles at teardown), so they are declared first and outlive
  // it.
  std::unique_ptr<llvm::TargetMachine> targetMachine;
  std::function<llvm::Error(llvm::Module *)> transformer;
  std::unique_ptr<ExecutionEngine> engine;
  void *entry = nullptr;
};

/// Compiles specs into kernels, caching them by (spec, target, options).
class Compiler {
public:
  /// The process-wide compiler.
  static Compiler &global();

  llvm::Expected<std::shared_ptr<const Kernel>>
  compile(const AttentionSpec &spec, llvm::StringRef target = "cpu",
          const PipelineConfig &config = {});

  /// Compiles the attention described by an MLIR module (see
  /// AttentionSpec::fromMLIR).
  llvm::Expected<std::shared_ptr<const Kernel>>
  compileModule(llvm::StringRef source, llvm::StringRef target = "cpu",
                const PipelineConfig &config = {});

  /// Runs the pipeline on `spec`'s module up to `stage` (all stages when
  /// empty) and returns the IR, without building a kernel.
  static llvm::Expected<std::string> lowerToStage(const AttentionSpec &spec,
                                                  const PipelineConfig &config,
                                                  llvm::StringRef stage);

  /// Runs the whole pipeline on `spec`'s module and returns the LLVM IR
  /// after LLVM's O3 pipeline for the host CPU.
  static llvm::Expected<std::string> emitLLVMIR(const AttentionSpec &spec,
                                                const PipelineConfig &config);

  size_t getCacheSize() const;
  int64_t getCacheHits() const;
  void clearCache();

private:
  struct PendingCompile;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Kernel>> cache;
  /// Compilations in flight: later callers for the same key wait on them.
  std::map<std::string, std::shared_ptr<PendingCompile>> pending;
  int64_t hits = 0;
};

} // namespace flash
} // namespace mlir

#endif // FLASHC_RUNTIME_JIT_H
