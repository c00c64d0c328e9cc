#!/usr/bin/env bash
#===- scripts/gpu-check.sh - flashc's checks on a machine with a GPU -----===#
#
# One command for a GPU machine that has CUDA, CMake, PyTorch and
# compute-sanitizer but no MLIR. The kernels come precompiled in a bundle
# (scripts/gpu-bundle.sh makes it on a machine with the compiler); this
# script builds the LLVM-free runtime from source and runs, in order:
#
#   1. numerics of every kernel in the bundle on the GPU, on random inputs
#      with poisoned outputs, against a float64 reference (flashc-gpucheck);
#   2. the PTX simulator's own test kernels (nvcc-compiled) on the GPU and
#      in the simulator, compared bit for bit where the operations are
#      exact (flashc-gpucheck simkernels); on an sm_90 GPU the Hopper ones
#      too (TMA, mbarrier pipelines, wgmma: kernels/SimTestKernelsSm90.cu);
#   3. compute-sanitizer memcheck and racecheck on a few small launches
#      (reported, not fatal, when the tool refuses the device; a failure
#      when the tool is missing);
#   4. numerics against torch SDPA and the benchmark table (prefill TFLOP/s
#      against SDPA's flash and cuDNN backends; decode GB/s against a
#      measured copy bandwidth) through the C API (scripts/gpu_check.py);
#   5. the Python package's GPU tests (python/tests/test_gpu.py) with the
#      runtime module built here, on the bundle, against torch SDPA (when
#      the Python has pybind11 and pytest);
#   6. the host's time per decode call of the runtime (flashc-gpucheck
#      hosttime), and decode GB/s at every split count against the
#      runtime's choice (scripts/gpu_splits.py, through the same runtime
#      module);
#   7. with --compare, the causal prefill kernels of the bundle and of
#      other bundles of the same configurations compiled with other
#      options (--causal-order, --block-q, --block-kv, --stages), taking turns
#      (scripts/gpu_compare.py); with --compare-all, the non-causal ones
#      too.
#
#   scripts/gpu-check.sh [--bundle DIR] [--quick] [--json FILE]
#                        [--step-timeout SECONDS] [--compare DIR[,DIR...]]
#                        [--compare-all]
#   scripts/gpu-check.sh --dry-run [--bundle DIR] [--compare DIR[,DIR...]]
#
# --step-timeout bounds each command that runs on the GPU (a kernel that
# hangs fails its step, and the steps after it still run). Within a step,
# the runtime gives up on a kernel that has not finished after
# FLASHC_CUDA_SYNC_TIMEOUT_S seconds (20 unless set; 0: no bound) where
# it waits for one itself. After a hang or a fault (which loses the CUDA
# context) steps 1 and 2 name the kernel ("lost: ID") and go on with the
# ones after it in a new process, up to 4 times, and steps 3 - 6 run the
# bundle without the variants lost.
#
# --dry-run skips everything that needs a GPU and checks the rest: the
# runtime-only build, the bundle's numerics in the simulator, the
# simulator-test harness, the Python script's C API path on numpy
# arrays, and the Python runtime module on a bundled kernel in the
# simulator. Exit status: 0 when every check passed.
#
#===----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/gpu-bundle"
build="${FLASHC_RUNTIME_BUILD:-$root/build-runtime}"
dry=0
quick=""
json=""
step_timeout=""
compare=""
compare_masks="--causal-only"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --quick) quick="--quick" ;;
    --bundle) bundle="$2"; shift ;;
    --json) json="$2"; shift ;;
    --step-timeout) step_timeout="$2"; shift ;;
    --compare) compare="$2"; shift ;;
    --compare-all) compare_masks="" ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
# The Python (scripts/lib/python.sh; PYTHON overrides it): one with numpy
# and torch (step 4) where there is one, else one with numpy.
. "$root/scripts/lib/python.sh"
python=$(flashc_python torch 2>/dev/null || flashc_python) || exit 2
# The CUDA tools, from PATH or else the toolkit's usual place.
cuda_tool() {
  command -v "$1" 2>/dev/null ||
    { [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/$1" ] &&
      echo "${CUDA_HOME:-/usr/local/cuda}/bin/$1"; }
}
# FLASHC_NVCC, when set (even empty: none), names nvcc instead.
nvcc_bin=${FLASHC_NVCC-$(cuda_tool nvcc)}
sanitizer=$(cuda_tool compute-sanitizer)
start=$(date +%s)
status=0
step() { echo; echo "== $* ($(( $(date +%s) - start )) s)"; }
record() {
  if [ "$1" -eq 124 ] && [ -n "$step_timeout" ]; then
    status=1; echo "-- FAILED: $2 (timed out after $step_timeout s)"
  elif [ "$1" -ne 0 ]; then
    status=1; echo "-- FAILED: $2"
  fi
}
# A GPU command, bounded by --step-timeout when given.
bounded() {
  if [ -n "$step_timeout" ]; then
    timeout --kill-after=10 "$step_timeout" "$@"
  else
    "$@"
  fi
}

if [ ! -f "$bundle/manifest.json" ]; then
  echo "gpu-check: no bundle at $bundle (make one with scripts/gpu-bundle.sh)" >&2
  exit 2
fi

step "building the LLVM-free runtime in $build"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake "${generator[@]}" -S "$root" -B "$build" -DFLASHC_RUNTIME_ONLY=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build "$build" -j "$(nproc)" >/dev/null || exit 1
gpucheck="$build/bin/flashc-gpucheck"
runtime="$build/lib/libflashc_runtime.so"

# The Python package's runtime module (LLVM-free) and its GPU tests, where
# the Python has pybind11, pytest and numpy; skipped otherwise.
python_tests() {
  if ! "$python" -c "import pybind11, pytest, numpy" 2>/dev/null; then
    echo "pybind11, pytest or numpy missing for $python: skipped"
    return
  fi
  cmake -S "$root" -B "$build" -DFLASHC_PYTHON_RUNTIME=ON \
    -Dpybind11_DIR="$("$python" -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
    -DPython_EXECUTABLE="$(command -v "$python")" >/dev/null &&
    cmake --build "$build" --target flashc-python -j "$(nproc)" >/dev/null &&
    FLASHC_GPU_BUNDLE="$bundle" PYTHONPATH="$build/python:$root/python/tests" \
      PYTHONDONTWRITEBYTECODE=1 bounded "$python" -m pytest -q -p no:cacheprovider \
      "$root/python/tests/test_gpu.py" "$@"
  record $? "Python GPU tests"
}

# The split-count sweep (scripts/gpu_splits.py) through the runtime module
# python_tests built; skipped where it was not.
split_sweep() {
  if [ ! -d "$build/python/flashc" ]; then
    echo "no Python runtime module in $build/python: skipped"
    return
  fi
  PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 bounded "$python" \
    "$root/scripts/gpu_splits.py" --bundle "$bundle" "$@"
  record $? "gpu_splits.py $*"
}

if [ "$dry" -eq 1 ]; then
  step "dry run: the bundle's kernels in the PTX simulator"
  "$gpucheck" numerics --bundle "$bundle" --device sim --quick
  record $? "numerics in the simulator"
  step "dry run: the simulator-test harness, simulator against itself"
  ptx="$build/SimTestKernels.ptx"
  ptx90="$build/SimTestKernelsSm90.ptx"
  if [ -n "$nvcc_bin" ]; then
    "$nvcc_bin" -arch=sm_80 -ptx "$root/unittests/Simulator/kernels/SimTestKernels.cu" -o "$ptx" &&
      "$nvcc_bin" -arch=sm_90a -ptx "$root/unittests/Simulator/kernels/SimTestKernelsSm90.cu" -o "$ptx90" &&
      "$gpucheck" simkernels --ptx "$ptx" --ptx-sm90 "$ptx90" --dry-run
    record $? "simulator test kernels"
  else
    echo "no nvcc: skipped"
  fi
  step "dry run: gpu_check.py through the C API on the simulator"
  "$python" "$root/scripts/gpu_check.py" --lib "$runtime" --bundle "$bundle" --dry-run
  record $? "gpu_check.py --dry-run"
  step "dry run: the Python runtime module and a bundled kernel in the simulator"
  python_tests -k simulator
  step "dry run: gpu_splits.py's split counts in the simulator"
  split_sweep --dry-run
  step "dry run: gpu_compare.py's bundles in the simulator"
  "$python" "$root/scripts/gpu_compare.py" --lib "$runtime" \
    --bundles "$bundle,${compare:-$bundle}" --causal-only --dry-run
  record $? "gpu_compare.py --dry-run"
  step "done: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - start )) s"
  exit $status
fi

# A kernel that hangs fails where the runtime waits for it (steps 1 - 3),
# or where the Python scripts wait through torch (steps 4, 6 and 7:
# gpu_check.synchronize), not at the step's timeout.
export FLASHC_CUDA_SYNC_TIMEOUT_S="${FLASHC_CUDA_SYNC_TIMEOUT_S-20}"

# A flashc-gpucheck check (numerics, simkernels) that a kernel's hang or
# fault stops (the device runs nothing more in that process: "lost: WHAT",
# exit 3) goes on after WHAT in a new process, up to 4 times. What was lost
# is added to the array `lost_list`.
lost_list=()
resumable() {
  local name="$1" log attempt rc lost
  shift
  log="$(mktemp)"
  local resume=()
  for attempt in 1 2 3 4 5; do
    bounded "$gpucheck" "$@" "${resume[@]}" | tee "$log"
    rc=${PIPESTATUS[0]}
    lost=$(sed -n 's/^lost: //p' "$log" | tail -n 1)
    if [ "$rc" -eq 3 ] && [ -n "$lost" ]; then
      lost_list+=("$lost")
      record 1 "$name: $lost hung or faulted (the device was lost)"
      [ "$attempt" -lt 5 ] && echo "-- resuming after $lost"
      resume=(--resume-after "$lost")
      continue
    fi
    record "$rc" "$name"
    break
  done
  rm -f "$log"
}

step "1. numerics of every bundled kernel on the GPU"
resumable numerics numerics --bundle "$bundle" --device cuda $quick
# A hang or a fault ends the process of a later step: they run a copy of
# the bundle without the variants lost (a call that needs one fails as one
# the bundle does not serve), and step 7, whose bundles hold the same
# kernels built with other options, is skipped.
if [ ${#lost_list[@]} -gt 0 ]; then
  without_lost="$build/bundle-without-lost"
  rm -rf "$without_lost"
  "$python" - "$bundle" "$without_lost" "${lost_list[@]}" <<'PY'
import json, shutil, sys
source, copy, *lost = sys.argv[1:]
shutil.copytree(source, copy)
with open(f"{copy}/manifest.json") as f:
    manifest = json.load(f)
manifest["variants"] = [v for v in manifest["variants"] if v["id"] not in lost]
with open(f"{copy}/manifest.json", "w") as f:
    json.dump(manifest, f, indent=1)
print(f"steps 3 - 6 run {copy}, the bundle without " + ", ".join(lost)
      + "; step 7 (--compare) is skipped")
PY
  record $? "a bundle without the variants lost"
  bundle="$without_lost"
  compare=""
fi

step "2. the simulator's test kernels: GPU against simulator"
ptx="$build/SimTestKernels.ptx"
ptx90="$build/SimTestKernelsSm90.ptx"
if [ -n "$nvcc_bin" ]; then
  # The Hopper kernels (TMA, mbarriers, wgmma) run where the GPU is sm_90.
  "$nvcc_bin" -arch=sm_90a -ptx "$root/unittests/Simulator/kernels/SimTestKernels.cu" -o "$ptx" &&
    "$nvcc_bin" -arch=sm_90a -ptx "$root/unittests/Simulator/kernels/SimTestKernelsSm90.cu" -o "$ptx90"
  if [ $? -eq 0 ]; then
    resumable "simulator test kernels" simkernels --ptx "$ptx" --ptx-sm90 "$ptx90"
  else
    record 1 "simulator test kernels: nvcc failed"
  fi
else
  record 1 "simulator test kernels: no nvcc on PATH or in ${CUDA_HOME:-/usr/local/cuda}/bin"
fi

step "3. compute-sanitizer memcheck and racecheck on small launches"
if [ -n "$sanitizer" ]; then
  for tool in memcheck racecheck; do
    out=$(bounded "$sanitizer" --tool "$tool" --error-exitcode 9 \
      "$gpucheck" numerics --bundle "$bundle" --device cuda --quick \
      --filter f16-g4-d128 2>&1)
    rc=$?
    echo "$out" | tail -n 4
    if echo "$out" | grep -q "Device not supported"; then
      echo "compute-sanitizer $tool: the device is not supported here (not a failure of flashc)"
    else
      record $rc "compute-sanitizer $tool"
    fi
  done
else
  record 1 "compute-sanitizer: not on PATH or in ${CUDA_HOME:-/usr/local/cuda}/bin"
fi

step "4. numerics against torch SDPA, and the benchmark table"
bounded "$python" "$root/scripts/gpu_check.py" --lib "$runtime" --bundle "$bundle" \
  $quick ${json:+--json "$json"}
record $? "gpu_check.py"

step "5. the Python package against torch: bundled kernels through the runtime module"
python_tests

step "6. decode: the host's time per call, and the split count"
bounded "$gpucheck" hosttime --bundle "$bundle"
record $? "flashc-gpucheck hosttime"
split_sweep ${json:+--json "${json%.json}-splits.json"}

if [ -n "$compare" ]; then
  step "7. ${compare_masks:+causal }prefill: $bundle against $compare"
  bounded "$python" "$root/scripts/gpu_compare.py" --lib "$runtime" \
    --bundles "$bundle,$compare" $compare_masks \
    ${json:+--json "${json%.json}-compare.json"}
  record $? "gpu_compare.py"
fi

step "done: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - start )) s"
exit $status
