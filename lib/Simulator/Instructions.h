//===- Instructions.h - Every instruction description -----------*- C++ -*-===//
//
// Includes the headers of the instruction descriptions that
// Instructions.def names, for the parser and the interpreter, which
// generate their dispatch from that registry.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_H

#include "Instructions/Arith.h"
#include "Instructions/Async.h"
#include "Instructions/Bulk.h"
#include "Instructions/Control.h"
#include "Instructions/Convert.h"
#include "Instructions/Math.h"
#include "Instructions/Memory.h"
#include "Instructions/Warp.h"
#include "Instructions/Wgmma.h"

#include <type_traits>

namespace flashc {
namespace sim {
namespace detail {

/// Whether description `D` is a warp collective.
template <typename D>
constexpr bool isWarpCollective = std::is_base_of_v<WarpInst, D>;

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_H
