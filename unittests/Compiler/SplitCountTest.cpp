//===- SplitCountTest.cpp - One split count, at compile and launch time ---===//
//
// The cost report (flashc cost, --flash-report-cost) and the runtime's
// launch choose a decode kernel's KV split count with the same wave model:
// for a table of problems on both chips, the report's split count equals
// the one a launch of the compiled variant uses on a device of that chip,
// with the chip's SM count and bandwidth and with another device's.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/CostModel.h"
#include "flashc/Compiler/JIT.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace mlir::flash;
namespace rt = flashc::runtime;

namespace {

/// A device of `chip` whose SM count and bandwidth are given, as a GPU of
/// the same architecture but another size reports them.
class SizedDevice : public rt::Device {
public:
  SizedDevice(std::string chip, int64_t sms, double bandwidthGBs)
      : chip(std::move(chip)), sms(sms), bandwidthGBs(bandwidthGBs) {}
  std::string describe() const override { return "sized " + chip; }
  bool isSimulator() const override { return true; }
  std::string getChip() const override { return chip; }
  int64_t getNumSMs() const override { return sms; }
  double getMemoryBandwidthGBs() const override { return bandwidthGBs; }
  flashc::Result<void *> allocate(uint64_t, void *) override {
    return flashc::Status::error("not used");
  }
  flashc::Status release(void *, void *) override {
    return flashc::Status::error("not used");
  }
  flashc::Status launch(const rt::KernelVariant &, const rt::KernelEntry &,
                        uint64_t, const std::vector<rt::LaunchArg> &,
                        void *) override {
    return flashc::Status::error("not used");
  }
  flashc::Status copyToDevice(void *, const void *, uint64_t,
                              void *) override {
    return flashc::Status::error("not used");
  }
  flashc::Status copyToHost(void *, const void *, uint64_t, void *) override {
    return flashc::Status::error("not used");
  }
  flashc::Status synchronize(void *) override {
    return flashc::Status::error("not used");
  }

private:
  std::string chip;
  int64_t sms;
  double bandwidthGBs;
};

struct Shape {
  int64_t batch, heads, kvHeads, seqQ, seqKV, headDim;
  flashc::ElementType dtype;
};

// Decode problems from one query to a full decode tile, short and long KV
// caches, MHA and GQA, the head dims the GPU kernels take.
const Shape kShapes[] = {
    {1, 16, 2, 1, 65536, 128, flashc::ElementType::F16},
    {1, 32, 32, 1, 4096, 128, flashc::ElementType::BF16},
    {4, 32, 8, 1, 8192, 128, flashc::ElementType::F16},
    {16, 8, 8, 1, 2048, 64, flashc::ElementType::F16},
    {1, 8, 1, 4, 32768, 64, flashc::ElementType::BF16},
    {2, 4, 4, 16, 100000, 256, flashc::ElementType::F16},
    {64, 32, 8, 1, 1024, 128, flashc::ElementType::BF16},
    {1, 1, 1, 1, 300, 64, flashc::ElementType::F16},
};

TEST(SplitCountTest, CostReportAndLaunchAgree) {
  for (const char *chip : {"sm_80", "sm_90a"}) {
    llvm::Expected<TargetInfo> target = TargetInfo::get(chip);
    ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
    for (const Shape &s : kShapes) {
      AttentionSpec spec;
      spec.batch = s.batch;
      spec.heads = s.heads;
      spec.kvHeads = s.kvHeads;
      spec.seqQ = s.seqQ;
      spec.seqKV = s.seqKV;
      spec.headDim = s.headDim;
      spec.dtype = s.dtype;
      SCOPED_TRACE(std::string(chip) + " " + spec.str());
      auto kernel = Compiler::global().compile(spec, chip);
      ASSERT_TRUE(static_cast<bool>(kernel))
          << llvm::toString(kernel.takeError());
      const rt::KernelVariant &variant = *(*kernel)->getMetadata().gpu;
      ASSERT_TRUE(variant.query.decode);

      // The device the report assumes (the chip's published figures), and
      // another size of it: half the SMs at H200's bandwidth.
      for (auto [sms, bandwidth] :
           {std::pair<int64_t, double>{0, 0}, {target->numProcessors / 2,
                                               4800.0}}) {
        TargetInfo t = *target;
        if (sms)
          t.numProcessors = sms;
        if (bandwidth)
          t.memoryBandwidthGBs = bandwidth;
        llvm::Expected<CostReport> report =
            computeCostReport(t, spec.shape());
        ASSERT_TRUE(static_cast<bool>(report))
            << llvm::toString(report.takeError());
        SizedDevice device(chip, t.numProcessors, t.memoryBandwidthGBs);
        int64_t launched = rt::getLaunchSplitCount(
            device, variant, s.batch * s.kvHeads, s.seqQ, s.seqKV);
        EXPECT_EQ(report->splits, launched)
            << "with " << t.numProcessors << " SMs at "
            << t.memoryBandwidthGBs << " GB/s";
        // The report's tiles are the variant's.
        EXPECT_EQ(report->tiles.blockKV, variant.blockKV);
        EXPECT_EQ(report->tiles.blockQ, std::min(variant.blockQ, s.seqQ));
      }
    }
  }
}

TEST(SplitCountTest, BandwidthIsAnInput) {
  // One decode step of 8 query heads over 32K keys on 132 SMs, a CTA
  // pulling at most 48 GB/s: at H100's 3.35 TB/s, 64 splits (one wave of
  // 64 CTAs nearly saturates it); at H200's 4.8 TB/s, 128 splits.
  flashc::AttentionProblem p;
  p.heads = 8;
  p.seqKV = 32768;
  p.headDim = 128;
  p.dtype = flashc::ElementType::F16;
  flashc::WavePrediction h100 = flashc::chooseSplitCount(
      flashc::getWaveTarget("sm_90a", 132, 3350), p, 1, 128);
  flashc::WavePrediction h200 = flashc::chooseSplitCount(
      flashc::getWaveTarget("sm_90a", 132, 4800), p, 1, 128);
  EXPECT_EQ(h100.splits, 64);
  EXPECT_EQ(h200.splits, 128);
  EXPECT_LT(h200.timeUs, h100.timeUs);
  // Unknown figures (0) are the chip's.
  flashc::WaveTarget chip = flashc::getWaveTarget("sm_90a");
  EXPECT_EQ(chip.numSMs, 132);
  EXPECT_EQ(chip.memoryBandwidthGBs, 3350);
  EXPECT_EQ(chip.rowQuantum, 16);
}

TEST(SplitCountTest, FewestSplitsWithinTheTolerance) {
  // H200, batch 64 of GQA 32/8 at D = 128 over 32K keys (the GPU check's
  // largest decode): 512 CTAs unsplit take 3.9 waves, and many splits
  // shave the last wave's tail off by a few percent. The choice is the
  // fewest splits within kSplitTolerance of the fastest prediction: here
  // the unsplit kernel, which the H200 measured at least as fast as any
  // split count.
  flashc::AttentionProblem p;
  p.batch = 64;
  p.heads = 32;
  p.kvHeads = 8;
  p.seqKV = 32768;
  p.headDim = 128;
  p.dtype = flashc::ElementType::BF16;
  flashc::WaveTarget h200 = flashc::getWaveTarget("sm_90a", 132, 4800);
  int64_t cap = flashc::getMaxSplitCount(p, 128);
  double fastest = 1e300;
  int64_t fastestSplits = 0;
  for (int64_t s = 1; s <= cap; ++s) {
    double t = flashc::predictSplitKV(h200, p, 4, 128, s).timeUs;
    if (t < fastest) {
      fastest = t;
      fastestSplits = s;
    }
  }
  EXPECT_GT(fastestSplits, 1) << "the case needs a faster split count";
  flashc::WavePrediction chosen = flashc::chooseSplitCount(h200, p, 4, 128);
  EXPECT_EQ(chosen.splits, 1);
  EXPECT_LE(chosen.timeUs, fastest * (1 + flashc::kSplitTolerance));
  // Every fewer split count is outside the tolerance (none here).
  for (int64_t s = 1; s < chosen.splits; ++s)
    EXPECT_GT(flashc::predictSplitKV(h200, p, 4, 128, s).timeUs,
              fastest * (1 + flashc::kSplitTolerance));
}

TEST(SplitCountTest, SameChoiceAsEverySplitCount) {
  // chooseSplitCount evaluates only the smallest split count of each
  // number of blocks a split gets; the fewest splits within the tolerance
  // of the fastest over every count from 1 must be the same, on both chips
  // and a grid of decode shapes.
  int64_t checked = 0;
  for (const char *chip : {"sm_80", "sm_90a"})
    for (int64_t batch : {1, 3, 8, 64})
      for (int64_t kvHeads : {1, 8})
        for (int64_t seqKV : {1, 100, 1000, 4097, 32768, 131072})
          for (int64_t blockKV : {64, 128})
            for (int64_t maxSplits : {7, 256}) {
              flashc::AttentionProblem p;
              p.batch = batch;
              p.heads = 4 * kvHeads;
              p.kvHeads = kvHeads;
              p.seqKV = seqKV;
              p.headDim = 128;
              p.dtype = flashc::ElementType::BF16;
              flashc::WaveTarget t = flashc::getWaveTarget(chip);
              int64_t cap = flashc::getMaxSplitCount(p, blockKV, maxSplits);
              std::vector<double> times;
              for (int64_t s = 1; s <= cap; ++s)
                times.push_back(
                    flashc::predictSplitKV(t, p, 4, blockKV, s).timeUs);
              double fastest = *std::min_element(times.begin(), times.end());
              int64_t expected = 1;
              while (times[expected - 1] >
                     fastest * (1 + flashc::kSplitTolerance))
                ++expected;
              flashc::WavePrediction chosen =
                  flashc::chooseSplitCount(t, p, 4, blockKV, maxSplits);
              EXPECT_EQ(chosen.splits, expected)
                  << chip << " B=" << batch << " Hkv=" << kvHeads
                  << " Nk=" << seqKV << " Bc=" << blockKV
                  << " max=" << maxSplits;
              EXPECT_EQ(chosen.timeUs, times[expected - 1]);
              checked += expected > 1;
            }
  // The grid has shapes that split.
  EXPECT_GT(checked, 20);
}

} // namespace
