//===- flashc-bench.cpp - flashc's CPU kernel against OpenBLAS ------------===//
//
// The benchmark of flashc's CPU kernel, apart from the flashc driver so that
// the driver links no BLAS:
//
//   flashc-bench [options]      the table: flashc's kernel against 3-pass
//                               attention on OpenBLAS, against the one-core
//                               sgemm ceiling; or --decode, --decode-loop
//   flashc-bench one [options]  one measurement of the table, as one JSON
//                               line (each row runs one in its own process)
//
// --help (or -h) lists the options of either, --version prints the version.
// Bad flags or sizes get one `flashc-bench: error:` line and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Options.h"
#include "Tool.h"

#include "llvm/Support/raw_ostream.h"

using namespace flashc;

namespace {

/// What `flashc-bench --help` prints.
const char *kBenchHelp =
    "usage: flashc-bench [options]\n"
    "       flashc-bench one [options]\n"
    "\n"
    "flashc's CPU kernel (f32, batch 1) against standard 3-pass attention\n"
    "on OpenBLAS, each configuration measured in its own process, against\n"
    "the one-core sgemm ceiling measured in the same run.\n"
    "\n"
    "  --sizes N,...       sequence lengths (default 512,1024,2048,4096,8192)\n"
    "  --head-dims D,...   (default 64,128)\n"
    "  --heads H           (default 8)\n"
    "  --threads T         (default: the host's)\n"
    "  --iters N           timed runs per measurement (default 3)\n"
    "  --rounds R          repeat the rows R times, keep the fastest\n"
    "  --adjacent          also measure the ceiling between every two rows\n"
    "  --json FILE         write the rows as JSON\n"
    "  --decode-loop STEPS [--seq-kv START]\n"
    "                      decode steps over a growing KV cache: one\n"
    "                      compile\n"
    "  --decode [--seq-kv N,...] [--threads T] [--iters N]\n"
    "                      decode KV read rates against the copy and read\n"
    "                      bandwidth\n"
    "\n"
    "`flashc-bench one --help` lists the options of one measurement;\n"
    "`flashc-bench --version` prints the version.\n";

/// What `flashc-bench one --help` prints.
const char *kOneHelp =
    "usage: flashc-bench one [options]\n"
    "\n"
    "One measurement of `flashc-bench`, printed as one JSON line.\n"
    "\n"
    "  --impl flashc|blas|sgemm|peak\n"
    "                      flashc's kernel, 3-pass OpenBLAS attention, one\n"
    "                      square sgemm of side --seq, or one core's FMA\n"
    "                      and vdpbf16ps rates (default flashc)\n"
    "  --seq N --head-dim D --heads H   (default 1024, 64, 8)\n"
    "  --causal --threads T --iters N\n";

int dispatch(int argc, char **argv) {
  llvm::ArrayRef<const char *> args(const_cast<const char **>(argv) + 1,
                                    argc - 1);
  if (!args.empty() && llvm::StringRef(args[0]) == "--version") {
    printVersion(llvm::outs());
    return 0;
  }
  bool one = !args.empty() && llvm::StringRef(args[0]) == "one";
  if (one)
    args = args.drop_front();
  if (wantsHelp(args)) {
    llvm::outs() << (one ? kOneHelp : kBenchHelp);
    return 0;
  }
  if (one)
    return benchOneCommand(args);
  return benchCommand(args, argv[0]);
}

} // namespace

int main(int argc, char **argv) {
  setToolName("flashc-bench");
  return finishOutput(dispatch(argc, argv));
}
