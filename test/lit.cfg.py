# -*- Python -*-
# lit configuration for the flashc regression tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "FLASHC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashc_obj_root, "test")
config.excludes = [
    "Inputs",
    "CMakeLists.txt",
    "lit.cfg.py",
    "lit.site.cfg.py",
]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%flashc_src_root", config.flashc_src_root))
# The Python the build was configured with (it has numpy).
config.substitutions.append(("%flashc_python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.flashc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["flashc-opt", "flashc-bench", "flashc", "flashc-ptxsim"], tool_dirs
)

# The CUDA toolkit's tools, as CMake found them (cmake/FlashcCudaToolkit.cmake;
# none with FLASHC_USE_CUDA_TOOLKIT=OFF). nvcc compiles the CUDA test
# kernels to PTX for the simulator's tests (`REQUIRES: nvcc`, `%nvcc`);
# ptxas, that of the toolkit flashc uses by default, assembles the GPU
# kernels: `flashc compile --emit manifest|cubin` and `flashc bundle`
# without --no-assemble run it (`REQUIRES: ptxas`, `%ptxas`); nvdisasm
# lists the SASS that scripts/kernel_model.py reads (`REQUIRES: nvdisasm`,
# `%nvdisasm`).
for tool, path in (("nvcc", config.flashc_nvcc), ("ptxas", config.flashc_ptxas),
                   ("nvdisasm", config.flashc_nvdisasm)):
    if path:
        config.available_features.add(tool)
        config.substitutions.append(("%" + tool, path))
    else:
        lit_config.note(
            "no %s (the CUDA toolkit is missing, or hidden by "
            "FLASHC_USE_CUDA_TOOLKIT=OFF): the tests that REQUIRE it are "
            "skipped" % tool
        )

# Pass statistics (`-mlir-pass-statistics`) count only where LLVM was built
# with them (assertions on, or LLVM_FORCE_ENABLE_STATS): MLIR's report is
# empty with a release LLVM such as Debian's packages. The tests of the
# passes' statistics (`*-statistics.mlir`) `REQUIRES: pass-statistics`, which
# is set when flashc-opt lists a statistic of an empty run.
def has_pass_statistics():
    import subprocess

    tool = os.path.join(config.flashc_tools_dir, "flashc-opt")
    try:
        run = subprocess.run(
            [tool, "--flash-online-softmax", "-mlir-pass-statistics",
             "-mlir-pass-statistics-display=list", "-o", os.devnull],
            input="", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "num-rewritten" in run.stderr


if has_pass_statistics():
    config.available_features.add("pass-statistics")
else:
    lit_config.note(
        "LLVM counts no pass statistics (a release build): the tests that "
        "REQUIRE pass-statistics are skipped")

# A FLASHC_SANITIZE=ON build (ASan+UBSan): AddressSanitizer owns SIGSEGV, so
# tests that rely on LLVM's crash recovery are `UNSUPPORTED: asan`.
if config.flashc_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

# The host's x86 features, from /proc/cpuinfo where there is one:
# `flashc-bench one --impl peak` measures AVX512_BF16's vdpbf16ps
# (`%if avx512bf16`).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                if "avx512f" in flags and "avx512_bf16" in flags:
                    config.available_features.add("avx512bf16")
                break
except OSError:
    pass
