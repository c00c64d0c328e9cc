//===- AsyncExecutor.cpp - Hopper's asynchronous units in the simulator ---===//
//
// mbarriers, TMA tensor loads and the vector-clock order between warps
// (AsyncExecutor.h).
//
//===----------------------------------------------------------------------===//

#include "AsyncExecutor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace flashc::sim;
using namespace flashc::sim::detail;

std::string AsyncExecutor::hex(uint64_t v) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void AsyncExecutor::reset(uint32_t warps, uint8_t *sharedMemory,
                          uint32_t bytes) {
  nwarps = warps;
  shared = sharedMemory;
  sharedBytes = bytes;
  if (used) {
    barriers.clear();
    inflight.clear();
    stores.clear();
    bulkCommitted.clear();
    for (VectorClock &a : arrivals)
      a = VectorClock();
    clocks.clear();
    chunks.clear();
    readClocks.clear();
    readLines.clear();
  }
  used = false;
}

void AsyncExecutor::activate() {
  if (used)
    return;
  used = true;
  size_t slots = size_t(nwarps) + 1;
  clocks.assign(slots, VectorClock(slots));
  for (uint32_t w = 0; w < nwarps; ++w)
    clocks[w][w] = 1;
  size_t n = (size_t(sharedBytes) + kChunkBytes - 1) / kChunkBytes;
  chunks.assign(n, Chunk());
  readClocks.assign(n * nwarps, 0);
  readLines.assign(n * nwarps, 0);
  fenceClocks.assign(nwarps, 0);
}

//===----------------------------------------------------------------------===//
// mbarriers
//===----------------------------------------------------------------------===//

AsyncExecutor::Barrier *AsyncExecutor::findBarrier(uint32_t off) {
  auto it = barriers.find(off);
  return it == barriers.end() ? nullptr : &it->second;
}

std::string AsyncExecutor::noBarrier(uint32_t off, const char *what) const {
  return std::string(what) + " on shared address " + hex(off) +
         ", which holds no mbarrier (mbarrier.init was not executed there)";
}

void AsyncExecutor::noteComplete(Barrier &b, uint64_t phaseBefore) {
  if (b.state.currentPhase() == phaseBefore)
    return;
  b.completed = b.released;
  b.completedPhase = b.state.currentPhase() - 1;
}

std::string AsyncExecutor::mbarrierInit(uint32_t off, uint64_t count,
                                        const AsyncSite &s) {
  activate();
  if (off % 8 || off > sharedBytes || sharedBytes - off < 8)
    return "mbarrier.init at shared address " + hex(off) +
           ": an mbarrier is 8 bytes, 8-byte aligned, inside shared memory";
  for (uint32_t c = off / kChunkBytes; c <= (off + 7) / kChunkBytes; ++c)
    if (chunks[c].inflightCopy != kNone)
      return "mbarrier.init at shared address " + hex(off) +
             " while a TMA copy into those bytes is in flight";
  Barrier b;
  if (std::string why = b.state.init(count); !why.empty())
    return why;
  b.released = VectorClock(clocks.size());
  b.completed = VectorClock(clocks.size());
  b.initLine = s.line;
  barriers[off] = std::move(b);
  return "";
}

std::string AsyncExecutor::mbarrierExpectTx(uint32_t off, uint64_t bytes,
                                            const AsyncSite &s) {
  activate();
  Barrier *b = findBarrier(off);
  if (!b)
    return noBarrier(off, "mbarrier.expect_tx");
  uint64_t before = b->state.currentPhase();
  std::string why = b->state.expectTx(bytes);
  noteComplete(*b, before);
  return why;
}

std::string AsyncExecutor::mbarrierArrive(uint32_t off, uint64_t count,
                                          uint64_t txBytes, const AsyncSite &s,
                                          uint64_t &state) {
  activate();
  Barrier *b = findBarrier(off);
  if (!b)
    return noBarrier(off, "mbarrier.arrive");
  // A phase whose arrivals are all in waits for bytes only: an arrival for
  // the next phase needs them landed (as they would be by now).
  if (b->state.pendingArrivals() < count && b->state.txCount() > 0) {
    bool any = false;
    if (std::string why = landFor(off, any); !why.empty())
      return why;
  }
  if (txBytes)
    if (std::string why = b->state.expectTx(txBytes); !why.empty())
      return why;
  // Release what the warp has done, then move its clock on: its later
  // accesses are not covered by this arrival.
  b->released.join(clocks[s.warp]);
  clocks[s.warp][s.warp]++;
  uint64_t before = b->state.currentPhase();
  if (std::string why = b->state.arrive(count, state); !why.empty())
    return why;
  noteComplete(*b, before);
  return "";
}

std::string AsyncExecutor::mbarrierTryWaitParity(uint32_t off, uint32_t parity,
                                                 const AsyncSite &s,
                                                 bool &complete) {
  activate();
  Barrier *b = findBarrier(off);
  if (!b)
    return noBarrier(off, "mbarrier.try_wait");
  complete = b->state.parityComplete(parity);
  // The phase waits for bytes only: land its copies, as late as possible.
  if (!complete && b->state.pendingArrivals() == 0 && b->state.txCount() > 0) {
    bool any = false;
    if (std::string why = landFor(off, any); !why.empty())
      return why;
    complete = b->state.parityComplete(parity);
  }
  if (complete)
    clocks[s.warp].join(b->completed);
  return "";
}

bool AsyncExecutor::overlapsMbarrier(uint32_t off, uint32_t size) const {
  if (barriers.empty())
    return false;
  auto it = barriers.lower_bound(off >= 7 ? off - 7 : 0);
  return it != barriers.end() && it->first < uint64_t(off) + size;
}

std::string AsyncExecutor::describeMbarrier(uint32_t off) const {
  auto it = barriers.find(off);
  if (it == barriers.end())
    return "no mbarrier at shared address " + hex(off);
  std::string text = "the mbarrier at shared address " + hex(off) + " (" +
                     it->second.state.describe();
  size_t copies = 0;
  for (const Copy &c : inflight)
    copies += c.mbar == off;
  if (copies)
    text += ", " + std::to_string(copies) + " TMA copies in flight";
  return text + ")";
}

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

std::string AsyncExecutor::checkBox(const TensorMap &map, uint32_t off,
                                    const char *role, ErrorCode &code) const {
  uint64_t bytes = map.boxBytes();
  code = ErrorCode::Misaligned;
  if (off % 128)
    return std::string("the ") + role + " is not 128-byte aligned";
  code = ErrorCode::OutOfBounds;
  if (off > sharedBytes || bytes > sharedBytes - off)
    return "the box's " + std::to_string(bytes) +
           " bytes extend past the CTA's " + std::to_string(sharedBytes) +
           " bytes of shared memory";
  code = ErrorCode::Unsupported;
  if (map.swizzle != 0 && map.boxRowBytes() != (16u << map.swizzle))
    return "a swizzled box whose rows (" + std::to_string(map.boxRowBytes()) +
           " bytes) are not the swizzle's span is not implemented by the "
           "simulator";
  return "";
}

std::string AsyncExecutor::issueTensorLoad(const TensorMap &map,
                                           const int32_t *coords, uint32_t dst,
                                           uint32_t mbar, const AsyncSite &s,
                                           ErrorCode &code) {
  activate();
  uint64_t bytes = map.boxBytes();
  std::string what = "cp.async.bulk.tensor into shared address " + hex(dst);
  if (std::string why = checkBox(map, dst, "destination", code); !why.empty())
    return what + ": " + why;
  code = ErrorCode::Trap;
  if (!findBarrier(mbar))
    return noBarrier(mbar, "cp.async.bulk.tensor's complete_tx");
  if (overlapsMbarrier(dst, static_cast<uint32_t>(bytes)))
    return what + ": the box overlaps an mbarrier";
  if (inflight.size() >= kMaxCopiesInFlight)
    return what + ": more than " + std::to_string(kMaxCopiesInFlight) +
           " TMA copies in flight";
  code = ErrorCode::Race;
  const VectorClock &me = clocks[s.warp];
  uint32_t first = dst / kChunkBytes;
  uint32_t last = static_cast<uint32_t>((dst + bytes - 1) / kChunkBytes);
  // A copy in flight, then reads, then writes not ordered before this
  // copy: the first found of the most telling kind is reported. (Two
  // copies in flight into the same bytes are refused even when the order
  // is not checked: a chunk keeps one copy.)
  for (uint32_t c = first; c <= last; ++c) {
    const Chunk &ch = chunks[c];
    if (ch.inflightCopy == kNone)
      continue;
    uint32_t addr = c * kChunkBytes;
    if (const Copy *o = findCopy(ch.inflightCopy))
      return what + " overlaps, at " + hex(addr) + ", the TMA copy issued at " +
             hooks.at(o->site.line) + " by " + hooks.thread(o->site.thread) +
             ", which is still in flight";
    return what + " overlaps a TMA copy in flight at " + hex(addr);
  }
  for (uint32_t c = first; c <= last && checking; ++c)
    for (uint32_t r = 0; r < nwarps; ++r) {
      uint32_t rc = readClocks[size_t(c) * nwarps + r];
      if (r != s.warp && rc > me[r])
        return what + " overwrites, at " + hex(c * kChunkBytes) +
               ", bytes that warp " + std::to_string(r) + " read at " +
               hooks.at(readLines[size_t(c) * nwarps + r]) +
               " and has not released to the issuing thread (a stage "
               "still being consumed)";
    }
  for (uint32_t c = first; c <= last && checking; ++c) {
    const Chunk &ch = chunks[c];
    if (ch.heldByWgmma)
      return what + " overwrites, at " + hex(c * kChunkBytes) +
             ", an operand of the wgmma issued at " + hooks.at(ch.wgmmaLine) +
             " by warp " + std::to_string(ch.wgmmaWarp) +
             ", which no wgmma.wait_group has retired";
    if (ch.writer != kNone && ch.writer != s.warp &&
        me[ch.writer] < ch.writeClock)
      return what + " overwrites, at " + hex(c * kChunkBytes) +
             (ch.writer == tmaSlot()
                  ? ", the data of the TMA copy issued at " +
                        hooks.at(ch.writeLine) +
                        ", which the issuing thread has not seen consumed "
                        "(no wait on a release by its readers)"
                  : ", data warp " + std::to_string(ch.writer) + " wrote at " +
                        hooks.at(ch.writeLine) +
                        " that the issuing thread has not waited for");
  }
  Copy copy;
  copy.id = nextCopyId++;
  copy.map = map;
  std::copy(coords, coords + map.rank, copy.coords);
  copy.dst = dst;
  copy.bytes = static_cast<uint32_t>(bytes);
  copy.mbar = mbar;
  copy.site = s;
  copy.issuer = me;
  for (uint32_t c = first; c <= last; ++c)
    chunks[c].inflightCopy = copy.id;
  inflight.push_back(std::move(copy));
  return "";
}

