//===- Kernel.cpp - A compiled kernel and its buffers ---------------------===//
//
// What every Kernel does whatever its target: a run's buffers in the order
// the options' layout names are viewed in [B, H, N, D] order, then go to the
// CPU launch (CPULaunch.cpp) or the GPU runtime (GPUCompiler.cpp); its IR
// after each stage is written to a directory. Also TensorRef and writeFile.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "flashc/Support/Layout.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::flash;

Kernel::Kernel() : code(std::make_shared<Code>()) {}
Kernel::~Kernel() = default;

TensorRef TensorRef::contiguous(void *data, ElementType dtype,
                                llvm::ArrayRef<int64_t> sizes) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.sizes.assign(sizes.begin(), sizes.end());
  t.strides.resize(sizes.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= sizes[i];
  }
  return t;
}

llvm::Error Kernel::run(const TensorRef &q, const TensorRef &k,
                        const TensorRef &v, const TensorRef &out,
                        const TensorRef *lse, const RunOptions &options) const {
  // The kernels index [B, H, N, D]: the tensors in the options' layout are
  // permuted into that order (a view: no copy).
  TensorRef views[4] = {q, k, v, out};
  const char *names[4] = {"query", "key", "value", "output"};
  for (int i = 0; i < 4; ++i) {
    TensorRef &t = views[i];
    if (t.sizes.size() != 4 || t.strides.size() != 4)
      continue; // refused below with the rank or stride count
    std::string error = flashc::toBHND(options.layout, t.sizes.data(),
                                       t.strides.data(), names[i]);
    if (!error.empty())
      return llvm::createStringError(error);
  }
  return runBHND(views[0], views[1], views[2], views[3], lse, options);
}

llvm::Error Kernel::runBHND(const TensorRef &q, const TensorRef &k,
                            const TensorRef &v, const TensorRef &out,
                            const TensorRef *lse,
                            const RunOptions &options) const {
  if (isGPU())
    return runGPU(q, k, v, out, lse, options);
  return runCPU(q, k, v, out, lse, options);
}

llvm::Error Kernel::dumpIR(llvm::StringRef directory) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create '" + directory +
                                   "': " + ec.message());
  int index = 0;
  for (const auto &[stage, ir] : metadata.stageIR) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path,
                            llvm::formatv("{0:2}-{1}.mlir", index++, stage));
    if (llvm::Error e = writeFile(path, ir))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error mlir::flash::writeFile(llvm::StringRef path,
                                   llvm::StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + ec.message());
  os << contents;
  if (path != "-")
    os.close();
  else
    os.flush();
  if (os.has_error()) {
    std::string message = os.error().message();
    // Cleared so that the stream's destructor does not abort the process.
    os.clear_error();
    return llvm::createStringError("writing '" + path + "' failed: " +
                                   message);
  }
  return llvm::Error::success();
}
