//===- JITTest.cpp - The JIT API: cache, checks, metadata, module input ---===//
//
// Exercises the C++ API around the kernels: the content-addressed cache and
// its thread safety, the errors a bad spec or a bad buffer produces, strided
// buffers, IR dumps, compiling an MLIR module as it is written, and the
// decode entry compiled at its first use.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"

#include "flashc/Compiler/Reference.h"
#include "flashc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace mlir::flash;

namespace {

AttentionSpec smallSpec() {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 2;
  spec.kvHeads = 1;
  spec.seqQ = 20;
  spec.seqKV = 30;
  spec.headDim = 32;
  spec.mask = Mask::causal();
  return spec;
}

void fillRandom(HostTensor &t, std::mt19937 &rng) {
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    t.set(i, normal(rng));
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

TEST(JITTest, SameSpecCompilesOnce) {
  Compiler compiler;
  AttentionSpec spec = smallSpec();
  auto first = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(first)) << errorOf(first.takeError());
  auto second = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(second)) << errorOf(second.takeError());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(compiler.getCacheSize(), 1u);
  EXPECT_EQ(compiler.getCacheHits(), 1);

  PipelineConfig other;
  other.blockKV = 16;
  auto third = compiler.compile(spec, "cpu", other);
  ASSERT_TRUE(static_cast<bool>(third)) << errorOf(third.takeError());
  EXPECT_NE(first->get(), third->get());
  EXPECT_EQ(compiler.getCacheSize(), 2u);
}

TEST(JITTest, NearbyScalesShareTheCodeButKeepTheirScale) {
  // The scale is an argument of the code: two specs that differ only in
  // it compile once, and each kernel keeps its own spec's scale.
  Compiler compiler;
  AttentionSpec a = smallSpec(), b = smallSpec();
  a.scale = 0.1250001;
  b.scale = 0.1250002;
  auto ka = compiler.compile(a);
  auto kb = compiler.compile(b);
  ASSERT_TRUE(static_cast<bool>(ka)) << errorOf(ka.takeError());
  ASSERT_TRUE(static_cast<bool>(kb)) << errorOf(kb.takeError());
  EXPECT_NE(ka->get(), kb->get());
  EXPECT_EQ((*ka)->getSpec().scale, 0.1250001);
  EXPECT_EQ((*kb)->getSpec().scale, 0.1250002);
  EXPECT_EQ(compiler.getCacheSize(), 1u);
  // The same spec again gets the same Kernel.
  auto again = compiler.compile(b);
  ASSERT_TRUE(static_cast<bool>(again)) << errorOf(again.takeError());
  EXPECT_EQ(again->get(), kb->get());
}

TEST(JITTest, ConcurrentCompilesShareOneKernel) {
  Compiler compiler;
  AttentionSpec spec = smallSpec();
  spec.seqKV = 31;
  const Kernel *seen[4] = {};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      auto kernel = compiler.compile(spec);
      if (kernel)
        seen[i] = kernel->get();
      else
        llvm::consumeError(kernel.takeError());
    });
  for (std::thread &t : threads)
    t.join();
  for (const Kernel *k : seen)
    EXPECT_EQ(k, seen[0]);
  EXPECT_NE(seen[0], nullptr);
  EXPECT_EQ(compiler.getCacheSize(), 1u);
}

// The decode entry (Nq <= 16) is compiled at the first decode-shaped run:
// four threads making that run at once on a fresh kernel all get correct
// results (one of them compiles, the others wait), and prefill shapes run
// before and after.
TEST(JITTest, DecodeEntryCompiledAtFirstDecodeRun) {
  Compiler compiler;
  AttentionSpec spec = smallSpec();
  spec.heads = 4;
  spec.dtype = ElementType::BF16;
  auto kernel = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  flashc_test::checkRun(**kernel, spec, {2, 40, 70}, rng);

  std::vector<AttentionSpec> specs;
  std::vector<std::unique_ptr<flashc_test::AttentionBuffers>> buffers;
  for (int i = 0; i < 4; ++i) {
    AttentionSpec s = spec;
    s.seqQ = 1 + i;
    s.seqKV = 50 + 37 * i;
    specs.push_back(s);
    buffers.push_back(std::make_unique<flashc_test::AttentionBuffers>(s, rng));
  }
  std::string errors[4];
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      flashc_test::AttentionBuffers &b = *buffers[i];
      if (llvm::Error e = (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                         b.out.ref(), nullptr))
        errors[i] = llvm::toString(std::move(e));
    });
  for (std::thread &t : threads)
    t.join();
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(specs[i].str());
    EXPECT_EQ(errors[i], "");
    flashc_test::expectMatchesReference(specs[i], *buffers[i]);
  }
  // Compiled once: preparing again has nothing to do.
  llvm::Error again = (*kernel)->prepare(1);
  EXPECT_FALSE(static_cast<bool>(again)) << errorOf(std::move(again));
  flashc_test::checkRun(**kernel, spec, {1, 33, 9}, rng);
}

// prepare() compiles the decode entry ahead of the first run.
TEST(JITTest, PrepareCompilesTheDecodeEntry) {
  Compiler compiler;
  AttentionSpec spec = smallSpec();
  auto kernel = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  for (int64_t seqQ : {int64_t(1), int64_t(16), int64_t(17)}) {
    llvm::Error e = (*kernel)->prepare(seqQ);
    EXPECT_FALSE(static_cast<bool>(e)) << errorOf(std::move(e));
  }
  flashc_test::checkSizes(**kernel, spec, {{1, 3, 25}, {1, 17, 25}});
}

