//===- CostModel.cpp - FLOPs, HBM traffic and the CTA x wave model --------===//
//
// Implements the counts of CostModel.h. Block schedules are counted exactly,
// Q block by Q block, so tails (sizes that are not a multiple of the block)
// and the bottom-right causal alignment need no closed form; the wave model
// evaluates one kernel configuration at a time and `chooseSplits` searches
// the split counts.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/CostModel.h"
#include "flashc/Support/Sizes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir::flash;

namespace {

using flashc::ceilDiv;

/// B * Hq: the count every per-head figure is multiplied by.
int64_t headCount(const AttentionProblem &shape) {
  return shape.batch * shape.heads;
}

/// The tile sizes of `order` for the report: the given ones, or the
/// target's choice, clamped to the sequence lengths as `chooseTileSizes`
/// does.
TileSizes getReportTiles(const TargetInfo &target, const AttentionProblem &shape,
                         const CostOptions &options, LoopOrder order) {
  TileSizes tiles =
      chooseTileSizes(target, shape, order, /*wideWarps=*/true, options.stages,
                      options.warpgroupMma, options.alignment);
  if (options.blockQ > 0)
    tiles.blockQ = std::min(options.blockQ, shape.seqQ);
  if (options.blockKV > 0)
    tiles.blockKV = std::min(options.blockKV, shape.seqKV);
  return tiles;
}

LoopOrderCost getLoopOrderCost(const TargetInfo &target,
                               const AttentionProblem &shape,
                               const CostOptions &options, LoopOrder order,
                               double ioModel) {
  LoopOrderCost cost;
  cost.order = order;
  cost.tiles = getReportTiles(target, shape, options, order);
  cost.coverage =
      computeBlockCoverage(shape, cost.tiles.blockQ, cost.tiles.blockKV);
  cost.traffic =
      getLoopOrderTraffic(shape, order, cost.tiles.blockQ, cost.tiles.blockKV);
  cost.ratioToModel = ioModel > 0 ? cost.traffic.total() / ioModel : 0;
  return cost;
}

llvm::Error checkWaveTarget(const TargetInfo &target) {
  if (!target.isGPU())
    return llvm::createStringError(
        "the CTA x wave model needs a GPU target; '" + target.name +
        "' is not one");
  if (target.numProcessors <= 0 || target.perProcessorPeakTflops <= 0 ||
      target.memoryBandwidthGBs <= 0 || target.perProcessorBandwidthGBs <= 0)
    return llvm::createStringError(
        llvm::formatv("target '{0}' lacks wave-model figures: {1} SMs, {2} "
                      "TFLOP/s per SM, {3} GB/s HBM, {4} GB/s per SM",
                      target.name, target.numProcessors,
                      target.perProcessorPeakTflops, target.memoryBandwidthGBs,
                      target.perProcessorBandwidthGBs)
            .str());
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::flash::verifyCostShape(const AttentionProblem &shape) {
  const std::pair<const char *, int64_t> sizes[] = {
      {"batch", shape.batch},       {"heads", shape.heads},
      {"kvHeads", shape.kvHeads},   {"seqQ", shape.seqQ},
      {"seqKV", shape.seqKV},       {"headDim", shape.headDim},
      {"headDimV", shape.valueDim()}, {"elementBytes", shape.elementBytes()}};
  for (auto [name, value] : sizes)
    if (value <= 0)
      return llvm::createStringError(
          llvm::formatv("{0} must be positive, got {1}", name, value).str());
  if (shape.heads % shape.kvHeads != 0)
    return llvm::createStringError(
        llvm::formatv("{0} query heads are not a multiple of {1} kv heads",
                      shape.heads, shape.kvHeads)
            .str());
  // The limits every part of flashc shares (head dims, tensor sizes).
  std::string problem = flashc::checkProblemSizes(shape);
  if (!problem.empty())
    return llvm::createStringError(problem);
  // Every count is at most B * Hq * (Nq + 1) * (Nk + 1) * (2 (D + Dv) + 4)
  // (schedule FLOPs, traffic with blocks of one row) times 8 (bytes).
  int64_t bound = 1;
  for (int64_t f : {shape.batch, shape.heads, shape.seqQ + 1, shape.seqKV + 1,
                    2 * (shape.headDim + shape.valueDim()) + 4, int64_t(8)})
    if (llvm::MulOverflow(bound, f, bound))
      return llvm::createStringError(
          llvm::formatv("shape too large to count: B={0} Hq={1} Nq={2} "
                        "Nk={3} D={4} Dv={5} overflows 64-bit counts",
                        shape.batch, shape.heads, shape.seqQ, shape.seqKV,
                        shape.headDim, shape.valueDim())
              .str());
  return llvm::Error::success();
}

int64_t mlir::flash::getSramElements(const TargetInfo &target,
                                     const AttentionProblem &shape) {
  int64_t bytes = target.isGPU() ? shape.elementBytes() : 4;
  return std::max<int64_t>(target.sramBytes / bytes, 1);
}

//===----------------------------------------------------------------------===//
// FLOPs
//===----------------------------------------------------------------------===//

int64_t mlir::flash::countVisiblePairs(int64_t seqQ, int64_t seqKV,
                                       bool causal) {
  if (!causal)
    return seqQ * seqKV;
  // Row i sees keys 0 .. i + (Nk - Nq): max(0, i + Nk - Nq + 1) of them, and
  // never more than Nk since i <= Nq - 1. The rows that see any key form an
  // arithmetic series ending at Nk for the last row.
  int64_t firstRow = std::max<int64_t>(0, seqQ - seqKV);
  int64_t rows = seqQ - firstRow;
  if (rows <= 0)
    return 0;
  int64_t first = firstRow + seqKV - seqQ + 1;
  return rows * (first + seqKV) / 2;
}

int64_t mlir::flash::getDenseFlops(const AttentionProblem &shape) {
  return 2 * headCount(shape) * shape.seqQ * shape.seqKV *
         (shape.headDim + shape.valueDim());
}

int64_t mlir::flash::getCausalFlops(const AttentionProblem &shape) {
  return 2 * headCount(shape) *
         countVisiblePairs(shape.seqQ, shape.seqKV, shape.isCausal()) *
         (shape.headDim + shape.valueDim());
}

//===----------------------------------------------------------------------===//
// Block schedules
//===----------------------------------------------------------------------===//

double BlockCoverage::visitedFraction() const {
  int64_t total = totalPairs();
  return total > 0 ? static_cast<double>(visitedPairs) / total : 0.0;
}

BlockCoverage mlir::flash::computeBlockCoverage(const AttentionProblem &shape,
                                                int64_t blockQ,
                                                int64_t blockKV) {
  BlockCoverage c;
  c.blocksQ = ceilDiv(shape.seqQ, blockQ);
  c.blocksKV = ceilDiv(shape.seqKV, blockKV);
  int64_t offset = shape.seqKV - shape.seqQ;
  // The KV blocks Q block i (of `rows` rows) visits are a prefix: those its
  // last row sees.
  auto blocksOf = [&](int64_t i, int64_t rows) {
    if (!shape.isCausal())
      return c.blocksKV;
    int64_t lastKey = i * blockQ + rows - 1 + offset;
    return lastKey < 0 ? 0 : std::min(c.blocksKV, lastKey / blockKV + 1);
  };
  // `count` Q blocks of `rows` rows, each visiting `blocks` KV blocks.
  auto visit = [&](int64_t count, int64_t rows, int64_t blocks) {
    int64_t keys = std::min(shape.seqKV, blocks * blockKV);
    c.visitedPairs += count * blocks;
    c.visitedRows += count * blocks * rows;
    c.visitedKeys += count * keys;
    c.visitedScores += count * rows * keys;
    c.keysTouched = std::max(c.keysTouched, keys);
  };
  // The full Q blocks come in runs that visit the same number of KV blocks
  // (it grows with i under a causal mask): one step per run, so the cost is
  // O(min(Tr, Tc)), not O(Tr) (Nq = 2^32 with Br = 1 is a valid shape).
  int64_t full = c.blocksQ - 1;
  for (int64_t i = 0; i < full;) {
    int64_t blocks = blocksOf(i, blockQ);
    int64_t end = full;
    if (shape.isCausal() && blocks < c.blocksKV) {
      // `blocks` holds while the last row's key stays below `limit`:
      // i * Br + Br - 1 + offset < limit.
      int64_t limit = blocks == 0 ? 0 : blocks * blockKV;
      int64_t num = limit - (blockQ - 1) - offset;
      int64_t firstBeyond =
          num <= 0 ? 0 : num / blockQ + (num % blockQ != 0 ? 1 : 0);
      end = std::clamp<int64_t>(firstBeyond, i + 1, full);
    }
    visit(end - i, blockQ, blocks);
    i = end;
  }
  int64_t lastRows = shape.seqQ - full * blockQ;
  visit(1, lastRows, blocksOf(full, lastRows));
  return c;
}

double mlir::flash::getCausalBlockFraction(int64_t seqQ, int64_t seqKV,
                                           int64_t blockQ, int64_t blockKV) {
  AttentionProblem shape;
  shape.seqQ = seqQ;
  shape.seqKV = seqKV;
  shape.mask = ::flashc::Mask::causal();
  return computeBlockCoverage(shape, blockQ, blockKV).visitedFraction();
}

int64_t mlir::flash::getScheduleFlops(const AttentionProblem &shape,
                                      int64_t blockQ, int64_t blockKV) {
  BlockCoverage c = computeBlockCoverage(shape, blockQ, blockKV);
  return 2 * headCount(shape) * c.visitedScores *
         (shape.headDim + shape.valueDim());
}

//===----------------------------------------------------------------------===//
// HBM traffic
//===----------------------------------------------------------------------===//

HbmTraffic mlir::flash::getStandardTraffic(const AttentionProblem &shape) {
  int64_t nq = shape.seqQ, nk = shape.seqKV;
  int64_t d = shape.headDim, dv = shape.valueDim();
  int64_t scores = nq * nk;
  HbmTraffic t;
  // Q and K; S; P and V.
  t.reads = nq * d + nk * d + scores + scores + nk * dv;
  // S; P; O.
  t.writes = scores + scores + nq * dv;
  t.reads *= headCount(shape);
  t.writes *= headCount(shape);
  return t;
}

HbmTraffic mlir::flash::getLoopOrderTraffic(const AttentionProblem &shape,
                                            LoopOrder order, int64_t blockQ,
                                            int64_t blockKV) {
  BlockCoverage c = computeBlockCoverage(shape, blockQ, blockKV);
  int64_t nq = shape.seqQ;
  int64_t d = shape.headDim, dv = shape.valueDim();
  HbmTraffic t;
  if (order == LoopOrder::Algorithm1) {
    // K and V once; per visited pair the Q block and its O, l, m.
    t.reads = c.keysTouched * (d + dv) + c.visitedRows * (d + dv + 2);
    // The initial O, l, m; per visited pair O, l, m back.
    t.writes = nq * (dv + 2) + c.visitedRows * (dv + 2);
  } else {
    // Q once; per visited pair the K and V blocks.
    t.reads = nq * d + c.visitedKeys * (d + dv);
    // O and the row log-sum-exp once.
    t.writes = nq * dv + nq;
  }
  t.reads *= headCount(shape);
  t.writes *= headCount(shape);
  return t;
}

double mlir::flash::getIoModelElements(const AttentionProblem &shape,
                                       int64_t sramElements) {
  double d = std::max(shape.headDim, shape.valueDim());
  return static_cast<double>(headCount(shape)) * shape.seqQ * shape.seqKV * d *
         d / sramElements;
}

//===----------------------------------------------------------------------===//
// The CTA x wave model
//===----------------------------------------------------------------------===//

::flashc::WaveTarget mlir::flash::getWaveTarget(const TargetInfo &target) {
  // A GPU: the runtime's model of the chip, with this target's SM count
  // and bandwidth (which the caller may have set to a device's).
  if (target.isGPU())
    return ::flashc::getWaveTarget(target.name, target.numProcessors,
                                   target.memoryBandwidthGBs);
  // The CPU: one worker thread per "SM", rows of 64.
  ::flashc::WaveTarget w;
  w.numSMs = target.numProcessors;
  w.perSMPeakTflops = target.perProcessorPeakTflops;
  w.memoryBandwidthGBs = target.memoryBandwidthGBs;
  w.perSMBandwidthGBs = target.perProcessorBandwidthGBs;
  w.launchOverheadUs = target.launchOverheadUs;
  w.rowQuantum = 64;
  return w;
}

int64_t mlir::flash::getMaxSplits(const AttentionProblem &shape, int64_t blockKV,
                                  int64_t maxSplits) {
  return ::flashc::getMaxSplitCount(shape, blockKV, maxSplits);
}

/// The checks shared by the split-KV predictions: a shape the cost model
/// takes, a target with wave figures, positive tiles.
static llvm::Error checkSplitKVInputs(const TargetInfo &target,
                                      const AttentionProblem &shape,
                                      const TileSizes &tiles) {
  if (llvm::Error err = verifyCostShape(shape))
    return err;
  if (llvm::Error err = checkWaveTarget(target))
    return err;
  if (tiles.blockQ <= 0 || tiles.blockKV <= 0)
    return llvm::createStringError(
        llvm::formatv("tile sizes must be positive, got {0}x{1}", tiles.blockQ,
                      tiles.blockKV)
            .str());
  return llvm::Error::success();
}

llvm::Expected<WavePrediction>
mlir::flash::predictSplitKVTime(const TargetInfo &target,
                                const AttentionProblem &shape,
                                const TileSizes &tiles, int64_t splits) {
  if (llvm::Error err = checkSplitKVInputs(target, shape, tiles))
    return std::move(err);
  int64_t blocksKV = ceilDiv(shape.seqKV, tiles.blockKV);
  if (splits < 1 || splits > blocksKV)
    return llvm::createStringError(
        llvm::formatv("{0} splits out of range: {1} keys in blocks of {2} "
                      "make {3} blocks, and every split needs at least one",
                      splits, shape.seqKV, tiles.blockKV, blocksKV)
            .str());
  return ::flashc::predictSplitKV(getWaveTarget(target), shape,
                                  tiles.blockQ, tiles.blockKV, splits);
}

llvm::Expected<WavePrediction>
mlir::flash::chooseSplits(const TargetInfo &target, const AttentionProblem &shape,
                          const TileSizes &tiles, int64_t maxSplits) {
  // The search is the runtime's (flashc/Core/WaveModel.h).
  if (llvm::Error err = checkSplitKVInputs(target, shape, tiles))
    return std::move(err);
  return ::flashc::chooseSplitCount(getWaveTarget(target), shape,
                                    tiles.blockQ, tiles.blockKV, maxSplits);
}

llvm::Expected<WavePrediction>
mlir::flash::predictFA2KernelTime(const TargetInfo &target,
                                  const AttentionProblem &shape) {
  if (llvm::Error err = verifyCostShape(shape))
    return std::move(err);
  if (llvm::Error err = checkWaveTarget(target))
    return std::move(err);
  int64_t rows = std::min(kFA2KernelRows, shape.seqQ);
  int64_t dqk = shape.headDim, dv = shape.valueDim(), eb = shape.elementBytes();
  WavePrediction p;
  p.ctas = headCount(shape) * ceilDiv(shape.seqQ, kFA2KernelRows);
  p.rowsPerCta = kFA2KernelRows;
  p.keysPerCta = shape.seqKV;
  p.flopsPerCta = 2.0 * p.rowsPerCta * p.keysPerCta * (dqk + dv);
  p.bytesPerCta = double(rows) * dqk * eb +
                  double(shape.seqKV) * (dqk + dv) * eb +
                  double(rows) * (dv * eb + 4);
  ::flashc::evaluateWaves(getWaveTarget(target), p);
  return p;
}

double mlir::flash::getFloorTimeUs(const TargetInfo &target,
                                   const AttentionProblem &shape) {
  double flops = getCausalFlops(shape);
  double peak = target.numProcessors * target.perProcessorPeakTflops;
  int64_t dd = shape.headDim + shape.valueDim();
  double bytes = double(shape.batch) * shape.elementBytes() *
                 (double(shape.heads) * shape.seqQ * dd +
                  double(shape.kvHeads) * shape.seqKV * dd);
  double computeUs = peak > 0 ? flops / (peak * 1e6) : 0;
  double memoryUs = target.memoryBandwidthGBs > 0
                        ? bytes / (target.memoryBandwidthGBs * 1e3)
                        : 0;
  return std::max(computeUs, memoryUs);
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

llvm::Expected<CostReport>
mlir::flash::computeCostReport(const TargetInfo &target,
                               const AttentionProblem &shape,
                               const CostOptions &options) {
  if (llvm::Error err = verifyCostShape(shape))
    return std::move(err);
  if (target.sramBytes <= 0)
    return llvm::createStringError(
        llvm::formatv("target '{0}' has {1} bytes of SRAM", target.name,
                      target.sramBytes)
            .str());
  const std::pair<const char *, int64_t> knobs[] = {
      {"block-q", options.blockQ},
      {"block-kv", options.blockKV},
      {"splits", options.splits}};
  for (auto [name, value] : knobs)
    if (value < 0)
      return llvm::createStringError(
          llvm::formatv("{0} must be positive (or 0 to choose), got {1}", name,
                        value)
              .str());

  CostReport r;
  r.target = target.name;
  r.shape = shape;
  r.sramBytes = target.sramBytes;
  r.sramElements = getSramElements(target, shape);
  r.denseFlops = getDenseFlops(shape);
  r.causalFlops = getCausalFlops(shape);
  r.ioModelElements = getIoModelElements(shape, r.sramElements);
  r.standard = getStandardTraffic(shape);
  r.standardRatioToModel = r.standard.total() / r.ioModelElements;
  r.algorithm1 = getLoopOrderCost(target, shape, options, LoopOrder::Algorithm1,
                                  r.ioModelElements);
  r.fa2 = getLoopOrderCost(target, shape, options, LoopOrder::FA2,
                           r.ioModelElements);

  r.order = options.order;
  const LoopOrderCost &chosen = r.chosenOrder();
  r.tiles = chosen.tiles;
  r.coverage = chosen.coverage;
  r.scheduleFlops = getScheduleFlops(shape, r.tiles.blockQ, r.tiles.blockKV);

  if (options.splits > r.coverage.blocksKV)
    return llvm::createStringError(
        llvm::formatv("{0} splits out of range: {1} keys in blocks of {2} "
                      "make {3} blocks, and every split needs at least one",
                      options.splits, shape.seqKV, r.tiles.blockKV,
                      r.coverage.blocksKV)
            .str());
  r.splits = options.splits > 0 ? options.splits : 1;
  if (!target.isGPU())
    return r;

  llvm::Expected<WavePrediction> prediction =
      options.splits > 0
          ? predictSplitKVTime(target, shape, r.tiles, options.splits)
          : chooseSplits(target, shape, r.tiles);
  if (!prediction)
    return prediction.takeError();
  r.splits = prediction->splits;
  r.prediction = *prediction;
  llvm::Expected<WavePrediction> baseline = predictFA2KernelTime(target, shape);
  if (!baseline)
    return baseline.takeError();
  r.fa2KernelPrediction = *baseline;
  r.floorTimeUs = getFloorTimeUs(target, shape);
  return r;
}

//===----------------------------------------------------------------------===//
// Printers
//===----------------------------------------------------------------------===//

namespace {

/// One row of the traffic table, with `mark` after it.
void printTrafficRow(llvm::raw_ostream &os, llvm::StringRef name,
                     std::optional<TileSizes> tiles, const HbmTraffic &t,
                     double ratio, llvm::StringRef mark = "") {
  std::string br = tiles ? std::to_string(tiles->blockQ) : "-";
  std::string bc = tiles ? std::to_string(tiles->blockKV) : "-";
  os << llvm::formatv("                  {0,-21} {1,5} {2,5} {3,16} {4,16} "
                      "{5,16} {6,9:f2}{7}\n",
                      name, br, bc, t.reads, t.writes, t.total(), ratio,
                      mark.empty() ? std::string() : "  <- " + mark.str());
}

llvm::json::Object trafficToJSON(const HbmTraffic &t, double ratio) {
  return llvm::json::Object{{"reads", t.reads},
                            {"writes", t.writes},
                            {"total", t.total()},
                            {"ratioToModel", ratio}};
}

llvm::json::Object orderToJSON(const LoopOrderCost &c) {
  llvm::json::Object o = trafficToJSON(c.traffic, c.ratioToModel);
  o["blockQ"] = c.tiles.blockQ;
  o["blockKV"] = c.tiles.blockKV;
  return o;
}

} // namespace

void mlir::flash::printCostReport(const CostReport &r, llvm::raw_ostream &os) {
  const AttentionProblem &s = r.shape;
  os << llvm::formatv("  target          {0} (sram {1} bytes = {2} elements)\n",
                      r.target, r.sramBytes, r.sramElements);
  os << llvm::formatv("  shape           B={0} Hq={1} Hkv={2} Nq={3} Nk={4} "
                      "D={5} Dv={6}, {7}-byte elements, {8}\n",
                      s.batch, s.heads, s.kvHeads, s.seqQ, s.seqKV, s.headDim,
                      s.valueDim(), s.elementBytes(),
                      s.isCausal() ? "causal" : "not causal");
  os << llvm::formatv("  flops           dense {0}, causal {1}, schedule {2}\n",
                      r.denseFlops, r.causalFlops, r.scheduleFlops);
  // The loop orders are named by what they count: which loop is outer
  // decides which operands are read again on every pass of the inner one.
  os << llvm::formatv("  hbm elements    {0,-21} {1,5} {2,5} {3,16} {4,16} "
                      "{5,16} {6,9}\n",
                      "loop order", "Br", "Bc", "reads", "writes", "total",
                      "x model");
  printTrafficRow(os, "standard (3 passes)", std::nullopt, r.standard,
                  r.standardRatioToModel);
  // The order a kernel runs: the schedule's on the CPU; the GPU kernels
  // (the targets with a wave model) are all q-outer, whatever the schedule
  // asked.
  LoopOrder kernelOrder = r.prediction ? LoopOrder::FA2 : r.order;
  auto mark = [&](LoopOrder order) {
    return order == kernelOrder ? "kernel"
           : order == r.order   ? "schedule"
                                : "";
  };
  printTrafficRow(os, "kv-outer (algorithm1)", r.algorithm1.tiles,
                  r.algorithm1.traffic, r.algorithm1.ratioToModel,
                  mark(LoopOrder::Algorithm1));
  printTrafficRow(os, "q-outer (fa2)", r.fa2.tiles, r.fa2.traffic,
                  r.fa2.ratioToModel, mark(LoopOrder::FA2));
  os << llvm::formatv(
      "  loop orders     kv-outer reads K, V once but Q, O, l, m once per KV "
      "block ({0} blocks); q-outer reads Q, writes O once but reads K, V once "
      "per Q block ({1} blocks)\n",
      r.algorithm1.coverage.blocksKV, r.fa2.coverage.blocksQ);
  int64_t group = s.heads / s.kvHeads;
  if (group > 1)
    os << llvm::formatv("                  both per query head: a tile "
                        "packing the {0} query heads of a KV head reads its "
                        "K, V blocks {0}x less often\n",
                        group);
  os << llvm::formatv("  io model        N^2 d^2 / M = {0:f2} elements\n",
                      r.ioModelElements);
  os << llvm::formatv("  schedule        {0}, Br={1} Bc={2}, {3} x {4} blocks, "
                      "{5} of {6} visited (fraction {7:f6})\n",
                      stringifyLoopOrder(r.order), r.tiles.blockQ,
                      r.tiles.blockKV, r.coverage.blocksQ, r.coverage.blocksKV,
                      r.coverage.visitedPairs, r.coverage.totalPairs(),
                      r.coverage.visitedFraction());
  os << llvm::formatv("  splits          {0}\n", r.splits);
  if (!r.prediction)
    return;
  const WavePrediction &p = *r.prediction;
  os << llvm::formatv("  wave model      {0} CTAs in {1} wave(s), {2} rows x "
                      "{3} keys per CTA, {4}-bound at {5:f1} GB/s per CTA\n",
                      p.ctas, p.waves, p.rowsPerCta, p.keysPerCta,
                      p.computeBound ? "compute" : "memory",
                      p.bandwidthPerCtaGBs);
  os << llvm::formatv("                  per CTA {0:f2} us, combine {1:f2} us, "
                      "{2} kernel(s): predicted {3:f2} us\n",
                      p.ctaTimeUs, p.combineTimeUs, p.kernels, p.timeUs);
  os << llvm::formatv("                  floor {0:f2} us, unsplit FA2 kernel "
                      "{1:f2} us\n",
                      r.floorTimeUs.value_or(0),
                      r.fa2KernelPrediction ? r.fa2KernelPrediction->timeUs
                                            : 0.0);
}

llvm::json::Object mlir::flash::costReportToJSON(const CostReport &r) {
  const AttentionProblem &s = r.shape;
  llvm::json::Object shape{{"batch", s.batch},
                           {"heads", s.heads},
                           {"kvHeads", s.kvHeads},
                           {"seqQ", s.seqQ},
                           {"seqKV", s.seqKV},
                           {"headDim", s.headDim},
                           {"headDimV", s.valueDim()},
                           {"causal", s.isCausal()},
                           {"elementBytes", s.elementBytes()}};
  llvm::json::Object flops{{"dense", r.denseFlops},
                           {"causal", r.causalFlops},
                           {"schedule", r.scheduleFlops}};
  llvm::json::Object hbm{
      {"model", r.ioModelElements},
      {"standard", trafficToJSON(r.standard, r.standardRatioToModel)},
      {"algorithm1", orderToJSON(r.algorithm1)},
      {"fa2", orderToJSON(r.fa2)}};
  llvm::json::Object schedule{
      {"loopOrder", stringifyLoopOrder(r.order)},
      {"blockQ", r.tiles.blockQ},
      {"blockKV", r.tiles.blockKV},
      {"blocksQ", r.coverage.blocksQ},
      {"blocksKV", r.coverage.blocksKV},
      {"blockPairs", r.coverage.totalPairs()},
      {"visitedBlockPairs", r.coverage.visitedPairs},
      {"causalBlockFraction", r.coverage.visitedFraction()},
      {"splits", r.splits}};
  llvm::json::Value wave = nullptr;
  if (r.prediction) {
    const WavePrediction &p = *r.prediction;
    wave = llvm::json::Object{
        {"splits", p.splits},
        {"ctas", p.ctas},
        {"waves", p.waves},
        {"rowsPerCta", p.rowsPerCta},
        {"keysPerCta", p.keysPerCta},
        {"flopsPerCta", p.flopsPerCta},
        {"bytesPerCta", p.bytesPerCta},
        {"bandwidthPerCtaGBs", p.bandwidthPerCtaGBs},
        {"ctaTimeUs", p.ctaTimeUs},
        {"bound", p.computeBound ? "compute" : "memory"},
        {"kernels", p.kernels},
        {"combineTimeUs", p.combineTimeUs},
        {"timeUs", p.timeUs},
        {"floorUs", r.floorTimeUs.value_or(0)},
        {"fa2KernelTimeUs",
         r.fa2KernelPrediction ? r.fa2KernelPrediction->timeUs : 0.0}};
  }
  return llvm::json::Object{{"target", r.target},
                            {"sramBytes", r.sramBytes},
                            {"sramElements", r.sramElements},
                            {"shape", std::move(shape)},
                            {"flops", std::move(flops)},
                            {"hbmElements", std::move(hbm)},
                            {"schedule", std::move(schedule)},
                            {"waveModel", std::move(wave)}};
}
