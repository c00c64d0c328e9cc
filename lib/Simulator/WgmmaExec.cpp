//===- WgmmaExec.cpp - Executing warpgroup MMAs ---------------------------===//
//
// The CTARunner's side of wgmma (Instructions/Wgmma.h): one warp's 16 rows
// of a wgmma.mma_async, its commit groups, the retirement of groups by
// wgmma.wait_group, and the check that no other instruction touches the
// registers of a wgmma in flight.
//
//===----------------------------------------------------------------------===//

#include "Instructions.h"
#include "Runner.h"

#include <algorithm>
#include <cstring>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::detail;

bool CTARunner::execWgmma(const WarpStep<CTARunner> &S) {
  const Inst &I = S.I;
  const uint32_t n = I.vec * 8u;
  const bool regA = I.mode == 1, bf = I.type2 == Ty::BF16;
  if (S.mask != 0xffffffffu)
    return S.fault(ErrorCode::Trap, "wgmma needs all 32 lanes of the warp");
  // Operands: d[n/2], a (a descriptor or 4 registers), b, scale-d,
  // scale-a, scale-b, [trans-a], trans-b.
  const unsigned ia = n / 2, ib = regA ? ia + 4 : ia + 1, isd = ib + 1;
  auto imm = [&](unsigned i) {
    return static_cast<int32_t>(static_cast<uint32_t>(opnd(I, i).imm));
  };
  const double scale = double(imm(isd + 1)) * double(imm(isd + 2));
  const bool transA = regA ? false : imm(isd + 3) != 0;
  const bool transB = imm(regA ? isd + 3 : isd + 4) != 0;
  // Descriptors and scale-d are the warp's: every lane must agree.
  uint64_t descA = regA ? 0 : S.src(0, ia), descB = S.src(0, ib);
  bool scaleD = S.src(0, isd) & 1;
  for (uint32_t l = 1; l < 32; ++l)
    if ((!regA && S.src(l, ia) != descA) || S.src(l, ib) != descB ||
        bool(S.src(l, isd) & 1) != scaleD)
      return S.fault(ErrorCode::Trap,
                     "the lanes of a warp give wgmma different descriptors "
                     "or scale-d (lane " +
                         std::to_string(l) + ")");
  WgmmaDescriptor da = WgmmaDescriptor::decode(descA);
  WgmmaDescriptor db = WgmmaDescriptor::decode(descB);
  if ((!regA && da.baseOffset) || db.baseOffset)
    return S.fault(ErrorCode::Unsupported,
                   "a wgmma descriptor with a nonzero matrix base offset is "
                   "not implemented by the simulator");
  // Reads a 16-bit element of shared memory; records its chunk.
  WgmmaInFlight flight;
  flight.line = I.line;
  bool bad = false;
  auto element = [&](uint32_t addr) -> double {
    if (addr % 2 || addr + 2 > sharedSize) {
      if (!bad)
        S.fault(ErrorCode::OutOfBounds,
                "wgmma reads shared address " + hex(addr) + " beyond the " +
                    std::to_string(sharedSize) + " bytes of shared memory");
      bad = true;
      return 0;
    }
    uint32_t chunk = addr / AsyncExecutor::kChunkBytes;
    if (flight.chunks.empty() || flight.chunks.back() != chunk)
      flight.chunks.push_back(chunk);
    uint16_t h;
    std::memcpy(&h, shared.data() + addr, 2);
    return halfValue(h, bf);
  };
  // This warp's rows of A (16 x 16) and all of B (16 x n).
  const uint32_t rowBase = 16 * (S.w % 4);
  double A[16][16];
  std::vector<double> B(16 * size_t(n));
  if (regA) {
    // The m16n8k16 A fragment: a0 (g, 2t..), a1 (g+8, 2t..), a2 (g, 2t+8..),
    // a3 (g+8, 2t+8..).
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l / 4, t = l % 4;
      for (unsigned r = 0; r < 4; ++r) {
        uint32_t v = static_cast<uint32_t>(S.src(l, ia + r));
        uint32_t row = g + (r & 1) * 8, col = 2 * t + (r >> 1) * 8;
        A[row][col] = halfValue(static_cast<uint16_t>(v), bf);
        A[row][col + 1] = halfValue(static_cast<uint16_t>(v >> 16), bf);
      }
    }
  } else {
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t k = 0; k < 16; ++k)
        A[r][k] = element(da.address(transA, rowBase + r, k));
  }
  for (uint32_t k = 0; k < 16; ++k)
    for (uint32_t c = 0; c < n; ++c)
      B[k * n + c] = element(db.address(transB, c, k));
  if (bad)
    return false;
  // The shared operands must not be TMA destinations in flight.
  std::sort(flight.chunks.begin(), flight.chunks.end());
  flight.chunks.erase(std::unique(flight.chunks.begin(), flight.chunks.end()),
                      flight.chunks.end());
  if (async.active()) {
    AsyncSite site{I.line, S.leader.linear, S.w};
    for (uint32_t c : flight.chunks) {
      std::string why = async.onAsyncRead(c * AsyncExecutor::kChunkBytes,
                                          AsyncExecutor::kChunkBytes, site);
      if (!why.empty())
        return S.fault(ErrorCode::Race, "wgmma's " + why);
    }
    // Read until a wait retires it: no write may come in between.
    for (uint32_t c : flight.chunks)
      async.holdWgmmaRead(c, S.w, I.line);
  }
  // D = scale-d ? D + A B : A B, per element in double (D first, then k in
  // order), rounded once to f32.
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t g = l / 4, t = l % 4;
    uint64_t *regs = S.regs(l);
    for (uint32_t i = 0; i < n / 2; ++i) {
      uint32_t row = g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      double acc = 0;
      if (scaleD)
        acc = bitsFloat(static_cast<uint32_t>(S.src(l, i)));
      double sum = 0;
      for (uint32_t k = 0; k < 16; ++k)
        sum += A[row][k] * B[k * n + col];
      acc += scale * sum;
      set(opnd(I, i), regs, floatBits(static_cast<float>(acc)));
    }
  }
  // In flight until a wait retires its group: the accumulator and register
  // A are held.
  if (wgmmaHeld.empty())
    wgmmaHeld.assign(size_t(nthreads) * std::max(1u, k.numRegs), 0);
  unsigned held = regA ? ia + 4 : ia;
  for (unsigned i = 0; i < held; ++i) {
    const Operand &o = opnd(I, i);
    if (o.kind == OperandKind::Reg)
      flight.regs.push_back(o.reg);
  }
  for (uint32_t l = 0; l < 32; ++l) {
    Thread &lane = S.lane(l);
    for (int32_t r : flight.regs)
      ++wgmmaHeld[size_t(lane.linear) * k.numRegs + r];
    lane.wgmmaPending = true;
  }
  wgmmaInFlight[S.w].push_back(std::move(flight));
  return true;
}

bool CTARunner::commitWgmma(uint32_t warp) {
  // Every commit makes a group, an empty one too.
  for (WgmmaInFlight &f : wgmmaInFlight[warp])
    if (f.group == WgmmaInFlight::kUncommitted)
      f.group = wgmmaCommitted[warp];
  ++wgmmaCommitted[warp];
  return true;
}

bool CTARunner::waitWgmma(const WarpStep<CTARunner> &S, uint32_t keep) {
  uint32_t w = S.w;
  uint32_t committed = wgmmaCommitted[w];
  uint32_t limit = committed > keep ? committed - keep : 0;
  std::vector<WgmmaInFlight> &flights = wgmmaInFlight[w];
  size_t kept = 0;
  AsyncSite site{S.I.line, S.leader.linear, w};
  for (size_t i = 0; i < flights.size(); ++i) {
    WgmmaInFlight &f = flights[i];
    if (f.group == WgmmaInFlight::kUncommitted || f.group >= limit) {
      if (kept != i)
        flights[kept] = std::move(f);
      ++kept;
      continue;
    }
    for (uint32_t l = 0; l < 32; ++l)
      for (int32_t r : f.regs)
        --wgmmaHeld[size_t(S.lane(l).linear) * k.numRegs + r];
    // The warp has read the operands by now: a stage may be released.
    for (uint32_t c : f.chunks) {
      async.releaseWgmmaRead(c);
      std::string why = async.onAccess(c * AsyncExecutor::kChunkBytes,
                                       AsyncExecutor::kChunkBytes, false, site);
      if (!why.empty())
        return S.fault(ErrorCode::Race, "the operands of the wgmma at " +
                                            at(f.line) + ": " + why);
    }
  }
  flights.resize(kept);
  if (flights.empty())
    for (uint32_t l = 0; l < 32; ++l)
      S.lane(l).wgmmaPending = false;
  return true;
}

bool CTARunner::checkWgmmaRegisters(const Inst &inst, Thread &t) {
  const uint16_t *held = wgmmaHeld.data() + size_t(t.linear) * k.numRegs;
  for (unsigned i = 0; i < inst.numOps; ++i) {
    const Operand &o = opnd(inst, i);
    if ((o.kind != OperandKind::Reg && o.kind != OperandKind::Addr) ||
        o.reg < 0 || !held[o.reg])
      continue;
    // The wgmma in flight that holds it, for the message.
    uint32_t line = 0;
    for (const WgmmaInFlight &f : wgmmaInFlight[t.warp])
      if (std::find(f.regs.begin(), f.regs.end(), o.reg) != f.regs.end())
        line = f.line;
    return fault(ErrorCode::Race, inst, t,
                 "operand " + std::to_string(i + 1) +
                     " is a register of the wgmma at " + at(line) +
                     ", still in flight (no wgmma.wait_group has retired it)");
  }
  return true;
}
