#!/usr/bin/env bash
#===- scripts/build.sh - Configure and build flashc ----------------------===#
#
# Installs the dependencies, configures build/ with Ninja, ccache and lld
# against Debian's LLVM/MLIR 22, and builds everything. Incremental: a second
# run only rebuilds what changed. BUILD_DIR overrides the build directory,
# FLASHC_CMAKE_ARGS adds CMake options (e.g. -DFLASHC_USE_CUDA_TOOLKIT=OFF).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
# The Python of the tests and the Python package (scripts/lib/python.sh).
. "$root/scripts/lib/python.sh"
python=$(flashc_python pytest)

llvm=/usr/lib/llvm-22
# Configured once, and again when FLASHC_CMAKE_ARGS differ from the last
# configure's (an option dropped from them keeps its cached value).
args="${FLASHC_CMAKE_ARGS:-}"
stamp="$build/flashc-cmake-args"
if [ ! -f "$build/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$args" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" \
    -DLLVM_DIR="$llvm/lib/cmake/llvm" \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DPython3_EXECUTABLE="$python" \
    -DLLVM_USE_LINKER=lld $args >/dev/null
  printf '%s' "$args" > "$stamp"
fi
# Two cores: more parallel jobs only add memory pressure.
ninja -C "$build" -j "${JOBS:-2}" >/dev/null
