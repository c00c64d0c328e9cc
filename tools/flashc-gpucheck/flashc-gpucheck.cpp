//===- flashc-gpucheck.cpp - Check kernels on a GPU (or the simulator) ----===//
//
// The LLVM-free checks scripts/gpu-check.sh runs on a machine with a GPU
// (and, with --device sim, anywhere):
//
//   flashc-gpucheck numerics --bundle DIR [--device cuda|sim] [--quick]
//                            [--filter TEXT] [--resume-after ID]
//       Runs every kernel variant of a bundle on fresh random inputs, with
//       poisoned outputs, and compares with a float64 reference computed
//       here. One line per variant and shape; exit 1 on any failure. A
//       kernel that does not finish within FLASHC_CUDA_SYNC_TIMEOUT_S, or
//       faults (an illegal address...), loses the device for the rest of
//       the process: the run stops with a line "lost: ID" and exit 3, and
//       --resume-after ID runs the variants after ID, in the bundle's
//       order, in a new process.
//
//   flashc-gpucheck simkernels --ptx SimTestKernels.ptx
//                              [--ptx-sm90 SimTestKernelsSm90.ptx] [--dry-run]
//                              [--resume-after NAME]
//       Runs the PTX simulator's own test kernels (nvcc-compiled) both on
//       the CUDA device and in the simulator, on the same inputs, and
//       compares: bit for bit where the operations are exact (integer,
//       data movement, fragment placement, correctly rounded float
//       operations), within stated tolerances for mma.sync and wgmma (the
//       hardware's accumulation order) and the .approx instructions. On an
//       sm_90a device, the Hopper kernels too (TMA with and without the
//       128-byte swizzle, mbarrier pipelines, stmatrix, wgmma with both B
//       layouts and A from registers), their tensor maps encoded by each
//       device.
//       --dry-run uses the simulator for both sides (a check of the
//       harness without a GPU). A kernel that hangs or faults stops the
//       run as in numerics ("lost: NAME", exit 3; --resume-after NAME).
//
//   flashc-gpucheck hosttime --bundle DIR [--filter TEXT] [--calls N]
//       The host's time per call of launchAttention on the CUDA device:
//       the first decode variant whose id holds TEXT (default
//       bf16-g4-d128-decode), B = 1, 8 KV heads, one query, 1024 and 32768
//       keys, at the wave model's split count and at 1, 2 and 16. Calls are
//       issued back to back in batches of 100, waiting for the device
//       after each batch (so the launch queue never fills): the host
//       figure is what each call costs the host, the runtime's own work
//       and the driver's, and the second figure adds the waits. On the
//       fake driver with FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1 it is the
//       runtime's own work alone.
//
//   flashc-gpucheck simbench --bundle DIR [--filter TEXT] [--workers N]
//       The PTX simulator's speed on the bundle's kernels, in simulated
//       thread-instructions per second (one worker, with and without race
//       checking, and N workers).
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"
#include "flashc/Support/Files.h"
#include "flashc/Support/Float16.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace flashc;
using namespace flashc::runtime;

namespace {

int fail(const std::string &message) {
  std::cerr << "flashc-gpucheck: " << message << "\n";
  return 1;
}

/// After a kernel that hung or faulted (Device::isLost): the device runs
/// nothing more in this process, so the check stops with "lost: WHAT", and
/// --resume-after WHAT goes on in a new one. Exits 3 without tearing down
/// what may wait for a hung kernel.
[[noreturn]] void stopAtLostDevice(const std::string &what) {
  std::cout << "stopped: the device runs nothing more in this process\n"
            << "lost: " << what << "\n";
  std::cout.flush();
  std::fflush(stdout);
  std::_Exit(3);
}

/// Host buffers mirrored in device memory (the same memory on the
/// simulator).
class Buffers {
public:
  explicit Buffers(Device &device) : device(device) {}
  ~Buffers() {
    for (void *p : owned)
      (void)device.release(p, nullptr);
  }
  /// Device memory holding `bytes` copied from `host`.
  Result<void *> upload(const void *host, uint64_t bytes) {
    Result<void *> p = device.allocate(bytes, nullptr);
    if (!p)
      return p;
    owned.push_back(*p);
    if (Status s = device.copyToDevice(*p, host, bytes, nullptr))
      return s;
    return *p;
  }
  Status download(void *host, const void *devicePtr, uint64_t bytes) {
    if (Status s = device.copyToHost(host, devicePtr, bytes, nullptr))
      return s;
    return device.synchronize(nullptr);
  }

private:
  Device &device;
  std::vector<void *> owned;
};

//===----------------------------------------------------------------------===//
// numerics
//===----------------------------------------------------------------------===//

double toDouble(uint16_t bits, ElementType t) {
  return t == ElementType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
}
uint16_t fromFloat(float v, ElementType t) {
  return t == ElementType::F16 ? floatToHalf(v) : floatToBFloat16(v);
}

struct Shape {
  int64_t batch, kvHeads, seqQ, seqKV;
};

/// A call of `q`'s kernel over contiguous [B, H, N, D] tensors at the
/// given device pointers.
AttentionCall contiguousCall(const AttentionQuery &q, const Shape &s,
                             void *dq, void *dk, void *dv, void *dout) {
  int64_t heads = s.kvHeads * q.group;
  AttentionCall call;
  call.q = TensorView::contiguous(dq, q.dtype,
                                  {s.batch, heads, s.seqQ, q.headDim});
  call.k = TensorView::contiguous(dk, q.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, q.headDim});
  call.v = TensorView::contiguous(dv, q.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, q.headDimV});
  call.out = TensorView::contiguous(dout, q.dtype,
                                    {s.batch, heads, s.seqQ, q.headDimV});
  return call;
}