/// A CPU kernel compiles the entry point its spec's query length takes
/// (its IR is the metadata's) and the other one at its first use. The
/// prefill entry is never split (a prefill run has one split); the decode
/// entry splits the KV loop by a count chosen at every run.
TEST(JITTest, CompilesTheEntryPointOfItsSpecsLength) {
  for (int64_t seqQ : {int64_t(1), int64_t(20)}) {
    SCOPED_TRACE("seq-q " + std::to_string(seqQ));
    bool decode = seqQ == 1;
    AttentionSpec spec = smallSpec();
    spec.mask = Mask::none();
    spec.seqQ = seqQ;
    Compiler compiler;
    auto kernel = compiler.compile(spec);
    ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
    const KernelMetadata &meta = (*kernel)->getMetadata();
    ASSERT_EQ(meta.stageIR.size(), pipelineStages().size());
    const std::string &lowered = meta.stageIR.back().second;
    EXPECT_EQ(lowered.find("llvm.func @flash_attention_decode(") !=
                  std::string::npos,
              decode);
    EXPECT_EQ(lowered.find("llvm.func @flash_attention(") != std::string::npos,
              !decode);
    bool combines = llvm::any_of(meta.stageIR, [](const auto &stage) {
      return stage.second.find("flash.combine") != std::string::npos;
    });
    EXPECT_EQ(combines, decode);
    // The other entry point is compiled by the first run that takes it.
    flashc_test::checkSizes(**kernel, spec, {{2, 1, 700}, {1, 33, 70}});
  }
}

/// GPU kernels persist in a cache directory in the bundle format: a new
/// compiler (as another process would) loads them from there instead of
/// compiling, and the runtime's Bundle::load reads the directory.
TEST(JITTest, GPUKernelsPersistInTheCacheDirectory) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-jit-cache", dir));
  std::string cache = dir.str().str();
  AttentionSpec prefill;
  prefill.heads = 8;
  prefill.kvHeads = 2;
  prefill.seqQ = 33;
  prefill.seqKV = 70;
  prefill.headDim = 64;
  prefill.dtype = ElementType::F16;
  prefill.mask = Mask::causal();
  AttentionSpec decode = prefill;
  decode.seqQ = 1;

  std::string prefillId, decodeId;
  {
    Compiler first;
    first.setCacheDirectory(cache);
    for (const AttentionSpec &spec : {prefill, decode}) {
      auto kernel = first.compile(spec, "sm_80");
      ASSERT_TRUE(static_cast<bool>(kernel))
          << llvm::toString(kernel.takeError());
      EXPECT_FALSE((*kernel)->getMetadata().stageIR.empty())
          << "compiled, not loaded";
      (spec.isDecode() ? decodeId : prefillId) =
          (*kernel)->getMetadata().gpu->id;
    }
  }
  flashc::Result<flashc::runtime::Bundle> bundle =
      flashc::runtime::Bundle::load(cache);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  ASSERT_EQ(bundle->variants.size(), 2u);

  // A new compiler takes the kernel from the directory: nothing compiled.
  std::string cachedPtx = bundle->variants[0].id == prefillId
                              ? bundle->variants[0].ptx
                              : bundle->variants[1].ptx;
  Compiler second;
  second.setCacheDirectory(cache);
  auto loaded = second.compile(prefill, "sm_80");
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_TRUE((*loaded)->getMetadata().stageIR.empty()) << "loaded, not compiled";
  EXPECT_EQ((*loaded)->getMetadata().gpu->ptx, cachedPtx);

  // It runs (in the simulator) and matches the reference.
  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  flashc_test::AttentionBuffers b(prefill, rng);
  RunOptions options;
  options.simulate = true;
  llvm::Error err = (*loaded)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                   b.out.ref(), nullptr, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  flashc_test::expectMatchesReference(prefill, b);

  // Other options (another PTX ISA version) do not take the cached kernel:
  // it is compiled, and replaces the entry.
  PipelineConfig ptx81;
  ptx81.ptxVersion = "ptx81";
  auto other = second.compile(prefill, "sm_80", ptx81);
  ASSERT_TRUE(static_cast<bool>(other)) << llvm::toString(other.takeError());
  EXPECT_FALSE((*other)->getMetadata().stageIR.empty());
  EXPECT_NE((*other)->getMetadata().gpu->ptx.find(".version 8.1"),
            std::string::npos);
  bundle = flashc::runtime::Bundle::load(cache);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  EXPECT_EQ(bundle->variants.size(), 2u);
  // A PTX file that no longer matches its manifest entry's checksum (say,
  // rewritten by another process) is not taken: the kernel is compiled.
  std::string decodePath = cache + "/" + decodeId + ".ptx";
  std::string decodePtx;
  {
    auto text = llvm::MemoryBuffer::getFile(decodePath);
    ASSERT_TRUE(static_cast<bool>(text)) << decodePath;
    decodePtx = (*text)->getBuffer().str();
    std::error_code ec;
    llvm::raw_fd_ostream out(decodePath, ec);
    ASSERT_FALSE(ec) << ec.message();
    out << decodePtx << "// changed\n";
  }
  EXPECT_FALSE(flashc::runtime::Bundle::load(cache).ok());
  Compiler third;
  third.setCacheDirectory(cache);
  auto recompiled = third.compile(decode, "sm_80");
  ASSERT_TRUE(static_cast<bool>(recompiled))
      << llvm::toString(recompiled.takeError());
  EXPECT_FALSE((*recompiled)->getMetadata().stageIR.empty());
  EXPECT_EQ((*recompiled)->getMetadata().gpu->ptx, decodePtx);
  EXPECT_TRUE(flashc::runtime::Bundle::load(cache).ok());
  // No temporary file is left behind.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cache, ec), end; it != end && !ec;
       it.increment(ec))
    EXPECT_EQ(it->path().find(".tmp"), std::string::npos) << it->path();
  llvm::sys::fs::remove_directories(cache);
}

/// A kernel's fallback for tensors less aligned than it needs is compiled
/// as the kernel was: through the cache directory of the compiler that
/// built it, where it is then found beside the kernel.
TEST(JITTest, FallbacksPersistInTheKernelsCacheDirectory) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-jit-cache", dir));
  std::string cache = dir.str().str();
  AttentionSpec spec;
  spec.heads = 2;
  spec.seqQ = 20;
  spec.seqKV = 30;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  Compiler compiler;
  compiler.setCacheDirectory(cache);
  auto kernel = compiler.compile(spec, "sm_80");
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  std::string id = (*kernel)->getMetadata().gpu->id;

  // Every tensor one element into its buffer: 2-byte aligned.
  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  flashc_test::AttentionBuffers b(spec, rng);
  std::vector<HostTensor> buffers;
  auto offset = [&](HostTensor &t) {
    HostTensor &buffer = buffers.emplace_back(
        spec.dtype, std::vector<int64_t>{t.getNumElements() + 1});
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      buffer.set(i + 1, t.get(i));
    TensorRef r = t.ref();
    r.data = static_cast<char *>(buffer.data()) + 2;
    return r;
  };
  buffers.reserve(4);
  TensorRef q = offset(b.q), k = offset(b.k), v = offset(b.v),
            out = offset(b.out);
  RunOptions options;
  options.simulate = true;
  llvm::Error err = (*kernel)->run(q, k, v, out, nullptr, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  for (int64_t i = 0; i < b.out.getNumElements(); ++i)
    b.out.set(i, buffers[3].get(i + 1));
  flashc_test::expectMatchesReference(spec, b);
  ASSERT_EQ((*kernel)->getFallbacks().size(), 1u);
  flashc::Result<flashc::runtime::Bundle> bundle =
      flashc::runtime::Bundle::load(cache);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  std::vector<std::string> ids;
  for (const flashc::runtime::KernelVariant &variant : bundle->variants)
    ids.push_back(variant.id);
  llvm::sort(ids);
  EXPECT_EQ(ids, (std::vector<std::string>{id, id + "-a2"}));
  (void)llvm::sys::fs::remove_directories(cache);
}

/// The cache's kernels run as the user's code: a directory someone else can
/// write is refused, not read; a new one is made private (0700).
TEST(JITTest, UntrustedCacheDirectoriesAreRefused) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-jit-cache", dir));
  std::string open = dir.str().str();
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  AttentionSpec spec;
  spec.heads = 4;
  spec.seqQ = 20;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  Compiler compiler;
  compiler.setCacheDirectory(open);
  auto refused = compiler.compile(spec, "sm_80");
  ASSERT_FALSE(static_cast<bool>(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("kernel cache directory '" + open +
                         "' is writable by other users (mode 0777)"),
            std::string::npos)
      << message;

  std::string fresh = open + "/new/cache";
  ASSERT_EQ(::chmod(open.c_str(), 0700), 0);
  compiler.setCacheDirectory(fresh);
  auto built = compiler.compile(spec, "sm_80");
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  struct stat st;
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(flashc::runtime::Bundle::load(fresh).ok());
  (void)llvm::sys::fs::remove_directories(open);
}

TEST(JITTest, BadSpecsAreErrors) {
  AttentionSpec spec = smallSpec();
  spec.heads = 3;
  spec.kvHeads = 2;
  auto kernel = Compiler::global().compile(spec);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_EQ(errorOf(kernel.takeError()),
            "heads (3) must be a multiple of kv-heads (2)");

  spec = smallSpec();
  spec.scale = -1.0;
  kernel = Compiler::global().compile(spec);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError())
                .find("scale must be finite and "
                      "positive"),
            std::string::npos);

  spec = smallSpec();
  spec.seqKV = 0;
  kernel = Compiler::global().compile(spec);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_EQ(errorOf(kernel.takeError()), "seq-kv must be positive, got 0");

  kernel = Compiler::global().compile(smallSpec(), "sm_99");
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError()).find("unknown target 'sm_99'"),
            std::string::npos);

  // The GPU kernels run on tensor cores: f16 and bf16 only.
  kernel = Compiler::global().compile(smallSpec(), "sm_90a");
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError()).find("take f16 or bf16 inputs"),
            std::string::npos);

  PipelineConfig config;
  config.loopOrder = "zigzag";
  kernel = Compiler::global().compile(smallSpec(), "cpu", config);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError()).find("unknown loop order 'zigzag'"),
            std::string::npos);
}

TEST(JITTest, BadBuffersAreErrorsNotCrashes) {
  AttentionSpec spec = smallSpec();
  auto kernel = Compiler::global().compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  HostTensor q(ElementType::F32, {1, 2, 20, 32}), k(ElementType::F32, {1, 1, 30, 32});
  HostTensor v(ElementType::F32, {1, 1, 30, 32}), o(ElementType::F32, {1, 2, 20, 32});
  HostTensor wrongShape(ElementType::F32, {1, 2, 21, 32});
  HostTensor wrongType(ElementType::F16, {1, 2, 20, 32});
  const Kernel &kr = **kernel;

  // The lengths and head counts come from the buffers: a query of 21 rows
  // asks for an output of 21 rows, the group size (query heads per KV
  // head) and head dims are the kernel's.
  EXPECT_EQ(errorOf(kr.run(wrongShape.ref(), k.ref(), v.ref(), o.ref())),
            "output has shape [1, 2, 20, 32], expected [1, 2, 21, 32]");
  HostTensor wrongHeads(ElementType::F32, {1, 3, 20, 32});
  EXPECT_EQ(errorOf(kr.run(wrongHeads.ref(), k.ref(), v.ref(), o.ref())),
            "query has 3 heads for 1 key heads, a group of 3; the kernel is "
            "compiled for groups of 2 query heads per KV head");
  HostTensor twoKV(ElementType::F32, {1, 2, 30, 32});
  EXPECT_EQ(errorOf(kr.run(q.ref(), twoKV.ref(), twoKV.ref(), o.ref())),
            "query has 2 heads for 2 key heads, a group of 1; the kernel is "
            "compiled for groups of 2 query heads per KV head");
  EXPECT_NE(errorOf(kr.run(wrongHeads.ref(), twoKV.ref(), twoKV.ref(), o.ref()))
                .find("must be a multiple of kv-heads (2)"),
            std::string::npos);
  HostTensor fourHeads(ElementType::F32, {1, 4, 20, 32});
  EXPECT_EQ(errorOf(kr.run(fourHeads.ref(), twoKV.ref(), v.ref(), o.ref())),
            "value has shape [1, 1, 30, 32], expected [1, 2, 30, 32]");
  HostTensor shortValue(ElementType::F32, {1, 1, 29, 32});
  EXPECT_EQ(errorOf(kr.run(q.ref(), k.ref(), shortValue.ref(), o.ref())),
            "value has shape [1, 1, 29, 32], expected [1, 1, 30, 32]");
  HostTensor otherBatch(ElementType::F32, {2, 1, 30, 32});
  EXPECT_EQ(errorOf(kr.run(q.ref(), otherBatch.ref(), v.ref(), o.ref())),
            "key has shape [2, 1, 30, 32], expected [1, 1, 30, 32]");
  HostTensor rank3(ElementType::F32, {2, 20, 32});
  EXPECT_EQ(errorOf(kr.run(rank3.ref(), k.ref(), v.ref(), o.ref())),
            "query must have rank 4, got rank 3");
  HostTensor noKeys(ElementType::F32, {1, 1, 0, 32});
  EXPECT_EQ(errorOf(kr.run(q.ref(), noKeys.ref(), v.ref(), o.ref())),
            "the buffers' sizes: seq-kv must be positive, got 0");
  RunOptions negative;
  negative.splits = -2;
  EXPECT_EQ(
      errorOf(kr.run(q.ref(), k.ref(), v.ref(), o.ref(), nullptr, negative)),
      "the split count must be positive (0: chosen), got -2");
  EXPECT_EQ(errorOf(kr.run(q.ref(), k.ref(), v.ref(), wrongType.ref())),
            "output has element type f16, expected f32");
  // Outputs over inputs: the kernel reads Q, K and V while it writes O.
  EXPECT_EQ(errorOf(kr.run(q.ref(), k.ref(), v.ref(), q.ref())),
            "output overlaps query in memory; outputs must not share memory "
            "with another tensor of the call");
  TensorRef insideV = o.ref();
  insideV.data = v.ref().data;
  insideV.sizes = {1, 2, 10, 32};
  HostTensor q10(ElementType::F32, {1, 2, 10, 32});
  EXPECT_EQ(errorOf(kr.run(q10.ref(), k.ref(), v.ref(), insideV)),
            "output overlaps value in memory; outputs must not share memory "
            "with another tensor of the call");
  // A view addressing more than 2^60 bytes (its strides, not its data).
  TensorRef huge = k.ref();
  huge.sizes[0] = 2;
  huge.strides[0] = int64_t(1) << 60;
  HostTensor q2(ElementType::F32, {2, 2, 20, 32}), o2(ElementType::F32, {2, 2, 20, 32});
  HostTensor v2(ElementType::F32, {2, 1, 30, 32});
  EXPECT_EQ(errorOf(kr.run(q2.ref(), huge, v2.ref(), o2.ref())),
            "key with shape [2, 1, 30, 32] and strides [1152921504606846976, "
            "960, 32, 1] addresses more than 2^60 bytes");
  TensorRef strided = q.ref();
  strided.strides[3] = 2;
  EXPECT_NE(errorOf(kr.run(strided, k.ref(), v.ref(), o.ref()))
                .find("must have unit stride in its last dimension"),
            std::string::npos);
  TensorRef null = q.ref();
  null.data = nullptr;
  EXPECT_EQ(errorOf(kr.run(null, k.ref(), v.ref(), o.ref())),
            "query buffer is null");
  HostTensor lse(ElementType::F32, {1, 2, 20});
  TensorRef lseRef = lse.ref();
  EXPECT_NE(errorOf(kr.run(q.ref(), k.ref(), v.ref(), o.ref(), &lseRef))
                .find("no LSE output"),
            std::string::npos);
}

TEST(JITTest, TheScaleIsARunArgument) {
  // One kernel: the scale is an argument of the code, the spec's only the
  // default of its runs.
  AttentionSpec spec = smallSpec();
  spec.mask = Mask::causal();
  auto kernel = Compiler::global().compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  size_t compiled = Compiler::global().getCacheSize();
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  HostTensor q(ElementType::F32, {1, spec.heads, 20, spec.headDim});
  HostTensor k(ElementType::F32, {1, spec.kvHeads, 30, spec.headDim});
  HostTensor v(ElementType::F32, {1, spec.kvHeads, 30, spec.headDim});
  fillRandom(q, rng);
  fillRandom(k, rng);
  fillRandom(v, rng);
  for (double scale : {0.02, 0.5, 3.0}) {
    HostTensor out(ElementType::F32, {1, spec.heads, 20, spec.headDim});
    RunOptions options;
    options.scale = scale;
    llvm::Error err =
        (*kernel)->run(q.ref(), k.ref(), v.ref(), out.ref(), nullptr, options);
    ASSERT_FALSE(static_cast<bool>(err)) << errorOf(std::move(err));
    AttentionSpec scaled = spec;
    scaled.batch = 1;
    scaled.seqQ = 20;
    scaled.seqKV = 30;
    scaled.scale = scale;
    EXPECT_LE(maxAbsError(referenceAttention(scaled, q, k, v), out), 2e-4)
        << "scale " << scale;
    // A spec naming the scale gets the same code.
    auto same = Compiler::global().compile(scaled);
    ASSERT_TRUE(static_cast<bool>(same)) << errorOf(same.takeError());
    EXPECT_EQ((*same)->getSpec().scale, scale);
  }
  EXPECT_EQ(Compiler::global().getCacheSize(), compiled);
  HostTensor out(ElementType::F32, {1, spec.heads, 20, spec.headDim});
  for (double bad : {0.0, -1.0, 1e39, std::nan("")}) {
    RunOptions options;
    options.scale = bad;
    llvm::Error err =
        (*kernel)->run(q.ref(), k.ref(), v.ref(), out.ref(), nullptr, options);
    ASSERT_TRUE(static_cast<bool>(err)) << bad;
    EXPECT_NE(errorOf(std::move(err)).find("scale"), std::string::npos);
  }
}

TEST(JITTest, StridedBuffersReadTheRightElements) {
  // Q, K, V and O stored as [B, N, H, D] and passed as [B, H, N, D] views.
  // With B > 1 and Hkv > 1 the batch stride is not Hkv times the head
  // stride, so the KV heads do not fold into the batch: one call per batch
  // entry.
  AttentionSpec spec = smallSpec();
  spec.batch = 3;
  spec.heads = 4;
  spec.kvHeads = 2;
  auto kernel = Compiler::global().compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  HostTensor q(ElementType::F32, {3, 4, 20, 32}), k(ElementType::F32, {3, 2, 30, 32});
  HostTensor v(ElementType::F32, {3, 2, 30, 32});
  fillRandom(q, rng);
  fillRandom(k, rng);
  fillRandom(v, rng);
  using flashc_test::swapMiddleDims;
  HostTensor qt = swapMiddleDims(q), kt = swapMiddleDims(k),
             vt = swapMiddleDims(v);
  HostTensor ot(ElementType::F32, {3, 20, 4, 32});
  for (int64_t i = 0; i < ot.getNumElements(); ++i)
    ot.set(i, NAN);
  auto view = [](HostTensor &t) {
    TensorRef r = t.ref();
    const auto &s = t.getSizes(); // [B, N, H, D]
    r.sizes = {s[0], s[2], s[1], s[3]};
    r.strides = {s[1] * s[2] * s[3], s[3], s[2] * s[3], 1};
    return r;
  };
  // Named bhnd, these views are refused: their strides put the heads
  // inside the tokens, which a [B, H, N, D] tensor never does.
  llvm::Error refused = (*kernel)->run(view(qt), view(kt), view(vt), view(ot));
  ASSERT_TRUE(static_cast<bool>(refused));
  EXPECT_NE(errorOf(std::move(refused)).find("is not a bhnd tensor"),
            std::string::npos);
  RunOptions strided;
  strided.layout = flashc::Layout::Strided;
  llvm::Error err =
      (*kernel)->run(view(qt), view(kt), view(vt), view(ot), nullptr, strided);
  ASSERT_FALSE(static_cast<bool>(err)) << errorOf(std::move(err));
  std::vector<double> ref = referenceAttention(spec, q, k, v);
  HostTensor back = swapMiddleDims(ot);
  EXPECT_LE(maxAbsError(ref, back), 2e-4);

  // The same buffers described as what they are, [B, N, H, D] (bnhd):
  // sizes in that order, dense strides.
  for (int64_t i = 0; i < ot.getNumElements(); ++i)
    ot.set(i, NAN);
  RunOptions bnhd;
  bnhd.layout = flashc::Layout::BNHD;
  err = (*kernel)->run(qt.ref(), kt.ref(), vt.ref(), ot.ref(), nullptr, bnhd);
  ASSERT_FALSE(static_cast<bool>(err)) << errorOf(std::move(err));
  EXPECT_LE(maxAbsError(ref, swapMiddleDims(ot)), 2e-4);
}

TEST(JITTest, MetadataAndIRDumps) {
  AttentionSpec spec = smallSpec();
  PipelineConfig config;
  config.blockQ = 8;
  config.blockKV = 16;
  auto kernel = Compiler::global().compile(spec, "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  const KernelMetadata &meta = (*kernel)->getMetadata();
  EXPECT_EQ(meta.target, "cpu");
  EXPECT_EQ(meta.tiles.blockQ, 8);
  EXPECT_EQ(meta.tiles.blockKV, 16);
  // Chosen at every run from the sizes.
  EXPECT_EQ(meta.splits, 0);
  EXPECT_GT(meta.compileSeconds, 0.0);
  ASSERT_EQ(meta.stageIR.size(), pipelineStages().size());
  EXPECT_NE(meta.stageIR[1].second.find("flash.attention_step"),
            std::string::npos);
  EXPECT_NE(meta.stageIR.back().second.find("llvm.func"), std::string::npos);

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-dump", dir));
  ASSERT_FALSE(static_cast<bool>((*kernel)->dumpIR(dir)));
  for (auto [i, stage] : llvm::enumerate(pipelineStages())) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, (i < 10 ? "0" : "") + std::to_string(i) +
                                      "-" + stage.str() + ".mlir");
    EXPECT_TRUE(llvm::sys::fs::exists(path)) << path.str().str();
  }
  llvm::sys::fs::remove_directories(dir);
}

TEST(JITTest, MetadataRecordsSplits) {
  AttentionSpec spec = smallSpec();
  spec.seqQ = 1;
  spec.seqKV = 200;
  PipelineConfig config;
  config.blockKV = 16;
  config.splits = 5;
  auto kernel = Compiler::global().compile(spec, "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  EXPECT_EQ((*kernel)->getMetadata().splits, 5);
}

TEST(JITTest, LowerToStageStopsEarly) {
  PipelineConfig config;
  config.blockQ = 8; // three Q blocks: the parallel loop stays
  auto ir = Compiler::lowerToStage(smallSpec(), config, "tiled");
  ASSERT_TRUE(static_cast<bool>(ir)) << errorOf(ir.takeError());
  EXPECT_NE(ir->find("scf.forall"), std::string::npos);
  EXPECT_EQ(ir->find("llvm.func"), std::string::npos);
  auto bad = Compiler::lowerToStage(smallSpec(), {}, "ptx");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError()).find("unknown stage 'ptx'"),
            std::string::npos);
}

TEST(JITTest, CompilesFromANaiveGraphModule) {
  const char *source = R"mlir(
    func.func @naive(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x24x32xf32>,
                     %v: tensor<1x2x24x32xf32>) -> tensor<1x2x16x32xf32> {
      %s = flash.matmul %q, %k transpose_b : tensor<1x2x16x32xf32>, tensor<1x2x24x32xf32> -> tensor<1x2x16x24xf32>
      %c = arith.constant dense<0.25> : tensor<1x2x16x24xf32>
      %t = arith.mulf %s, %c : tensor<1x2x16x24xf32>
      %p = flash.softmax %t causal : tensor<1x2x16x24xf32> -> tensor<1x2x16x24xf32>
      %o = flash.matmul %p, %v : tensor<1x2x16x24xf32>, tensor<1x2x24x32xf32> -> tensor<1x2x16x32xf32>
      return %o : tensor<1x2x16x32xf32>
    })mlir";
  auto spec = AttentionSpec::fromMLIR(source);
  ASSERT_TRUE(static_cast<bool>(spec)) << errorOf(spec.takeError());
  EXPECT_EQ(spec->seqQ, 16);
  EXPECT_EQ(spec->seqKV, 24);
  EXPECT_TRUE(spec->isCausal());
  EXPECT_DOUBLE_EQ(spec->effectiveScale(), 0.25);

  auto kernel = Compiler::global().compileModule(source);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  std::mt19937 rng(std::random_device{}());
  HostTensor q(ElementType::F32, {1, 2, 16, 32}), k(ElementType::F32, {1, 2, 24, 32});
  HostTensor v(ElementType::F32, {1, 2, 24, 32}), o(ElementType::F32, {1, 2, 16, 32});
  fillRandom(q, rng);
  fillRandom(k, rng);
  fillRandom(v, rng);
  ASSERT_FALSE(
      static_cast<bool>((*kernel)->run(q.ref(), k.ref(), v.ref(), o.ref())));
  EXPECT_LE(maxAbsError(referenceAttention(*spec, q, k, v), o), 2e-4);

  auto none = AttentionSpec::fromMLIR("func.func @f() { return }");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_NE(errorOf(none.takeError()).find("found 0"), std::string::npos);
}

/// A crash inside MLIR's parser (an empty reassociation group in
/// tensor.expand_shape segfaults it) comes back from compileModule as an
/// error naming a reproducer, and the process lives on.
TEST(JITTest, CrashInTheParserIsAnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reports the segfault before recovery";
#endif
  const char *source = R"mlir(
    func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %e = tensor.expand_shape %a [[0, 1], []] output_shape [4, 8]
          : tensor<4x8xf32> into tensor<4x8xf32>
      return %e : tensor<4x8xf32>
    })mlir";
  auto kernel = Compiler::global().compileModule(source);
  ASSERT_FALSE(static_cast<bool>(kernel));
  std::string message = errorOf(kernel.takeError());
  EXPECT_NE(message.find("crashed while parsing or fusing the module"),
            std::string::npos)
      << message;
  size_t at = message.find("reproducer: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string path = message.substr(at + 12);
  auto saved = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(saved)) << path;
  EXPECT_EQ((*saved)->getBuffer(), source);
  llvm::sys::fs::remove(path);
  // The compiler still works afterwards.
  AttentionSpec spec;
  spec.seqQ = spec.seqKV = 16;
  spec.headDim = 32;
  auto good = Compiler::global().compile(spec, "cpu");
  EXPECT_TRUE(static_cast<bool>(good)) << errorOf(good.takeError());
}

/// compileModule compiles the module as written, not a spec read from it:
/// an attention whose batch and lengths are dynamic (no spec describes
/// it: a spec has sizes) compiles, and its one kernel runs any sizes.
TEST(JITTest, CompilesAModuleWithDynamicSizes) {
  const char *source = R"mlir(
    func.func @attention(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                         %v: tensor<?x2x?x48xf32>) -> tensor<?x4x?x48xf32> {
      %o = flash.attention %q, %k, %v scale = 0.2 causal
          : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x48xf32>
          -> tensor<?x4x?x48xf32>
      return %o : tensor<?x4x?x48xf32>
    })mlir";
  // No spec can say this: reading one fails on the first dynamic size.
  auto spec = AttentionSpec::fromMLIR(source);
  ASSERT_FALSE(static_cast<bool>(spec));
  EXPECT_NE(errorOf(spec.takeError()).find("is dynamic"), std::string::npos);

  Compiler compiler;
  auto kernel = compiler.compileModule(source);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  const AttentionSpec &kernelSpec = (*kernel)->getSpec();
  EXPECT_EQ(kernelSpec.heads, 4);
  EXPECT_EQ(kernelSpec.kvHeads, 2);
  EXPECT_EQ(kernelSpec.valueDim(), 48);
  EXPECT_TRUE(kernelSpec.isCausal());
  EXPECT_DOUBLE_EQ(kernelSpec.effectiveScale(), static_cast<double>(0.2f));

  // A decode shape (the decode entry point) and a prefill one, each on
  // fresh random inputs against the float64 reference.
  std::mt19937 rng(flashc_test::freshSeed());
  for (auto [batch, seqQ, seqKV] : {std::tuple<int64_t, int64_t, int64_t>{
                                        3, 5, 37},
                                    {1, 70, 70}}) {
    SCOPED_TRACE(testing::Message() << "B = " << batch << ", Nq = " << seqQ
                                    << ", Nk = " << seqKV);
    AttentionSpec run = kernelSpec;
    run.batch = batch;
    run.seqQ = seqQ;
    run.seqKV = seqKV;
    flashc_test::AttentionBuffers b(run, rng);
    ASSERT_FALSE(static_cast<bool>(
        (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(), b.out.ref())));
    flashc_test::expectMatchesReference(run, b);
  }
  // It says no more than a spec with its head counts, dims and mask: it is
  // that spec's kernel.
  AttentionSpec same = kernelSpec;
  same.seqQ = same.seqKV = 64;
  auto fromSpec = compiler.compile(same);
  ASSERT_TRUE(static_cast<bool>(fromSpec)) << errorOf(fromSpec.takeError());
  EXPECT_EQ(compiler.getCacheSize(), 1u);
}

/// What a module carries besides its attention is compiled with it: the
/// attention's own attributes, other functions, the module's attributes.
/// Such a kernel is the module's, not the spec's.
TEST(JITTest, CompilesTheRestOfTheModuleWithIt) {
  const char *source = R"mlir(
    module attributes {frontend.model = "tiny-decoder"} {
      func.func private @residual(%x: f32, %y: f32) -> f32 {
        %s = arith.addf %x, %y : f32
        return %s : f32
      }
      func.func @layer(%q: tensor<2x2x16x32xbf16>, %k: tensor<2x2x40x32xbf16>,
                       %v: tensor<2x2x40x32xbf16>) -> tensor<2x2x16x32xbf16> {
        %o = flash.attention %q, %k, %v scale = 0.125
            {frontend.layer = "decoder.3.attn"}
            : tensor<2x2x16x32xbf16>, tensor<2x2x40x32xbf16>,
              tensor<2x2x40x32xbf16> -> tensor<2x2x16x32xbf16>
        return %o : tensor<2x2x16x32xbf16>
      }
    })mlir";
  Compiler compiler;
  auto kernel = compiler.compileModule(source);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  const KernelMetadata &meta = (*kernel)->getMetadata();
  ASSERT_FALSE(meta.stageIR.empty());
  const std::string &fused = meta.stageIR.front().second;
  EXPECT_NE(fused.find("frontend.model = \"tiny-decoder\""),
            std::string::npos)
      << fused;
  EXPECT_NE(fused.find("frontend.layer = \"decoder.3.attn\""),
            std::string::npos)
      << fused;
  EXPECT_NE(fused.find("func.func private @residual"), std::string::npos)
      << fused;
  EXPECT_EQ(fused.find("@layer"), std::string::npos) << fused;
  EXPECT_NE(meta.stageIR.back().second.find("llvm.func @residual"),
            std::string::npos);

  AttentionSpec spec = (*kernel)->getSpec();
  std::mt19937 rng(flashc_test::freshSeed());
  flashc_test::AttentionBuffers b(spec, rng);
  ASSERT_FALSE(static_cast<bool>(
      (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(), b.out.ref())));
  flashc_test::expectMatchesReference(spec, b);

  // The spec's own kernel is another one.
  auto fromSpec = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(fromSpec)) << errorOf(fromSpec.takeError());
  EXPECT_NE(fromSpec->get(), kernel->get());
  EXPECT_EQ(compiler.getCacheSize(), 2u);
}

/// The attention's function gives way to the kernel's entry points: a
/// module that calls it, or that already has a function of that name, is
/// refused with the reason.
TEST(JITTest, RefusesAModuleTheEntryPointsCannotReplace) {
  const char *called = R"mlir(
    func.func @attention(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                         %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
      %o = flash.attention %q, %k, %v
          : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>
          -> tensor<1x1x8x16xf32>
      return %o : tensor<1x1x8x16xf32>
    }
    func.func @main(%x: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
      %o = func.call @attention(%x, %x, %x)
          : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
             tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
      return %o : tensor<1x1x8x16xf32>
    })mlir";
  auto kernel = Compiler::global().compileModule(called);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError())
                .find("@attention holds the attention and is used elsewhere"),
            std::string::npos);

  const char *taken = R"mlir(
    func.func @flash_attention_decode() {
      return
    }
    func.func @attention(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                         %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
      %o = flash.attention %q, %k, %v
          : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>
          -> tensor<1x1x8x16xf32>
      return %o : tensor<1x1x8x16xf32>
    })mlir";
  kernel = Compiler::global().compileModule(taken);
  ASSERT_FALSE(static_cast<bool>(kernel));
  EXPECT_NE(errorOf(kernel.takeError())
                .find("has a symbol @flash_attention_decode besides"),
            std::string::npos);
}

/// On a GPU target too: the attention of the module, with its attribute,
/// compiled for any batch and length (a dynamic query length: the prefill
/// variant). A kernel that is the module's, not its spec's, stays out of
/// the cache directory, whose kernels are found by their spec.
TEST(JITTest, CompilesAModuleForAGPU) {
  const char *source = R"mlir(
    func.func @attention(%q: tensor<?x2x?x64xf16>, %k: tensor<?x1x?x64xf16>,
                         %v: tensor<?x1x?x64xf16>) -> tensor<?x2x?x64xf16> {
      %o = flash.attention %q, %k, %v causal {frontend.layer = "decoder.0.attn"}
          : tensor<?x2x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>
          -> tensor<?x2x?x64xf16>
      return %o : tensor<?x2x?x64xf16>
    })mlir";
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-jit-cache", dir));
  std::string cache = dir.str().str();
  Compiler compiler;
  compiler.setCacheDirectory(cache);
  auto kernel = compiler.compileModule(source, "sm_80");
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  ASSERT_TRUE((*kernel)->isGPU());
  const KernelMetadata &meta = (*kernel)->getMetadata();
  EXPECT_FALSE(meta.gpu->query.decode);
  ASSERT_FALSE(meta.stageIR.empty());
  EXPECT_NE(meta.stageIR.front().second.find(
                "frontend.layer = \"decoder.0.attn\""),
            std::string::npos);
  EXPECT_FALSE(flashc::runtime::Bundle::load(cache).ok())
      << "nothing was saved";

  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  AttentionSpec run = (*kernel)->getSpec();
  run.batch = 2;
  run.seqQ = 24;
  run.seqKV = 40;
  flashc_test::AttentionBuffers b(run, rng);
  RunOptions options;
  options.simulate = true;
  llvm::Error err = (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                   b.out.ref(), nullptr, options);
  ASSERT_FALSE(static_cast<bool>(err)) << errorOf(std::move(err));
  flashc_test::expectMatchesReference(run, b);
  llvm::sys::fs::remove_directories(cache);
}

/// JITOptions::perfProfiling registers a CPU kernel's code with perf (the
/// option of `flashc run --perf-jit`): LLVM's listener writes the process's
/// jit-<pid>.dump under $JITDUMPDIR. The option is in the kernel's key, so
/// the profiled kernel is another one, and it computes the same.
TEST(JITTest, PerfProfilingIsAnOptionOfTheCompiler) {
  // The listener is created once per process, at its first use.
  static bool ran = false;
  if (ran)
    GTEST_SKIP() << "LLVM's perf listener writes one dump per process";
  ran = true;
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-perf", dir));
  ASSERT_EQ(::setenv("JITDUMPDIR", dir.c_str(), 1), 0);
  auto dumpBytes = [&] {
    std::string name = "jit-" + std::to_string(::getpid()) + ".dump";
    uint64_t bytes = 0;
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
         it != end && !ec; it.increment(ec)) {
      uint64_t size = 0;
      if (llvm::sys::path::filename(it->path()) == name &&
          !llvm::sys::fs::file_size(it->path(), size))
        bytes += size;
    }
    return bytes;
  };

  Compiler compiler;
  AttentionSpec spec = smallSpec();
  auto plain = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(plain)) << errorOf(plain.takeError());
  EXPECT_EQ(dumpBytes(), 0u);
  JITOptions jit;
  jit.perfProfiling = true;
  compiler.setJITOptions(jit);
  EXPECT_TRUE(compiler.getJITOptions().perfProfiling);
  auto profiled = compiler.compile(spec);
  ASSERT_TRUE(static_cast<bool>(profiled)) << errorOf(profiled.takeError());
  EXPECT_NE(profiled->get(), plain->get());
  EXPECT_EQ(compiler.getCacheSize(), 2u);
  EXPECT_GT(dumpBytes(), 0u) << "no perf dump under " << dir.str().str();

  std::mt19937 rng(flashc_test::freshSeed());
  flashc_test::AttentionBuffers b(spec, rng);
  ASSERT_FALSE(static_cast<bool>(
      (*profiled)->run(b.q.ref(), b.k.ref(), b.v.ref(), b.out.ref())));
  flashc_test::expectMatchesReference(spec, b);
  ::unsetenv("JITDUMPDIR");
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
