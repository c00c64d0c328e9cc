//===- Problem.h - The one description of an attention problem --*- C++ -*-===//
//
// An attention problem, as every layer of flashc speaks of it: the
// compiler's spec, the runtime's variant lookup, the cost and wave models,
// the command-line driver and the Python module all read and write this
// struct, so that a new field (a mask kind, a layout) is declared once.
//
//   O = softmax(scale * Q K^T + mask) V     (and LSE = log-sum-exp of a row)
//
//   Q [batch, heads,   seqQ,  headDim ]     O   [batch, heads, seqQ, headDimV]
//   K [batch, kvHeads, seqKV, headDim ]     LSE [batch, heads, seqQ] (f32)
//   V [batch, kvHeads, seqKV, headDimV]
//
// in the dimension order `layout` names (flashc/Support/Layout.h). The
// query heads of one KV head (heads / kvHeads, the GQA group) share it.
//
// Dependency-free (C++17 and flashc/Support), so that the LLVM-free
// runtime uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CORE_PROBLEM_H
#define FLASHC_CORE_PROBLEM_H

#include "flashc/Support/Layout.h"
#include "flashc/Support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace flashc {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// The element type of Q, K, V and O (the log-sum-exp is always f32).
enum class ElementType { F32, F16, BF16 };

/// "f32", "f16" or "bf16".
const char *stringify(ElementType type);
/// The element type `name` spells (as stringify prints it), or nothing.
std::optional<ElementType> parseElementType(std::string_view name);
/// 4 for f32, 2 for f16 and bf16.
int64_t getElementBytes(ElementType type);

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// Which keys a query row attends to, as data: a new kind is a new case
/// here and in the passes that implement it, not a new boolean threaded
/// through every layer.
enum class MaskKind {
  /// Every query attends to every key.
  None,
  /// Query i attends to keys j <= i + (seqKV - seqQ): aligned at the
  /// bottom-right corner, so that the last query sees every key (decode
  /// with a KV cache).
  Causal,
};

/// The kinds, in declaration order; for tables and loops over every kind.
inline constexpr MaskKind kMaskKinds[] = {MaskKind::None, MaskKind::Causal};

struct Mask {
  MaskKind kind = MaskKind::None;

  static Mask none() { return Mask(); }
  static Mask causal() { return Mask{MaskKind::Causal}; }
  bool isCausal() const { return kind == MaskKind::Causal; }
  bool isNone() const { return kind == MaskKind::None; }

  /// "none" or "causal".
  std::string str() const;
  /// The mask `name` spells (as str() prints it), or nothing.
  static std::optional<Mask> parse(std::string_view name);

  bool operator==(const Mask &other) const { return kind == other.kind; }
  bool operator!=(const Mask &other) const { return !(*this == other); }
};

/// "none" or "causal".
const char *stringify(MaskKind kind);
/// Every kind's name, in declaration order: "none, causal" (for messages
/// that list what a mask may be).
std::string getMaskKindNames();

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

struct AttentionProblem {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kvHeads = 1;
  int64_t seqQ = 1;
  int64_t seqKV = 1;
  int64_t headDim = 64;
  /// V's and O's head dim; 0 means equal to headDim.
  int64_t headDimV = 0;
  ElementType dtype = ElementType::F32;
  /// The order of Q, K, V and O's dimensions in memory.
  Layout layout = Layout::BHND;
  Mask mask;
  /// The softmax scale; unset means 1/sqrt(headDim). Kernels take it as an
  /// argument: it is not part of a kernel's code.
  std::optional<double> scale;
  /// Also compute the log-sum-exp of every query row.
  bool withLse = false;

  int64_t valueDim() const { return headDimV ? headDimV : headDim; }
  /// Query heads per KV head.
  int64_t group() const { return kvHeads > 0 ? heads / kvHeads : 0; }
  int64_t elementBytes() const { return getElementBytes(dtype); }
  double effectiveScale() const;
  bool isCausal() const { return mask.isCausal(); }

  /// Checks every size (positive, head dims within kMaxHeadDim, heads a
  /// multiple of kvHeads, every tensor within kMaxTensorBytes) and the
  /// scale. The message names the field as the driver spells it
  /// (`kv-heads`, `head-dim-v`).
  Status check() const;
  /// A canonical one-line form, e.g.
  /// `b=1 hq=8 hkv=2 nq=128 nk=128 d=64 dv=64 f16 causal=1 scale=... lse=0`.
  std::string str() const;
};

/// An error unless `scale` is a softmax scale the kernels take: finite,
/// positive and a normal f32 (the kernels scale in f32).
Status checkScale(double scale);

/// Checks the sizes of `p` alone (see AttentionProblem::check); "" when
/// they are valid.
std::string checkProblemSizes(const AttentionProblem &p);

} // namespace flashc

#endif // FLASHC_CORE_PROBLEM_H
