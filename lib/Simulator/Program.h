//===- Program.h - Decoded PTX, the simulator's internal form ---*- C++ -*-===//
//
// The parser turns PTX text into this form once; the interpreter executes it.
// Every register of a kernel gets an index into a per-thread array of 64-bit
// slots (predicates included), every operand is pre-classified (register,
// immediate bits, special register, address), every label becomes an
// instruction index and every symbol an address, so that executing an
// instruction does no string work.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_PROGRAM_H
#define FLASHC_LIB_SIMULATOR_PROGRAM_H

#include "flashc/Simulator/Simulator.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

/// PTX state spaces.
enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };

/// PTX fundamental types.
enum class Ty : uint8_t {
  None,
  Pred,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  F32,
  F64,
};

/// Size in bytes of a value of type `t` (predicates count as 1). Inline
/// table lookups: the interpreter asks on every instruction.
inline unsigned sizeOf(Ty t) {
  //                                 None Pred B8 B16 B32 B64 U8 U16 U32 U64
  static constexpr uint8_t kSizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8,
                                       // S8 S16 S32 S64 F16 F16x2 BF16
                                       1, 2, 4, 8, 2, 4, 2,
                                       // BF16x2 F32 F64
                                       4, 4, 8};
  static_assert(sizeof(kSizes) == static_cast<unsigned>(Ty::F64) + 1,
                "one size per type");
  return kSizes[static_cast<uint8_t>(t)];
}
inline bool isFloat(Ty t) {
  return t == Ty::F16 || t == Ty::F16x2 || t == Ty::BF16 ||
         t == Ty::BF16x2 || t == Ty::F32 || t == Ty::F64;
}
inline bool isSigned(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}
const char *stringify(Ty t);

enum class Special : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NWarpId,
  SmId,
  NSmId,
  GridId,
  Clock,
  Clock64,
  GlobalTimer,
  LanemaskEq,
  LanemaskLt,
  LanemaskLe,
  LanemaskGt,
  LanemaskGe,
  DynamicSmemSize,
  TotalSmemSize,
};

enum class OperandKind : uint8_t { Reg, Imm, Special, Sink, Addr };

struct Operand {
  OperandKind kind = OperandKind::Imm;
  /// `!%p`: the predicate's negation.
  bool negate = false;
  Special special = Special::TidX;
  /// Register index (Reg), or the base register of an address (-1 for an
  /// absolute address).
  int32_t reg = -1;
  /// Immediate bits (Imm), or the constant part of an address (Addr).
  uint64_t imm = 0;
};

/// The decoded operations: one per line of Instructions.def, which names
/// the description (decoding, operands, executor) that owns each.
enum class Op : uint8_t {
#define FLASHC_SIM_OP(Name, Description) Name,
#include "Instructions.def"
};

/// Instruction flags.
enum : uint16_t {
  kFtz = 1 << 0,
  kSat = 1 << 1,
  kApprox = 1 << 2,
  kTrans = 1 << 3,   // ldmatrix.trans
  kPropagateNaN = 1 << 4,
  kHasPred = 1 << 5, // shfl with a predicate destination, setp with two
  kRelu = 1 << 6,
  kWide = 1 << 7,    // mul.wide / mad.wide
  kHi = 1 << 8,      // mul.hi / mad.hi
  kIgnoreSrc = 1 << 9, // cp.async with an ignore-src predicate
  kSrcSize = 1 << 10,  // cp.async with a src-size operand
  kAligned = 1 << 11,
  kSatFinite = 1 << 12,
};

/// Rounding modes (floating and integer-rounding forms of cvt).
enum class Round : uint8_t { Default, RN, RZ, RM, RP, RNI, RZI, RMI, RPI };

/// Comparison operators of setp.
enum class Cmp : uint8_t {
  EQ, NE, LT, LE, GT, GE, LO, LS, HI, HS,
  EQU, NEU, LTU, LEU, GTU, GEU, NUM, NAN_,
};

/// The boolean combiner of setp (`setp.lt.and.f32 p, a, b, c`).
enum class BoolOp : uint8_t { None, And, Or, Xor };

enum class ShflMode : uint8_t { Up, Down, Bfly, Idx };
enum class VoteMode : uint8_t { All, Any, Uni, Ballot };
enum class AtomOp : uint8_t { Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };

struct Inst {
  Op op = Op::Nop;
  Ty type = Ty::None;  // the instruction type (cvt: destination)
  Ty type2 = Ty::None; // cvt: source; mma: A/B element type
  Space space = Space::Generic;
  uint8_t vec = 1;     // v2/v4/v8 of ld/st, x1/x2/x4 of ldmatrix
  uint8_t numOps = 0;
  uint16_t flags = 0;
  Round round = Round::Default;
  Cmp cmp = Cmp::EQ;
  BoolOp boolOp = BoolOp::None;
  uint8_t mode = 0;   // ShflMode, VoteMode, AtomOp, mma shape, testp class
  int32_t guard = -1; // predicate register, -1 when unguarded
  bool guardNegated = false;
  uint32_t firstOp = 0; // index into KernelProgram::operands
  /// Branch target (Bra), cp-size (CpAsync), groups to keep (CpAsyncWait),
  /// barrier thread count (0: all).
  uint32_t target = 0;
  uint32_t line = 0;
  uint32_t opcodeIndex = 0; // into KernelProgram::opcodeNames
};

/// mma shapes the simulator implements.
enum MmaShape : uint8_t { M16N8K16 = 0, M16N8K8 = 1 };

struct KernelProgram {
  KernelInfo info;
  std::vector<Inst> code;
  std::vector<Operand> operands;
  /// At most kMaxRegisters.
  uint32_t numRegs = 0;
  /// Spelling of each distinct opcode of this kernel.
  std::vector<std::string> opcodeNames;
  /// Per thread; at most kMaxVariableBytes, as are the static shared bytes.
  uint32_t localBytes = 0;
  /// Offset of extern (dynamic) shared memory: the aligned end of the static
  /// shared variables.
  uint32_t dynamicSharedOffset = 0;
  uint32_t paramBytes = 0;
};

struct Program {
  std::string sourceName;
  std::vector<KernelProgram> kernels;
  std::set<std::string> opcodes;
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_PROGRAM_H