/// The float64 reference: bottom-right causal alignment, empty rows 0 and
/// -inf.
/// The softmax scale of the checks: not the default 1/sqrt(D), so that the
/// kernels' scale argument is exercised.
double checkScale(const AttentionQuery &q) {
  return 0.75 / std::sqrt(static_cast<double>(q.headDim));
}

void reference(const AttentionQuery &q, const Shape &s,
               const std::vector<uint16_t> &qd, const std::vector<uint16_t> &kd,
               const std::vector<uint16_t> &vd, std::vector<double> &out,
               std::vector<double> &lse) {
  int64_t heads = s.kvHeads * q.group, d = q.headDim, dv = q.headDimV;
  out.assign(s.batch * heads * s.seqQ * dv, 0);
  lse.assign(s.batch * heads * s.seqQ, -INFINITY);
  std::vector<double> p(s.seqKV);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / q.group;
      for (int64_t i = 0; i < s.seqQ; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < s.seqKV; ++j) {
          bool visible = !q.mask.isCausal() || j <= i + (s.seqKV - s.seqQ);
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += toDouble(qd[((b * heads + h) * s.seqQ + i) * d + c],
                            q.dtype) *
                   toDouble(kd[((b * s.kvHeads + hk) * s.seqKV + j) * d + c],
                            q.dtype);
          p[j] = visible ? dot * checkScale(q) : -INFINITY;
          m = std::max(m, p[j]);
        }
        if (std::isinf(m))
          continue;
        double sum = 0;
        for (int64_t j = 0; j < s.seqKV; ++j)
          sum += p[j] = std::exp(p[j] - m);
        double *o = &out[((b * heads + h) * s.seqQ + i) * dv];
        for (int64_t j = 0; j < s.seqKV; ++j)
          for (int64_t c = 0; c < dv; ++c)
            o[c] += p[j] / sum *
                    toDouble(vd[((b * s.kvHeads + hk) * s.seqKV + j) * dv + c],
                             q.dtype);
        lse[(b * heads + h) * s.seqQ + i] = m + std::log(sum);
      }
    }
}

/// Runs one variant on one shape; returns false on a mismatch.
bool checkVariant(Device &device, const KernelVariant &v, const Shape &s,
                  unsigned seed, bool print = true) {
  const AttentionQuery &q = v.query;
  int64_t heads = s.kvHeads * q.group;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto random = [&](int64_t n) {
    std::vector<uint16_t> data(n);
    for (uint16_t &x : data)
      x = fromFloat(normal(rng), q.dtype);
    return data;
  };
  std::vector<uint16_t> qd = random(s.batch * heads * s.seqQ * q.headDim);
  std::vector<uint16_t> kd = random(s.batch * s.kvHeads * s.seqKV * q.headDim);
  std::vector<uint16_t> vd =
      random(s.batch * s.kvHeads * s.seqKV * q.headDimV);
  // Outputs poisoned with NaN: a row the kernel forgets shows.
  std::vector<uint16_t> out(s.batch * heads * s.seqQ * q.headDimV, 0xffff);
  std::vector<float> lse(s.batch * heads * s.seqQ, NAN);

  Buffers buffers(device);
  auto up = [&](const auto &host) {
    return buffers.upload(host.data(), host.size() * sizeof(host[0]));
  };
  Result<void *> dq = up(qd), dk = up(kd), dvv = up(vd), dout = up(out),
                 dlse = up(lse);
  for (Result<void *> *r : {&dq, &dk, &dvv, &dout, &dlse})
    if (!*r) {
      std::cout << v.id << ": " << r->message() << "\n";
      return false;
    }
  AttentionCall call = contiguousCall(q, s, *dq, *dk, *dvv, *dout);
  TensorView lseView = TensorView::contiguous(*dlse, ElementType::F32,
                                              {s.batch, heads, s.seqQ});
  if (q.withLse)
    call.lse = &lseView;
  call.scale = checkScale(q);
  LaunchReport report;
  Status status = launchAttention(device, v, call, &report);
  if (!status)
    status = buffers.download(out.data(), *dout, out.size() * 2);
  if (!status && q.withLse)
    status = buffers.download(lse.data(), *dlse, lse.size() * 4);
  char shape[96];
  std::snprintf(shape, sizeof(shape), "B=%lld Hkv=%lld Nq=%lld Nk=%lld",
                static_cast<long long>(s.batch),
                static_cast<long long>(s.kvHeads),
                static_cast<long long>(s.seqQ),
                static_cast<long long>(s.seqKV));
  if (status) {
    std::cout << v.id << " " << shape << ": " << status.message() << "\n";
    return false;
  }
  std::vector<double> expected, expectedLse;
  reference(q, s, qd, kd, vd, expected, expectedLse);
  double worst = 0, worstLse = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double got = toDouble(out[i], q.dtype);
    worst = std::max(worst, std::isfinite(got) ? std::fabs(got - expected[i])
                                               : INFINITY);
  }
  if (q.withLse)
    for (size_t i = 0; i < lse.size(); ++i) {
      double want = expectedLse[i], got = lse[i];
      double err = std::isinf(want) ? (got == want ? 0 : INFINITY)
                                    : std::fabs(got - want) / (1 + std::fabs(want));
      worstLse = std::max(worstLse, err);
    }
  double tolerance = q.dtype == ElementType::F16 ? 4e-3 : 3e-2;
  bool ok = worst <= tolerance && worstLse <= 1e-3;
  char lseText[32] = "";
  if (q.withLse)
    std::snprintf(lseText, sizeof(lseText), ", lse %.2e", worstLse);
  if (print)
    std::printf("%-44s %-28s splits %-3lld max|err| %.2e%s  %s\n",
                v.id.c_str(), shape, static_cast<long long>(report.splits),
                worst, lseText, ok ? "PASS" : "FAIL");
  return ok;
}

