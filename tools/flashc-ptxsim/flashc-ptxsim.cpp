//===- flashc-ptxsim.cpp - Run a PTX kernel in the simulator --------------===//
//
//   flashc-ptxsim FILE.ptx --kernel NAME --grid X[,Y[,Z]] --block X[,Y[,Z]]
//       [--dynamic-shared BYTES] --param P ... [--out INDEX=FILE.npy]
//       [--no-race-check] [--no-write-check] [--workers N] [--stats]
//       [--max-instructions N] [--memory-budget BYTES] [--programmatic]
//       [--list-opcodes]
//
// Each --param, in the kernel's parameter order, is one of
//   buf:FILE.npy               a global buffer holding exactly the array
//   buf:zeros:DTYPE:SHAPE      a zeroed buffer, e.g. buf:zeros:f32:16x8
//   u32:V s32:V u64:V s64:V f32:V
// Each buffer has a region of its own in the simulated address space, with
// unmapped guard gaps around it: a kernel's access past the end of one
// buffer faults rather than reaching the next. --out INDEX=FILE.npy writes
// the buffer of parameter INDEX after the launch, with its dtype and shape.
//
// --programmatic runs the launch as a programmatic dependent launch: a
// thread's global access before its griddepcontrol.wait is a race.
//
// Budgets, both on by default: a thread may execute --max-instructions
// instructions (100 million; 0: no limit), and the buffers together, and
// the launch's own memory, may each take --memory-budget bytes (2 GiB).
//
// Exit status: 0 when the launch completed cleanly, 3 when the simulation
// found an out-of-bounds or misaligned access, a race (in shared memory, or
// two CTAs storing to one global byte), a deadlock or a trap (a thread over
// its instruction budget included; the message on stderr names which), 1
// for usage, parse and unsupported-instruction errors, limits of the
// simulator and output that cannot be written.
//
//===----------------------------------------------------------------------===//

#include "flashc/Simulator/Simulator.h"
#include "flashc/Support/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

using namespace flashc;

namespace {

const char *kUsage =
    "usage: flashc-ptxsim FILE.ptx --kernel NAME --grid X[,Y[,Z]] "
    "--block X[,Y[,Z]]\n"
    "         [--dynamic-shared BYTES] --param P ... [--out INDEX=FILE.npy]\n"
    "         [--no-race-check] [--no-write-check] [--workers N] [--stats]\n"
    "         [--max-instructions N] [--memory-budget BYTES] "
    "[--programmatic]\n"
    "       flashc-ptxsim FILE.ptx --list-opcodes\n"
    "  P: buf:FILE.npy | buf:zeros:DTYPE:SHAPE (e.g. buf:zeros:f32:16x8) |\n"
    "     u32:V | s32:V | u64:V | s64:V | f32:V\n"
    "  --max-instructions: per thread (default 100000000; 0: no limit)\n"
    "  --memory-budget: for the buffers, and for the launch's own memory\n"
    "     (default 2147483648)\n"
    "  --programmatic: a programmatic dependent launch (a global access\n"
    "     before griddepcontrol.wait is a race)\n"
    "  exit status: 0 clean, 3 out-of-bounds/race/deadlock/trap, 1 other "
    "errors\n";

constexpr uint64_t kDefaultMaxInstructions = 100000000;

/// One line on stderr; text from the command line and the input is
/// escaped.
void printError(const std::string &msg) {
  std::cerr << "flashc-ptxsim: " << sim::escapeText(msg) << "\n";
}

int usage(const std::string &msg) {
  printError(msg);
  std::cerr << kUsage;
  return 1;
}

/// Exit status `rc`, or 1 with one line on stderr when what was written to
/// stdout could not be (a full disk, a closed pipe).
int finish(int rc) {
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    printError(std::string("cannot write the standard output: ") +
               std::strerror(errno ? errno : EIO));
    return 1;
  }
  return rc;
}

bool isDecimal(const std::string &s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

bool parseDim(const std::string &s, sim::Dim3 &d) {
  uint32_t v[3] = {1, 1, 1};
  std::stringstream ss(s);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    if (i >= 3 || !isDecimal(part))
      return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(part.c_str(), &end, 10);
    if (*end || errno || x == 0 || x > 0xffffffffu)
      return false;
    v[i++] = static_cast<uint32_t>(x);
  }
  if (i == 0 || (!s.empty() && s.back() == ','))
    return false;
  d = sim::Dim3{v[0], v[1], v[2]};
  return true;
}

bool parseInt(const std::string &s, long long &out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoll(s.c_str(), &end, 0);
  return !*end && errno == 0;
}

bool parseUInt(const std::string &s, unsigned long long &out) {
  if (s.empty() || s[0] == '-')
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoull(s.c_str(), &end, 0);
  return !*end && errno == 0;
}