std::string AsyncExecutor::land(Copy &c) {
  const TensorMap &map = c.map;
  std::string error;
  uint8_t fill[8];
  unsigned eb = map.elementBytes;
  // Out-of-bounds elements: zeros, or the canonical NaN of the type.
  std::memset(fill, 0, sizeof fill);
  if (map.oobFill == 1) {
    if (eb == 2)
      fill[0] = 0xff, fill[1] = 0x7f;
    else if (eb == 4)
      fill[0] = fill[1] = 0xff, fill[2] = 0xc0, fill[3] = 0x7f;
    else if (eb == 8)
      std::memset(fill, 0xff, 7), fill[6] = 0xf8, fill[7] = 0x7f;
  }
  auto swizzle = static_cast<TensorMapSwizzle>(map.swizzle);
  forEachBoxElement(
      map, c.coords, [&](uint64_t offset, uint64_t address, bool inBounds) {
        if (!error.empty())
          return;
        uint32_t to =
            swizzleAddress(c.dst + static_cast<uint32_t>(offset), swizzle);
        if (!inBounds) {
          std::memcpy(shared + to, fill, eb);
          return;
        }
        error = hooks.readGlobal(address, eb, shared + to);
      });
  if (!error.empty())
    return "the TMA copy issued at " + hooks.at(c.site.line) + " by " +
           hooks.thread(c.site.thread) + ": " + error;
  uint32_t clock = ++clocks[tmaSlot()][tmaSlot()];
  uint32_t first = c.dst / kChunkBytes;
  uint32_t last = (c.dst + c.bytes - 1) / kChunkBytes;
  for (uint32_t i = first; i <= last; ++i) {
    Chunk &ch = chunks[i];
    ch.inflightCopy = kNone;
    ch.writer = tmaSlot();
    ch.writeClock = clock;
    ch.writeLine = c.site.line;
  }
  if (hooks.landed)
    hooks.landed(c.dst, c.bytes);
  Barrier *b = findBarrier(c.mbar);
  if (!b)
    return "the TMA copy issued at " + hooks.at(c.site.line) +
           " completes on shared address " + hex(c.mbar) +
           ", which no longer holds an mbarrier";
  // The copy's complete_tx releases what its issuer knew and the write.
  b->released.join(c.issuer);
  b->released[tmaSlot()] = std::max(b->released[tmaSlot()], clock);
  uint64_t before = b->state.currentPhase();
  std::string why = b->state.completeTx(c.bytes);
  noteComplete(*b, before);
  if (!why.empty())
    return "the TMA copy issued at " + hooks.at(c.site.line) + ": " + why;
  return "";
}

std::string AsyncExecutor::landFor(uint32_t mbar, bool &any) {
  for (auto it = inflight.begin(); it != inflight.end();) {
    if (it->mbar != mbar) {
      ++it;
      continue;
    }
    Copy c = std::move(*it);
    it = inflight.erase(it);
    any = true;
    if (std::string why = land(c); !why.empty())
      return why;
  }
  return "";
}

bool AsyncExecutor::landAll(std::string &error) {
  bool any = !inflight.empty();
  while (!inflight.empty()) {
    Copy c = std::move(inflight.front());
    inflight.pop_front();
    if (std::string why = land(c); !why.empty()) {
      error = why;
      return true;
    }
  }
  return any;
}

//===----------------------------------------------------------------------===//
// Plain accesses and barriers
//===----------------------------------------------------------------------===//

const AsyncExecutor::Copy *AsyncExecutor::findCopy(uint32_t id) const {
  for (const Copy &c : inflight)
    if (c.id == id)
      return &c;
  return nullptr;
}

std::string AsyncExecutor::checkCopies(const Chunk &ch, uint32_t addr,
                                       const char *kind,
                                       const VectorClock &me) const {
  if (ch.inflightCopy != kNone)
    if (const Copy *o = findCopy(ch.inflightCopy))
      return std::string(kind) + " shared address " + hex(addr) +
             " while the TMA copy into it issued at " + hooks.at(o->site.line) +
             " by " + hooks.thread(o->site.thread) +
             " is in flight (before a completed phase of the mbarrier at " +
             hex(o->mbar) + " covers it)";
  if (ch.writer == tmaSlot() && me[tmaSlot()] < ch.writeClock)
    return std::string(kind) + " shared address " + hex(addr) +
           ", which the TMA copy issued at " + hooks.at(ch.writeLine) +
           " wrote, without a wait on the mbarrier phase that covers it";
  return "";
}

void AsyncExecutor::recordRead(uint32_t chunk, const AsyncSite &s) {
  readClocks[size_t(chunk) * nwarps + s.warp] = clocks[s.warp][s.warp];
  readLines[size_t(chunk) * nwarps + s.warp] = s.line;
}

std::string AsyncExecutor::onAccess(uint32_t off, uint32_t size, bool write,
                                    const AsyncSite &s) {
  if (!used || !checking || size == 0)
    return "";
  const char *kind = write ? "write of" : "read of";
  VectorClock &me = clocks[s.warp];
  uint32_t first = off / kChunkBytes, last = (off + size - 1) / kChunkBytes;
  for (uint32_t c = first; c <= last && c < chunks.size(); ++c) {
    Chunk &ch = chunks[c];
    uint32_t addr = std::max(off, c * kChunkBytes);
    if (std::string why = checkCopies(ch, addr, kind, me); !why.empty())
      return why;
    if (write && ch.heldByWgmma)
      return "write of shared address " + hex(addr) +
             ", which the wgmma issued at " + hooks.at(ch.wgmmaLine) +
             " by warp " + std::to_string(ch.wgmmaWarp) +
             " still reads (no wgmma.wait_group has retired it)";
    if (write && ch.heldByStores)
      for (const Store &st : stores)
        if (c >= st.first && c <= st.last)
          return "write of shared address " + hex(addr) +
                 ", which the TMA store issued at " + hooks.at(st.line) +
                 " by " + hooks.thread(st.thread) +
                 " still reads (no cp.async.bulk.wait_group has retired it)";
    if (write) {
      // A write after another warp's read of the chunk (a wgmma's operand,
      // a TMA store's source, a load) needs that read ordered before it.
      for (uint32_t r = 0; r < nwarps; ++r)
        if (r != s.warp && readClocks[size_t(c) * nwarps + r] > me[r])
          return "write of shared address " + hex(addr) + ", which warp " +
                 std::to_string(r) + " read at " +
                 hooks.at(readLines[size_t(c) * nwarps + r]) +
                 " with no barrier between that read and this write";
      ch.writer = s.warp;
      ch.writeClock = me[s.warp];
      ch.writeLine = s.line;
    } else {
      recordRead(c, s);
    }
  }
  return "";
}

void AsyncExecutor::barrierArrive(uint32_t id, uint32_t warp) {
  if (!used || id >= 16)
    return;
  arrivals[id].join(clocks[warp]);
  clocks[warp][warp]++;
}

void AsyncExecutor::barrierComplete(uint32_t id,
                                    const std::vector<uint32_t> &warps) {
  if (!used)
    return;
  VectorClock joined(clocks.size());
  if (id < 16) {
    joined.join(arrivals[id]);
    arrivals[id] = VectorClock();
  }
  for (uint32_t w : warps)
    joined.join(clocks[w]);
  for (uint32_t w : warps) {
    clocks[w] = joined;
    clocks[w][w]++;
  }
}

