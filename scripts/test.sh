#!/usr/bin/env bash
#===- scripts/test.sh - Build flashc and run the whole test suite --------===#
#
# Installs the dependencies, builds, and runs every test through ctest: the
# GoogleTest unit tests, the lit suite, the generated-docs check and the
# script checks.
#
#   scripts/test.sh              # build/ (Release)
#   scripts/test.sh --sanitize   # build-sanitize/: ASan + UBSan and
#                                # assertions, the same suite, no report
#                                # allowed; built as without the CUDA
#                                # toolkit, with shared libraries
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR="${SANITIZE_BUILD_DIR:-$root/build-sanitize}"
  # The sanitized tree is also the build without the CUDA toolkit
  # (FLASHC_USE_CUDA_TOOLKIT=OFF: no cuda.h, ptxas or nvcc; the tests that
  # need them are skipped, each with its reason), so that CI proves both
  # in two builds; build/ keeps the ptxas and nvcc checks.
  # It is the shared-library build too (BUILD_SHARED_LIBS: every compiler
  # library a .so linked with -z defs), so that a library that calls
  # another without linking it fails CI's link, where the static libraries
  # of build/ hide it; one more tree would not fit CI's time.
  export FLASHC_CMAKE_ARGS="-DFLASHC_SANITIZE=ON -DFLASHC_USE_CUDA_TOOLKIT=OFF -DBUILD_SHARED_LIBS=ON"
  # Abort on the first report of either sanitizer, with a stack trace.
  # LeakSanitizer cannot run in the processes that JIT CPU kernels (the
  # compiler tests, `flashc run` in the lit suite): CMake turns it off
  # for those tests only.
  # allocator_may_return_null: an allocation that cannot succeed returns
  # null, which flashc turns into an error (as without ASan).
  # allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons a new slab
  # from its inline code when compiled with ASan and unpoisons each
  # allocation only there; flashc's instrumented code (an attribute's
  # storage) and the uninstrumented libMLIR share one allocator, so a slab
  # that flashc started would be reported when libMLIR allocates from it.
  export ASAN_OPTIONS="abort_on_error=1:allocator_may_return_null=1:detect_leaks=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
elif [ $# -gt 0 ]; then
  echo "usage: scripts/test.sh [--sanitize]" >&2
  exit 2
fi
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure
