#!/usr/bin/env bash
#===- scripts/pip-check.sh - `pip install .` into a fresh environment -----===#
#
# Makes a virtual environment from the scripts' Python (scripts/lib/python.sh;
# --system-site-packages, so that Debian's numpy is there), runs
# `pip install .` of this tree into it (pyproject.toml: the CMake build is
# build-pip/, or build-pip-runtime/ with --runtime-only, beside build/;
# ccache shares build/'s objects), then, from another directory, imports
# flashc and checks it:
#
#   the whole package: flashc.__version__ (flashc/_version.py) is the
#     project's; a CPU attention matches a float64 NumPy reference; the
#     `flashc` command is in the environment and runs;
#   --runtime-only (FLASHC_RUNTIME_ONLY=1): the version; no _compiler; with
#     --bundle DIR (a bundle with an sm_80 f16, D = 64, 4-to-1 GQA prefill
#     kernel, as the runtime tests' bundle), that kernel in the simulator
#     against the reference.
#
#   scripts/pip-check.sh [--runtime-only] [--bundle DIR] [VENV_DIR]
#
# VENV_DIR defaults to a temporary directory, removed at the end. Prints the
# time pip took. Exit status 0 when every check passed.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/lib/python.sh"

runtime_only=0
bundle=""
venv=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runtime-only) runtime_only=1 ;;
    --bundle) bundle="$(cd "$2" && pwd)"; shift ;;
    -*) echo "pip-check: unknown option '$1'" >&2; exit 2 ;;
    *) venv="$1" ;;
  esac
  shift
done
python=$(flashc_python) || exit 2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[ -n "$venv" ] || venv="$scratch/venv"

rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
version=$(sed -n 's/^project(flashc VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

# As many compile jobs as cores (ninja would start two more).
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
start=$(date +%s)
if [ "$runtime_only" -eq 1 ]; then export FLASHC_RUNTIME_ONLY=1; fi
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input \
  --quiet "$root"
echo "pip-check: pip install .$([ "$runtime_only" -eq 1 ] && echo ' (runtime only)') took $(( $(date +%s) - start )) s"

# From elsewhere: the installed package, not the source tree's python/.
cd "$scratch"
export FLASHC_CHECK_VERSION="$version" FLASHC_CHECK_BUNDLE="$bundle"
export FLASHC_CHECK_RUNTIME_ONLY="$runtime_only"
"$venv/bin/python" - <<'PY'
import importlib.util
import os
import sys

import numpy as np

import flashc
import flashc._version

expected = os.environ["FLASHC_CHECK_VERSION"]
where = os.path.dirname(flashc.__file__)
assert "site-packages" in where, f"flashc imported from {where}"
got = flashc._version.__version__
assert got == expected, f"flashc._version.__version__ is {got!r}, not {expected!r}"
print(f"pip-check: flashc {got} from {where}")


def reference(q, k, v, causal):
    """softmax(Q K^T / sqrt(D)) V in float64, [B, H, N, D]; GQA by head."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        nq, nk = q.shape[2], k.shape[2]
        mask = np.arange(nk)[None, :] > np.arange(nq)[:, None] + nk - nq
        s = np.where(mask, -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


rng = np.random.default_rng()
seed = int(rng.integers(2**32))
rng = np.random.default_rng(seed)
print(f"pip-check: seed {seed}")
if os.environ["FLASHC_CHECK_RUNTIME_ONLY"] == "1":
    assert importlib.util.find_spec("flashc._compiler") is None, \
        "the runtime-only package has flashc._compiler"
    bundle_dir = os.environ["FLASHC_CHECK_BUNDLE"]
    if bundle_dir:
        q = rng.standard_normal((1, 8, 24, 64)).astype(np.float16)
        k = rng.standard_normal((1, 2, 40, 64)).astype(np.float16)
        v = rng.standard_normal((1, 2, 40, 64)).astype(np.float16)
        bundle = flashc.load_bundle(bundle_dir)
        out = bundle.attention(q, k, v, causal=True, simulate=True,
                               chip="sm_80")
        err = np.abs(out.astype(np.float64) - reference(q, k, v, True)).max()
        print(f"pip-check: bundled kernel in the simulator, max error {err:.3g}")
        assert err <= 4e-3, f"error {err} above 4e-3"
else:
    q = rng.standard_normal((2, 4, 19, 32)).astype(np.float32)
    k = rng.standard_normal((2, 2, 27, 32)).astype(np.float32)
    v = rng.standard_normal((2, 2, 27, 32)).astype(np.float32)
    out = flashc.attention(q, k, v, causal=True)
    err = np.abs(out - reference(q, k, v, True)).max()
    print(f"pip-check: CPU attention, max error {err:.3g}")
    assert err <= 2e-4, f"error {err} above 2e-4"
PY
if [ "$runtime_only" -eq 0 ]; then
  "$venv/bin/flashc" >/dev/null
  echo "pip-check: $venv/bin/flashc runs"
fi
echo "pip-check: PASS"