int numerics(const std::vector<std::string> &args) {
  std::string bundleDir, deviceName = "cuda", filter, resumeAfter;
  bool quick = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--bundle" && i + 1 < args.size())
      bundleDir = args[++i];
    else if (args[i] == "--device" && i + 1 < args.size())
      deviceName = args[++i];
    else if (args[i] == "--filter" && i + 1 < args.size())
      filter = args[++i];
    else if (args[i] == "--quick")
      quick = true;
    else if (args[i] == "--resume-after" && i + 1 < args.size())
      resumeAfter = args[++i];
    else
      return fail("numerics: unexpected argument '" + args[i] + "'");
  }
  if (bundleDir.empty())
    return fail("numerics needs --bundle DIR");
  Result<Bundle> bundle = Bundle::load(bundleDir);
  if (!bundle)
    return fail(bundle.message());
  // The variants after --resume-after's, in the bundle's order.
  auto first = bundle->variants.begin();
  if (!resumeAfter.empty()) {
    first = std::find_if(
        bundle->variants.begin(), bundle->variants.end(),
        [&](const KernelVariant &v) { return v.id == resumeAfter; });
    if (first == bundle->variants.end())
      return fail("--resume-after: the bundle has no variant '" + resumeAfter +
                  "'");
    ++first;
  }
  std::shared_ptr<Device> device;
  if (deviceName == "sim") {
    device = getSimulatorDevice("sm_90a");
  } else if (deviceName == "cuda") {
    Result<std::shared_ptr<Device>> cuda = getCudaDevice(0);
    if (!cuda)
      return fail(cuda.message());
    device = *cuda;
  } else {
    return fail("--device must be cuda or sim");
  }
  std::cout << "device: " << device->describe() << "\n";
  unsigned seed = std::random_device{}();
  std::cout << "seed: " << seed << "\n";
  int failures = 0, runs = 0;
  for (auto it = first; it != bundle->variants.end(); ++it) {
    const KernelVariant &v = *it;
    if (!filter.empty() && v.id.find(filter) == std::string::npos)
      continue;
    // The device's chip (sm_80 kernels run on sm_90 too); the simulator
    // runs both.
    if (!device->isSimulator() && v.query.target == "sm_90a" &&
        device->getChip() != "sm_90a")
      continue;
    std::vector<Shape> shapes;
    if (v.query.decode)
      shapes = quick ? std::vector<Shape>{{1, 2, 1, 200}}
                     : std::vector<Shape>{{3, 2, 1, 1000}, {1, 2, 3, 70}};
    else
      // Quick: keys enough for three blocks of the widest (128), so that a
      // pipeline of two stages fills one of them again.
      shapes = quick ? std::vector<Shape>{{1, 1, 40, 300}}
                     : std::vector<Shape>{{2, 2, 133, 257}, {1, 1, 70, 33}};
    for (const Shape &s : shapes) {
      ++runs;
      failures += !checkVariant(*device, v, s, seed + runs);
      if (device->isLost()) {
        std::cout << runs - failures << " of " << runs << " runs passed\n";
        stopAtLostDevice(v.id);
      }
    }
  }
  std::cout << runs - failures << " of " << runs << " runs passed\n";
  // Resuming after the bundle's last variant leaves none to run.
  if (runs == 0 && !resumeAfter.empty() && first == bundle->variants.end())
    return 0;
  if (runs == 0)
    return fail("no kernel of the bundle ran" +
                (filter.empty() ? std::string(" on ") + device->describe()
                                : " (--filter '" + filter + "' matches none "
                                  "that runs on " + device->describe() + ")"));
  return failures ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// simbench
//===----------------------------------------------------------------------===//

/// The simulator's speed on the bundle's kernels: thread-instructions per
/// second with one worker (race checking on, then off) and with every
/// core, on a prefill and a decode shape per variant. Each run is also
/// checked against the float64 reference (outside the timed launches).
int simbench(const std::vector<std::string> &args) {
  std::string bundleDir, filter;
  unsigned workers = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--bundle" && i + 1 < args.size())
      bundleDir = args[++i];
    else if (args[i] == "--filter" && i + 1 < args.size())
      filter = args[++i];
    else if (args[i] == "--workers" && i + 1 < args.size())
      workers = static_cast<unsigned>(std::stoul(args[++i]));
    else
      return fail("simbench: unexpected argument '" + args[i] + "'");
  }
  if (bundleDir.empty())
    return fail("simbench needs --bundle DIR");
  Result<Bundle> bundle = Bundle::load(bundleDir);
  if (!bundle)
    return fail(bundle.message());
  struct Mode {
    const char *name;
    SimulatorOptions options;
  };
  const Mode modes[] = {{"1 worker", {1, true}},
                        {"1 worker, no race check", {1, false}},
                        {"workers", {workers, true}}};
  std::printf("%-40s %-26s %10s %9s %9s %9s %7s\n", "variant", "shape",
              "Minstr", "1w Mi/s", "1w-nr", "Nw Mi/s", "Nw/1w");
  unsigned seed = std::random_device{}();
  int failures = 0, rows = 0;
  uint64_t totalInstructions = 0;
  double totalSeconds[3] = {0, 0, 0};
  for (const KernelVariant &v : bundle->variants) {
    if (!filter.empty() && v.id.find(filter) == std::string::npos)
      continue;
    Shape shape = v.query.decode ? Shape{1, 2, 1, 4096} : Shape{1, 1, 256, 512};
    double rate[3] = {0, 0, 0};
    uint64_t instructions = 0;
    for (int m = 0; m < 3; ++m) {
      std::shared_ptr<Device> device =
          getSimulatorDevice(v.query.target, modes[m].options);
      failures += !checkVariant(*device, v, shape, seed + rows, false);
      Result<SimulatorCounters> counters = getSimulatorCounters(*device);
      if (!counters)
        return fail(counters.message());
      instructions = counters->threadInstructions;
      rate[m] = counters->threadInstructions / counters->seconds * 1e-6;
      totalSeconds[m] += counters->seconds;
    }
    totalInstructions += instructions;
    ++rows;
    char text[64];
    std::snprintf(text, sizeof(text), "B=%lld Hkv=%lld Nq=%lld Nk=%lld",
                  static_cast<long long>(shape.batch),
                  static_cast<long long>(shape.kvHeads),
                  static_cast<long long>(shape.seqQ),
                  static_cast<long long>(shape.seqKV));
    std::printf("%-40s %-26s %10.1f %9.1f %9.1f %9.1f %7.2f\n", v.id.c_str(),
                text, instructions * 1e-6, rate[0], rate[1], rate[2],
                rate[2] / rate[0]);
  }
  if (rows)
    std::printf("all %d: %.1f M thread-instructions/s on 1 worker, %.1f "
                "without race checking, %.1f on %u workers\n",
                rows, totalInstructions / totalSeconds[0] * 1e-6,
                totalInstructions / totalSeconds[1] * 1e-6,
                totalInstructions / totalSeconds[2] * 1e-6, workers);
  if (failures)
    std::printf("%d runs did not match the float64 reference\n", failures);
  return failures ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// simkernels
//===----------------------------------------------------------------------===//

/// One buffer argument of a test kernel.
struct Arg {
  std::vector<uint8_t> data; // empty for scalars
  uint64_t scalar = 0;
  bool output = false;
  /// An input passed as a tensor map over its data (the map's address is
  /// the uploaded data's).
  bool isTensorMap = false;
  TensorMapSpec map;
};

