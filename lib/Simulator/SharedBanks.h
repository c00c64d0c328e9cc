//===- SharedBanks.h - Bank conflicts of shared accesses --------*- C++ -*-===//
//
// The simulator runs each thread on its own, so the lanes of a warp reach
// a per-thread shared-memory access (ld.shared, st.shared, cp.async) one
// after another. A GPU issues it once for the warp, as one request that
// the shared memory serves in wavefronts. This file groups the lanes'
// accesses back into requests and counts the wavefronts that bank
// conflicts add.
//
// Each thread logs its accesses in order, a predicated-off one included
// (it takes its place without an access). When a warp's lanes have all
// stopped (each waits at a collective or a barrier, or has exited), the
// scheduler hands their logs over: the i-th entries of converged lanes are
// one request. Where the lanes' logs differ, a site's k-th entries since
// the warp last met are one request, as if the lanes had not diverged. A
// lane that logs more than kLogLimit accesses before its warp meets (a
// kernel without warp collectives or barriers) hands them over early, in
// requests of fewer lanes, which can only undercount conflicts.
//
// The model: 32 banks of 4-byte words (bank = word mod 32). A request
// takes as many wavefronts as the most distinct words any one bank holds
// (lanes reading one word share it); the fewest it could take is its
// distinct words over 32, rounded up (4 for a warp's 16-byte accesses). The
// difference is what bank conflicts cost.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_SHAREDBANKS_H
#define FLASHC_LIB_SIMULATOR_SHAREDBANKS_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

class SharedBankCounter {
public:
  /// Entries a thread logs before its warp's are handed over regardless.
  static constexpr size_t kLogLimit = 1024;

  /// Starts a CTA of `nthreads` threads whose code has `sites` sites;
  /// forgets what a CTA before left (finish counts it).
  void reset(uint32_t nthreads, uint32_t sites) {
    numThreads = nthreads;
    logs.resize(nthreads);
    for (std::vector<uint64_t> &log : logs)
      log.clear();
    logged.assign((nthreads + 31) / 32, 0);
    siteCounts.assign(sites, 0);
  }

  /// Thread `thread` accesses `size` bytes (at most 32; 0: predicated off)
  /// at shared `addr` at site `site`.
  void note(uint32_t thread, uint32_t site, uint32_t addr, uint32_t size) {
    std::vector<uint64_t> &log = logs[thread];
    log.push_back(uint64_t(site) << 40 | uint64_t(size) << 32 | addr);
    logged[thread / 32] = 1;
    if (log.size() >= kLogLimit)
      flush(thread / 32);
  }

  /// Hands over the logs of warp `warp`, whose lanes have all stopped.
  void flush(uint32_t warp) {
    if (logged[warp])
      flushLogs(warp);
  }

  /// Ends the CTA: every warp's logs are handed over.
  void finish() {
    for (uint32_t w = 0; w < logged.size(); ++w)
      flush(w);
  }

  /// Requests (with an access at least), and the wavefronts beyond the
  /// fewest each could take.
  uint64_t requests = 0, extraWavefronts = 0;