//===----------------------------------------------------------------------===//
// The asynchronous proxy
//===----------------------------------------------------------------------===//

void AsyncExecutor::fenceProxyAsync(uint32_t warp) {
  if (!used)
    return;
  fenceClocks[warp] = clocks[warp][warp];
  clocks[warp][warp]++;
}

std::string AsyncExecutor::onAsyncRead(uint32_t off, uint32_t size,
                                       const AsyncSite &s) {
  if (!used || !checking || size == 0)
    return "";
  VectorClock &me = clocks[s.warp];
  uint32_t first = off / kChunkBytes, last = (off + size - 1) / kChunkBytes;
  for (uint32_t c = first; c <= last && c < chunks.size(); ++c) {
    Chunk &ch = chunks[c];
    uint32_t addr = std::max(off, c * kChunkBytes);
    if (std::string why = checkCopies(ch, addr, "read of", me); !why.empty())
      return why;
    if (ch.writer != kNone && ch.writer < nwarps) {
      if (fenceClocks[ch.writer] < ch.writeClock)
        return "read of shared address " + hex(addr) + ", which warp " +
               std::to_string(ch.writer) + " wrote at " +
               hooks.at(ch.writeLine) +
               " with no fence.proxy.async between that write and this "
               "read through the asynchronous proxy";
      if (ch.writer != s.warp && me[ch.writer] < ch.writeClock)
        return "read of shared address " + hex(addr) + ", which warp " +
               std::to_string(ch.writer) + " wrote at " +
               hooks.at(ch.writeLine) + " with no barrier between them";
    }
    recordRead(c, s);
  }
  return "";
}

std::string AsyncExecutor::issueTensorStore(const TensorMap &map,
                                            const int32_t *coords, uint32_t src,
                                            const AsyncSite &s,
                                            ErrorCode &code) {
  activate();
  uint64_t bytes = map.boxBytes();
  std::string what = "cp.async.bulk.tensor from shared address " + hex(src);
  if (std::string why = checkBox(map, src, "source", code); !why.empty())
    return what + ": " + why;
  code = ErrorCode::Race;
  if (std::string why = onAsyncRead(src, static_cast<uint32_t>(bytes), s);
      !why.empty())
    return what + ": " + why;
  code = ErrorCode::OutOfBounds;
  std::string error;
  auto swizzle = static_cast<TensorMapSwizzle>(map.swizzle);
  forEachBoxElement(
      map, coords, [&](uint64_t offset, uint64_t address, bool inBounds) {
        if (!error.empty() || !inBounds)
          return;
        uint32_t from =
            swizzleAddress(src + static_cast<uint32_t>(offset), swizzle);
        error = hooks.writeGlobal(address, map.elementBytes, shared + from);
      });
  if (!error.empty())
    return what + ": " + error;
  Store st;
  st.thread = s.thread;
  st.first = src / kChunkBytes;
  st.last = static_cast<uint32_t>((src + bytes - 1) / kChunkBytes);
  st.line = s.line;
  for (uint32_t c = st.first; c <= st.last; ++c)
    chunks[c].heldByStores++;
  stores.push_back(st);
  return "";
}

void AsyncExecutor::holdWgmmaRead(uint32_t chunk, uint32_t warp,
                                  uint32_t line) {
  if (chunk >= chunks.size())
    return;
  Chunk &ch = chunks[chunk];
  ++ch.heldByWgmma;
  ch.wgmmaWarp = warp;
  ch.wgmmaLine = line;
}

void AsyncExecutor::releaseWgmmaRead(uint32_t chunk) {
  if (chunk < chunks.size() && chunks[chunk].heldByWgmma)
    --chunks[chunk].heldByWgmma;
}

void AsyncExecutor::bulkCommit(uint32_t thread) {
  uint32_t &committed = bulkCommitted[thread];
  for (Store &st : stores)
    if (st.thread == thread && st.group == Store::kUncommitted)
      st.group = committed;
  ++committed;
}

void AsyncExecutor::bulkWait(uint32_t thread, uint32_t keep) {
  uint32_t committed = bulkCommitted[thread];
  uint32_t limit = committed > keep ? committed - keep : 0;
  size_t kept = 0;
  for (size_t i = 0; i < stores.size(); ++i) {
    Store &st = stores[i];
    if (st.thread == thread && st.group != Store::kUncommitted &&
        st.group < limit) {
      for (uint32_t c = st.first; c <= st.last; ++c)
        chunks[c].heldByStores--;
      continue;
    }
    stores[kept++] = st;
  }
  stores.resize(kept);
}