/// The text of `path`, or an error when it cannot be read or is larger than
/// the simulator parses.
bool readText(const std::string &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read '" + path + "'";
    return false;
  }
  // Read at most one byte more than the limit (a device such as /dev/zero
  // never ends).
  text.resize(sim::kMaxPtxBytes + 1);
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    error = "cannot read '" + path + "'";
    return false;
  }
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > sim::kMaxPtxBytes) {
    error = "'" + path + "' is larger than the simulator's limit of " +
            std::to_string(sim::kMaxPtxBytes) + " bytes of PTX";
    return false;
  }
  return true;
}

int run(int argc, char **argv);

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    printError("out of memory");
    return 1;
  }
}

namespace {

int run(int argc, char **argv) {
  std::string ptxPath, kernel;
  sim::LaunchConfig config;
  config.maxInstructionsPerThread = kDefaultMaxInstructions;
  bool haveGrid = false, haveBlock = false, stats = false, listOps = false;
  std::vector<std::string> params;
  std::map<uint64_t, std::string> outs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return finish(0);
    } else if (a == "--kernel") {
      if (!value(kernel))
        return usage("--kernel needs a name");
    } else if (a == "--grid") {
      if (!value(v) || !parseDim(v, config.grid))
        return usage("bad --grid '" + v + "'");
      haveGrid = true;
    } else if (a == "--block") {
      if (!value(v) || !parseDim(v, config.block))
        return usage("bad --block '" + v + "'");
      haveBlock = true;
    } else if (a == "--dynamic-shared") {
      unsigned long long n;
      if (!value(v) || !parseUInt(v, n) || n > (1u << 20))
        return usage("bad --dynamic-shared '" + v + "'");
      config.dynamicSharedBytes = static_cast<uint32_t>(n);
    } else if (a == "--param") {
      if (!value(v))
        return usage("--param needs a value");
      params.push_back(v);
    } else if (a == "--out") {
      if (!value(v))
        return usage("--out needs INDEX=FILE.npy");
      size_t eq = v.find('=');
      unsigned long long index;
      if (eq == std::string::npos || !isDecimal(v.substr(0, eq)) ||
          !parseUInt(v.substr(0, eq), index) || eq + 1 == v.size())
        return usage("bad --out '" + v + "', expected INDEX=FILE.npy");
      outs[index] = v.substr(eq + 1);
    } else if (a == "--no-race-check") {
      config.checkRaces = false;
    } else if (a == "--no-write-check") {
      config.checkGlobalWrites = false;
    } else if (a == "--programmatic") {
      config.programmatic = true;
    } else if (a == "--max-instructions") {
      unsigned long long n;
      if (!value(v) || !isDecimal(v) || !parseUInt(v, n))
        return usage("bad --max-instructions '" + v + "'");
      config.maxInstructionsPerThread = n;
    } else if (a == "--memory-budget") {
      unsigned long long n;
      if (!value(v) || !isDecimal(v) || !parseUInt(v, n) || n == 0)
        return usage("bad --memory-budget '" + v + "'");
      config.memoryBudgetBytes = n;
    } else if (a == "--workers") {
      unsigned long long n;
      if (!value(v) || !parseUInt(v, n) || n == 0 || n > 256)
        return usage("bad --workers '" + v + "'");
      config.workers = static_cast<unsigned>(n);
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--list-opcodes") {
      listOps = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage("unknown option '" + a + "'");
    } else if (ptxPath.empty()) {
      ptxPath = a;
    } else {
      return usage("more than one PTX file given");
    }
  }
  if (ptxPath.empty())
    return usage("no PTX file given");
  std::string text, readError;
  if (!readText(ptxPath, text, readError))
    return usage(readError);

  if (listOps) {
    auto ops = sim::listOpcodes(text);
    if (!ops) {
      printError(ops.status().message());
      return 1;
    }
    int unsupported = 0;
    for (const std::string &op : *ops) {
      bool ok = sim::isSupportedOpcode(op);
      unsupported += !ok;
      std::cout << (ok ? "supported   " : "UNSUPPORTED ") << op << "\n";
    }
    return finish(unsupported ? 1 : 0);
  }
  if (kernel.empty() || !haveGrid || !haveBlock)
    return usage("--kernel, --grid and --block are required");

  auto module = sim::Module::parse(text, ptxPath);
  if (!module) {
    printError(module.status().message());
    return 1;
  }
  const sim::KernelInfo *info = (*module)->getKernel(kernel);
  if (!info)
    return usage("no kernel '" + kernel + "' in " + ptxPath);
  if (params.size() != info->params.size())
    return usage("kernel '" + kernel + "' takes " +
                 std::to_string(info->params.size()) + " parameters, " +
                 std::to_string(params.size()) + " given");

  // Build the arguments; buffers live in `arrays` (stable addresses), all
  // of them within the memory budget.
  sim::Device device;
  std::vector<NpyArray> arrays(params.size());
  std::vector<sim::KernelArg> args;
  uint64_t bufferBytes = 0;
  auto overBudget = [&](const std::string &p, uint64_t bytes) {
    return "buffer '" + p + "' of " + std::to_string(bytes) +
           " bytes takes the buffers past the memory budget of " +
           std::to_string(config.memoryBudgetBytes) +
           " bytes (--memory-budget)";
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &p = params[i];
    size_t colon = p.find(':');
    if (colon == std::string::npos)
      return usage("bad --param '" + p + "'");
    std::string kind = p.substr(0, colon), rest = p.substr(colon + 1);
    if (kind == "buf") {
      NpyArray &arr = arrays[i];
      if (rest.compare(0, 6, "zeros:") == 0) {
        std::string spec = rest.substr(6);
        size_t c2 = spec.find(':');
        if (c2 == std::string::npos)
          return usage("bad --param '" + p + "', expected buf:zeros:DTYPE:SHAPE");
        arr.descr = npyDescrOf(spec.substr(0, c2));
        if (arr.descr.empty())
          return usage("unknown dtype '" + spec.substr(0, c2) + "' in '" + p + "'");
        std::stringstream dims(spec.substr(c2 + 1));
        std::string d;
        uint64_t total = arr.elementBytes();
        bool tooLarge = false;
        while (std::getline(dims, d, 'x')) {
          unsigned long long n;
          if (!isDecimal(d) || !parseUInt(d, n) || n == 0 || n > (1ull << 62))
            return usage("bad shape in '" + p + "'");
          arr.shape.push_back(static_cast<int64_t>(n));
          tooLarge |= __builtin_mul_overflow(total, uint64_t(n), &total);
        }
        if (arr.shape.empty() || spec.back() == 'x')
          return usage("bad shape in '" + p + "'");
        if (tooLarge || total > config.memoryBudgetBytes - bufferBytes)
          return usage(tooLarge ? "buffer '" + p + "' overflows 64 bits"
                                : overBudget(p, total));
        arr.data.assign(total, 0);
      } else {
        // The file's size bounds what reading it allocates.
        std::ifstream file(rest, std::ios::binary | std::ios::ate);
        if (file) {
          std::streamoff size = file.tellg();
          if (size > 0 && static_cast<uint64_t>(size) >
                              config.memoryBudgetBytes - bufferBytes)
            return usage(overBudget(p, static_cast<uint64_t>(size)));
        }
        std::string error;
        if (!readNpy(rest, arr, error))
          return usage(error);
        if (arr.data.empty())
          return usage("buffer '" + rest + "' is empty");
        if (arr.data.size() > config.memoryBudgetBytes - bufferBytes)
          return usage(overBudget(p, arr.data.size()));
      }
      bufferBytes += arr.data.size();
      Result<uint64_t> address = device.mapBuffer(
          arr.data.data(), arr.data.size(), "param " + std::to_string(i));
      if (!address)
        return usage(address.status().message());
      args.push_back(sim::KernelArg::u64(*address));
      continue;
    }
    long long iv;
    unsigned long long uv;
    if (kind == "u32" && parseUInt(rest, uv) && uv <= 0xffffffffull)
      args.push_back(sim::KernelArg::u32(static_cast<uint32_t>(uv)));
    else if (kind == "s32" && parseInt(rest, iv) && iv >= INT32_MIN &&
             iv <= INT32_MAX)
      args.push_back(sim::KernelArg::s32(static_cast<int32_t>(iv)));
    else if (kind == "u64" && parseUInt(rest, uv))
      args.push_back(sim::KernelArg::u64(uv));
    else if (kind == "s64" && parseInt(rest, iv))
      args.push_back(sim::KernelArg::s64(iv));
    else if (kind == "f32") {
      char *end = nullptr;
      float f = std::strtof(rest.c_str(), &end);
      if (rest.empty() || *end)
        return usage("bad --param '" + p + "'");
      args.push_back(sim::KernelArg::f32(f));
    } else {
      return usage("bad --param '" + p + "'");
    }
  }
  for (auto &[index, path] : outs)
    if (index >= params.size() || arrays[index].data.empty())
      return usage("--out " + std::to_string(index) +
                   " does not name a buffer parameter");

  auto result = device.launch(**module, kernel, config, args);
  if (!result) {
    printError(result.status().message());
    return result.status().isFault() ? 3 : 1;
  }
  for (auto &[index, path] : outs) {
    std::string error;
    if (!writeNpy(path, arrays[index], error)) {
      printError(error);
      return 1;
    }
  }
  if (stats)
    std::cout << "thread-instructions: " << result->threadInstructions
              << "\nseconds: " << result->seconds << "\nrate: "
              << (result->seconds > 0
                      ? result->threadInstructions / result->seconds / 1e6
                      : 0)
              << " M thread-instructions/s\nldmatrix matrices: "
              << result->ldmatrixMatrices
              << ", extra wavefronts from bank conflicts: "
              << result->ldmatrixExtraWavefronts
              << "\nshared requests (ld/st, cp.async): "
              << result->sharedRequests
              << ", extra wavefronts from bank conflicts: "
              << result->sharedExtraWavefronts << "\n";
  return finish(0);
}

} // namespace