template <typename T> Arg input(const std::vector<T> &values) {
  Arg a;
  a.data.resize(values.size() * sizeof(T));
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}
Arg output(size_t bytes) {
  Arg a;
  a.data.assign(bytes, 0);
  a.output = true;
  return a;
}
Arg scalar(int64_t v) {
  Arg a;
  a.scalar = static_cast<uint64_t>(v);
  return a;
}
/// A 2-D f16 tensor of `rows` x `cols` (rows packed) as a tensor map with
/// a `boxRows` x `cols` box.
Arg tensorMap(const std::vector<uint16_t> &values, uint64_t rows, uint64_t cols,
              uint32_t boxRows, uint32_t swizzle, uint32_t boxCols = 0) {
  Arg a = input(values);
  a.isTensorMap = true;
  a.map.type = ElementType::F16;
  a.map.rank = 2;
  a.map.dims[0] = cols;
  a.map.dims[1] = rows;
  a.map.strides[0] = cols * 2;
  a.map.box[0] = boxCols ? boxCols : static_cast<uint32_t>(cols);
  a.map.box[1] = boxRows;
  a.map.swizzle = swizzle;
  return a;
}

/// Runs `kernel` on `device` and returns the output buffers' bytes.
Result<std::vector<std::vector<uint8_t>>>
runKernel(Device &device, const KernelVariant &module, const std::string &name,
          uint64_t grid, int64_t block, std::vector<Arg> args) {
  Buffers buffers(device);
  std::vector<LaunchArg> launch;
  std::vector<void *> pointers;
  std::vector<TensorMapBytes> maps(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    Arg &a = args[i];
    LaunchArg l;
    // The buffer behind the argument (a tensor map's too), for outputs.
    void *at = nullptr;
    if (a.data.empty()) {
      l.value = a.scalar;
    } else {
      Result<void *> p = buffers.upload(a.data.data(), a.data.size());
      if (!p)
        return p.status();
      at = *p;
      l.value = reinterpret_cast<uint64_t>(*p);
      l.isPointer = true;
      l.extentBytes = a.data.size();
      if (a.isTensorMap) {
        TensorMapSpec spec = a.map;
        spec.address = *p;
        Result<TensorMapBytes> map = device.encodeTensorMap(spec);
        if (!map)
          return map.status();
        maps[i] = *map;
        l = LaunchArg();
        l.tensorMap = &maps[i];
      }
    }
    pointers.push_back(at);
    launch.push_back(l);
  }
  KernelEntry entry;
  entry.name = name;
  entry.block = block;
  if (Status s = device.launch(module, entry, grid, launch, nullptr))
    return s;
  std::vector<std::vector<uint8_t>> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].output)
      continue;
    std::vector<uint8_t> host(args[i].data.size());
    if (Status s = buffers.download(host.data(), pointers[i], host.size()))
      return s;
    outs.push_back(std::move(host));
  }
  return outs;
}

int simkernels(const std::vector<std::string> &args) {
  std::string ptxPath, ptxSm90Path, resumeAfter;
  bool dryRun = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--ptx" && i + 1 < args.size())
      ptxPath = args[++i];
    else if (args[i] == "--ptx-sm90" && i + 1 < args.size())
      ptxSm90Path = args[++i];
    else if (args[i] == "--resume-after" && i + 1 < args.size())
      resumeAfter = args[++i];
    else if (args[i] == "--dry-run")
      dryRun = true;
    else
      return fail("simkernels: unexpected argument '" + args[i] + "'");
  }
  Result<std::string> ptx = readRegularFile(ptxPath);
  if (!ptx)
    return fail(ptx.message());
  KernelVariant module;
  module.id = "SimTestKernels";
  module.ptx = std::move(*ptx);
  KernelVariant moduleSm90;
  if (!ptxSm90Path.empty()) {
    Result<std::string> text = readRegularFile(ptxSm90Path);
    if (!text)
      return fail(text.message());
    moduleSm90.id = "SimTestKernelsSm90";
    moduleSm90.ptx = std::move(*text);
  }
  // --dry-run compares the simulator with itself: it checks this harness
  // (arguments, buffers) on a machine without a GPU.
  Result<std::shared_ptr<Device>> cuda =
      dryRun ? Result<std::shared_ptr<Device>>(
                   getSimulatorDevice(ptxSm90Path.empty() ? "sm_80" : "sm_90a"))
             : getCudaDevice(0);
  if (!cuda)
    return fail(cuda.message());
  std::shared_ptr<Device> sim = getSimulatorDevice((*cuda)->getChip());
  std::cout << "device: " << (*cuda)->describe() << "\n";

  std::mt19937 rng(std::random_device{}());
  auto uniformU32 = [&](size_t n) {
    std::vector<uint32_t> v(n);
    for (uint32_t &x : v)
      x = rng();
    return v;
  };
  auto normalF32 = [&](size_t n, float scale = 1) {
    std::normal_distribution<float> d(0, scale);
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng);
    return v;
  };
  auto halves = [&](size_t n) {
    std::normal_distribution<float> d;
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v)
      x = floatToHalf(d(rng));
    return v;
  };
  auto bhalves = [&](size_t n) {
    std::normal_distribution<float> d;
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v)
      x = floatToBFloat16(d(rng));
    return v;
  };
  const int n = 1000;
  std::vector<float> a = normalF32(n, 3), b = normalF32(n, 3);
  std::vector<int32_t> shuffleIn(64);
  for (int32_t &x : shuffleIn)
    x = static_cast<int32_t>(rng() % 1000);
  std::vector<uint16_t> matrix(256);
  for (size_t i = 0; i < matrix.size(); ++i)
    matrix[i] = static_cast<uint16_t>(i * 7 + 3);

  struct Case {
    const char *name;
    uint64_t grid;
    int64_t block;
    std::vector<Arg> args;
    /// 0: bit for bit; else the relative tolerance on f32 outputs.
    double tolerance;
    /// A kernel of the sm_90a module.
    bool sm90 = false;
    /// What the report calls it (the kernel's name when null).
    const char *label = nullptr;
  };
  std::vector<Case> cases = {
      {"saxpy", (n + 127) / 128, 128,
       {input(a), input(b), scalar(0x40200000), scalar(n)}, 0},
      {"blockReduce", 4, 256, {input(a), output(16), scalar(n)}, 0},
      {"integerOps", (n + 127) / 128, 128,
       {input(uniformU32(n)), input(uniformU32(n)), output(16 * 4 * n),
        scalar(n)},
       0},
      {"floatOps", (n + 127) / 128, 128,
       {input(a), input(b), output(8 * 4 * n), scalar(n)}, 0},
      {"approxOps", (n + 127) / 128, 128, {input(a), output(16 * n), scalar(n)},
       1e-5},
      {"warpShuffles", 1, 64, {input(shuffleIn), output(2 * 192 * 4)}, 0},
      {"ldmatrixLayouts", 1, 32, {input(matrix), output(6 * 32 * 4 * 4)}, 0},
      {"cpAsyncCopy", 1, 256,
       {input(normalF32(1024)), output(1024 * 4), output(32 * 4),
        scalar(1024), scalar(1021)},
       0},
      {"mmaF16", 1, 32,
       {input(halves(256)), input(halves(128)), input(normalF32(128)),
        output(128 * 4)},
       1e-5},
      {"mmaBF16", 1, 32,
       {input(bhalves(256)), input(bhalves(128)), input(normalF32(128)),
        output(128 * 4)},
       1e-5},
      {"mmaF16K8", 1, 32,
       {input(halves(128)), input(halves(64)), input(normalF32(128)),
        output(128 * 4)},
       1e-5},
      // M = 64 keeps the grid one-dimensional: (N / 64) CTAs.
      {"gemmF16", 2, 128,
       {input(halves(64 * 96)), input(halves(96 * 128)),
        output(64 * 128 * 4), scalar(64), scalar(128), scalar(96)},
       1e-4},
  };
  // The Hopper kernels (kernels/SimTestKernelsSm90.cu), on an sm_90a
  // device: TMA pipelines over a 71 x 64 tensor (5 boxes of 16 rows, the
  // last partly out of bounds) without and with the 128-byte swizzle, and
  // wgmma over 64 x 64 tiles (modes: B K-major, B N-major, A from
  // registers), and over tiles in panels of the 64- and 32-byte swizzles
  // (TMA boxes of 32 and 16 columns), and TMA stores from each swizzle.
  // Sums of f16 values in f32 in a fixed order are exact to compare; wgmma
  // accumulates in the hardware's order.
  if (!ptxSm90Path.empty() && (*cuda)->getChip() == "sm_90a") {
    std::vector<uint16_t> tensor = halves(71 * 64);
    for (uint32_t swizzle : {0u, 3u})
      cases.push_back({"tmaPipeline",
                       1,
                       256,
                       {tensorMap(tensor, 71, 64, 16, swizzle), output(128 * 4),
                        scalar(5), scalar(swizzle ? 1 : 0), scalar(0)},
                       0,
                       true,
                       swizzle ? "tmaPipeline sw128" : "tmaPipeline"});
    cases.push_back({"stmatrixLayouts",
                     1,
                     32,
                     {input(uniformU32(128)), output(512 * 2)},
                     0,
                     true});
    std::vector<uint16_t> ga = halves(64 * 64), gb = halves(64 * 64);
    const char *labels[] = {"wgmmaGemm SS", "wgmmaGemm SS tnspB",
                            "wgmmaGemm RS"};
    for (int mode = 0; mode < 3; ++mode)
      cases.push_back(
          {"wgmmaGemm",
           1,
           128,
           {tensorMap(ga, 64, 64, 64, 3), tensorMap(gb, 64, 64, 64, 3),
            input(ga), output(64 * 64 * 4), scalar(mode), scalar(128)},
           1e-3,
           true,
           labels[mode]});
    const char *swizzledLabels[] = {"wgmmaGemm sw64", "wgmmaGemm sw64 tnspB",
                                    "wgmmaGemm sw32", "wgmmaGemm sw32 tnspB"};
    for (int i = 0; i < 4; ++i) {
      uint32_t bytes = i < 2 ? 64 : 32, mode = i < 2 ? 2 : 1;
      cases.push_back({"wgmmaGemm",
                       1,
                       128,
                       {tensorMap(ga, 64, 64, 64, mode, bytes / 2),
                        tensorMap(gb, 64, 64, 64, mode, bytes / 2), input(ga),
                        output(64 * 64 * 4), scalar(i % 2), scalar(bytes)},
                       1e-3,
                       true,
                       swizzledLabels[i]});
    }
    // Rows [8, 24) of a 20 x 64 tensor poisoned with a NaN: the store
    // writes rows 8 - 19 and skips the rest.
    const char *storeLabels[] = {"tmaStore sw128", "tmaStore sw64",
                                 "tmaStore sw32"};
    for (int i = 0; i < 3; ++i) {
      uint32_t bytes = 128u >> i;
      Arg out = tensorMap(std::vector<uint16_t>(20 * 64, 0x7c01), 20, 64, 16,
                          3 - i, bytes / 2);
      out.output = true;
      cases.push_back({"tmaStore",
                       1,
                       128,
                       {out, scalar(bytes), scalar(0)},
                       0,
                       true,
                       storeLabels[i]});
    }
  } else if (!ptxSm90Path.empty()) {
    std::printf("(the sm_90a kernels need an sm_90a device; %s is not)\n",
                (*cuda)->describe().c_str());
  }
  auto labelOf = [](const Case &c) { return c.label ? c.label : c.name; };
  // The cases after --resume-after's.
  auto first = cases.begin();
  if (!resumeAfter.empty()) {
    first = std::find_if(cases.begin(), cases.end(), [&](const Case &c) {
      return labelOf(c) == resumeAfter;
    });
    if (first == cases.end())
      return fail("--resume-after: no test kernel is called '" + resumeAfter +
                  "'");
    ++first;
  }
  // Scalars travel in 8-byte slots of which the devices pass each
  // parameter's own size (saxpy's a is f32 2.5 in the low 4 bytes).
  int mismatches = 0;
  for (auto it = first; it != cases.end(); ++it) {
    Case &c = *it;
    // saxpy's y is in-out.
    if (std::string(c.name) == "saxpy")
      c.args[1].output = true;
    const KernelVariant &m = c.sm90 ? moduleSm90 : module;
    const char *label = labelOf(c);
    Result<std::vector<std::vector<uint8_t>>> hw =
        runKernel(**cuda, m, c.name, c.grid, c.block, c.args);
    if ((*cuda)->isLost()) {
      std::printf("%-20s error: %s\n", label, hw.message().c_str());
      stopAtLostDevice(label);
    }
    Result<std::vector<std::vector<uint8_t>>> simulated =
        runKernel(*sim, m, c.name, c.grid, c.block, c.args);
    if (!hw || !simulated) {
      std::printf("%-20s error: %s\n", label,
                  (!hw ? hw.message() : simulated.message()).c_str());
      ++mismatches;
      continue;
    }
    size_t differing = 0, total = 0;
    double worst = 0;
    for (size_t o = 0; o < hw->size(); ++o) {
      const std::vector<uint8_t> &x = (*hw)[o], &y = (*simulated)[o];
      if (c.tolerance == 0) {
        for (size_t i = 0; i < x.size(); ++i)
          differing += x[i] != y[i];
        total += x.size();
      } else {
        for (size_t i = 0; i + 4 <= x.size(); i += 4) {
          float fx, fy;
          std::memcpy(&fx, &x[i], 4);
          std::memcpy(&fy, &y[i], 4);
          double err = std::fabs(fx - fy) / (1 + std::fabs(fy));
          worst = std::max(worst, std::isnan(err) ? INFINITY : err);
          ++total;
        }
      }
    }
    bool ok = c.tolerance == 0 ? differing == 0 : worst <= c.tolerance;
    if (c.tolerance == 0)
      std::printf("%-20s %zu of %zu bytes differ (bit for bit)  %s\n", label,
                  differing, total, ok ? "PASS" : "FAIL");
    else
      std::printf("%-20s max relative difference %.2e over %zu values "
                  "(tolerance %.0e)  %s\n",
                  label, worst, total, c.tolerance, ok ? "PASS" : "FAIL");
    mismatches += !ok;
  }
  return mismatches ? 1 : 0;
}


//===----------------------------------------------------------------------===//
// hosttime
//===----------------------------------------------------------------------===//

int hosttime(const std::vector<std::string> &args) {
  std::string bundleDir, filter = "bf16-g4-d128-decode";
  int64_t calls = 2000;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--bundle" && i + 1 < args.size())
      bundleDir = args[++i];
    else if (args[i] == "--filter" && i + 1 < args.size())
      filter = args[++i];
    else if (args[i] == "--calls" && i + 1 < args.size())
      calls = std::max<int64_t>(1, std::atoll(args[++i].c_str()));
    else
      return fail("hosttime: unexpected argument '" + args[i] + "'");
  }
  if (bundleDir.empty())
    return fail("hosttime needs --bundle DIR");
  Result<Bundle> bundle = Bundle::load(bundleDir);
  if (!bundle)
    return fail(bundle.message());
  Result<std::shared_ptr<Device>> cuda = getCudaDevice(0);
  if (!cuda)
    return fail(cuda.message());
  Device &device = **cuda;
  const KernelVariant *variant = nullptr;
  for (const KernelVariant &v : bundle->variants)
    if (v.query.decode && !v.query.withLse &&
        v.id.find(filter) != std::string::npos &&
        (v.query.target != "sm_90a" || device.getChip() == "sm_90a")) {
      variant = &v;
      break;
    }
  if (!variant)
    return fail("no decode variant without LSE matching '" + filter +
                "' runs on " + device.describe());
  const AttentionQuery &q = variant->query;
  std::cout << "device: " << device.describe() << "\n"
            << "variant: " << variant->id << ", B=1 Hkv=8 Nq=1, " << calls
            << " calls each\n";
  using Clock = std::chrono::steady_clock;
  auto us = [](Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  };
  for (int64_t seqKV : {1024, 32768}) {
    Shape s{1, 8, 1, seqKV};
    int64_t heads = s.kvHeads * q.group;
    Buffers buffers(device);
    auto zeros = [&](int64_t elements) {
      std::vector<uint16_t> host(elements, 0);
      return buffers.upload(host.data(), host.size() * 2);
    };
    Result<void *> dq = zeros(s.batch * heads * s.seqQ * q.headDim),
                   dk = zeros(s.batch * s.kvHeads * s.seqKV * q.headDim),
                   dv = zeros(s.batch * s.kvHeads * s.seqKV * q.headDimV),
                   dout = zeros(s.batch * heads * s.seqQ * q.headDimV);
    for (Result<void *> *r : {&dq, &dk, &dv, &dout})
      if (!*r)
        return fail(r->message());
    AttentionCall call = contiguousCall(q, s, *dq, *dk, *dv, *dout);
    // 0: the wave model's count.
    for (int64_t splits : {0, 1, 2, 16}) {
      call.splits = splits;
      LaunchReport report;
      for (int i = 0; i < 20; ++i)
        if (Status st = launchAttention(device, *variant, call, &report))
          return fail(st.message());
      if (Status st = device.synchronize(nullptr))
        return fail(st.message());
      // Batches of kBatch calls, waiting for the device after each: the
      // launch queue (about a thousand launches) never fills, so the
      // issue time is the host's alone even where the kernels take
      // longer than a call.
      constexpr int64_t kBatch = 100;
      Clock::duration issuing{}, total{};
      for (int64_t done = 0; done < calls;) {
        int64_t n = std::min(kBatch, calls - done);
        Clock::time_point start = Clock::now();
        for (int64_t i = 0; i < n; ++i)
          if (Status st = launchAttention(device, *variant, call))
            return fail(st.message());
        Clock::time_point issued = Clock::now();
        if (Status st = device.synchronize(nullptr))
          return fail(st.message());
        issuing += issued - start;
        total += Clock::now() - start;
        done += n;
      }
      std::printf("  Nk=%-6lld splits %-4s(%3lld) host %8.2f us per call, "
                  "with the wait for the device %8.2f us\n",
                  static_cast<long long>(seqKV),
                  splits ? std::to_string(splits).c_str() : "auto",
                  static_cast<long long>(report.splits),
                  us(issuing) / calls, us(total) / calls);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: flashc-gpucheck numerics --bundle DIR [--device "
                 "cuda|sim] [--quick] [--filter TEXT] [--resume-after ID]\n"
                 "       flashc-gpucheck simkernels --ptx FILE [--ptx-sm90 "
                 "FILE] [--dry-run] [--resume-after NAME]\n"
                 "       flashc-gpucheck simbench --bundle DIR [--filter TEXT] "
                 "[--workers N]\n"
                 "       flashc-gpucheck hosttime --bundle DIR [--filter TEXT] "
                 "[--calls N]\n";
    return args.empty() ? 1 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  int status;
  if (command == "numerics")
    status = numerics(args);
  else if (command == "simkernels")
    status = simkernels(args);
  else if (command == "simbench")
    status = simbench(args);
  else if (command == "hosttime")
    status = hosttime(args);
  else
    return fail("unknown command '" + escapeForMessage(command) + "'");
  // Output lost to a full disk or a closed pipe is a failure.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    if (status == 0)
      status = fail("cannot write the output");
  }
  return status;
}