  /// The wavefronts of one request of `n` accesses (at most 32):
  /// `addr[i]`, `size[i]` bytes each (at most 32); `fewest` gets the fewest
  /// it could take.
  static uint32_t wavefronts(uint32_t n, const uint32_t *addr,
                             const uint8_t *size, uint32_t &fewest) {
    // The words by 128-byte line (32 words, one per bank): each line's
    // words as a mask of banks. A bank's distinct words are the lines
    // whose mask has its bit. An access of at most 32 bytes spans at most
    // two lines.
    constexpr uint32_t kLines = 64;
    uint32_t line[kLines], mask[kLines];
    uint32_t lines = 0;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t first = addr[i] / 4;
      uint32_t last = (addr[i] + std::max<uint32_t>(size[i], 1) - 1) / 4;
      for (uint32_t w = first; w <= last;) {
        uint32_t l = w / 32, end = std::min(last, 32 * l + 31);
        uint32_t bits = static_cast<uint32_t>(
            ((uint64_t(1) << (end - w + 1)) - 1) << (w % 32));
        uint32_t j = lines;
        while (j > 0 && line[j - 1] != l)
          --j;
        if (j > 0) {
          mask[j - 1] |= bits;
        } else {
          line[lines] = l;
          mask[lines++] = bits;
        }
        w = end + 1;
      }
    }
    uint32_t distinct = 0;
    bool full = true;
    for (uint32_t j = 0; j < lines; ++j) {
      distinct += static_cast<uint32_t>(__builtin_popcount(mask[j]));
      full &= mask[j] == ~0u;
    }
    fewest = std::max<uint32_t>(1, (distinct + 31) / 32);
    // Whole lines: every bank holds one word of each.
    if (full)
      return std::max<uint32_t>(1, lines);
    uint32_t perBank[32] = {};
    for (uint32_t j = 0; j < lines; ++j)
      for (uint32_t bits = mask[j]; bits; bits &= bits - 1)
        ++perBank[__builtin_ctz(bits)];
    return *std::max_element(perBank, perBank + 32);
  }

private:
  static uint32_t siteOf(uint64_t e) { return static_cast<uint32_t>(e >> 40); }
  static uint32_t sizeOf(uint64_t e) { return (e >> 32) & 0xff; }
  static uint32_t addrOf(uint64_t e) { return static_cast<uint32_t>(e); }

  /// One request: the accesses of its lanes.
  struct Request {
    uint32_t n = 0;
    uint32_t addr[32];
    uint8_t size[32];
    void add(uint64_t e) {
      if (sizeOf(e)) {
        addr[n] = addrOf(e);
        size[n++] = static_cast<uint8_t>(sizeOf(e));
      }
    }
  };

  __attribute__((noinline)) void flushLogs(uint32_t warp) {
    uint32_t lo = warp * 32, hi = std::min(numThreads, lo + 32);
    size_t common = SIZE_MAX, longest = 0;
    for (uint32_t t = lo; t < hi; ++t) {
      common = std::min(common, logs[t].size());
      longest = std::max(longest, logs[t].size());
    }
    // Converged lanes: entry i of each is one request.
    size_t i = 0;
    for (; i < common; ++i) {
      uint32_t site = siteOf(logs[lo][i]);
      bool same = true;
      for (uint32_t t = lo + 1; t < hi && same; ++t)
        same = siteOf(logs[t][i]) == site;
      if (!same)
        break;
      Request r;
      for (uint32_t t = lo; t < hi; ++t)
        r.add(logs[t][i]);
      retire(r);
    }
    if (i < longest)
      groupDiverged(lo, hi, i);
    for (uint32_t t = lo; t < hi; ++t)
      logs[t].clear();
    logged[warp] = 0;
  }

  /// The entries from `first` on of threads [lo, hi), whose logs agree
  /// before it: a site's k-th entries of each lane form a request.
  void groupDiverged(uint32_t lo, uint32_t hi, size_t first) {
    std::map<std::pair<uint32_t, uint32_t>, Request> bySiteAndCount;
    for (uint32_t t = lo; t < hi; ++t) {
      const std::vector<uint64_t> &log = logs[t];
      std::fill(siteCounts.begin(), siteCounts.end(), 0);
      for (size_t i = 0; i < log.size(); ++i) {
        uint32_t site = siteOf(log[i]);
        uint32_t k = siteCounts[site]++;
        if (i >= first)
          bySiteAndCount[{site, k}].add(log[i]);
      }
    }
    for (auto &[key, r] : bySiteAndCount)
      retire(r);
  }

  void retire(const Request &r) {
    if (!r.n)
      return;
    uint32_t fewest;
    uint32_t taken = wavefronts(r.n, r.addr, r.size, fewest);
    ++requests;
    extraWavefronts += taken - fewest;
  }

  uint32_t numThreads = 0;
  std::vector<std::vector<uint64_t>> logs;
  std::vector<uint8_t> logged;
  std::vector<uint32_t> siteCounts;
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_SHAREDBANKS_H
