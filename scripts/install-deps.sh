#!/usr/bin/env bash
#===- scripts/install-deps.sh - Install flashc's build dependencies ------===#
#
# Installs every Debian package flashc needs to build and test, NVIDIA's
# nvdisasm from PyPI (the kernel model's check; skipped without it), and,
# where there is no CUDA toolkit, NVIDIA's ptxas and nvcc from PyPI (the
# tests that assemble GPU kernels need ptxas; without it they are skipped).
# Idempotent: when everything is already present it only checks and
# returns quickly.
#
#   FLASHC_NO_PYPI_CUDA=1 scripts/install-deps.sh   # nothing from PyPI
#
#===----------------------------------------------------------------------===#
set -euo pipefail

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools lld-22
  cmake ninja-build ccache g++ python3 python3-numpy
  python3-dev python3-pybind11 pybind11-dev python3-pytest
  python3-pip python3-venv
  libgtest-dev googletest
  libopenblas-dev libomp-22-dev
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# nvdisasm, for the static model of the GPU kernels (scripts/kernel_model.py,
# docs/KERNELS.md): NVIDIA's package from PyPI at a pinned version, so that
# the table does not change with the toolkit, in /opt/flashc-cuda/nvdisasm.
nvdisasm_pypi=/opt/flashc-cuda/nvdisasm
if [ ! -x "$nvdisasm_pypi/nvidia/cu13/bin/nvdisasm" ] &&
   [ "${FLASHC_NO_PYPI_CUDA:-0}" != 1 ]; then
  echo "install-deps: installing nvdisasm 13.2 (PyPI) into $nvdisasm_pypi"
  if ! $SUDO /usr/bin/python3 -m pip install --quiet --disable-pip-version-check \
       --no-input --root-user-action=ignore --no-deps --target "$nvdisasm_pypi" \
       "nvidia-cuda-nvdisasm==13.2.51"; then
    echo "install-deps: could not install nvdisasm from PyPI; the kernel model's check will be skipped" >&2
  fi
fi

# ptxas and nvcc. A CUDA toolkit at $CUDA_HOME or /usr/local/cuda is used
# as it is. Otherwise NVIDIA's CUDA 13.0 compiler packages from PyPI
# (nvidia-cuda-nvcc and what its nvcc needs; the same ptxas as the
# toolkit's) go to /opt/flashc-cuda, whose toolkit/ link CMake looks at
# (cmake/FlashcCudaToolkit.cmake). Reconfigure an existing build tree
# after this to pick it up.
cuda_pypi=/opt/flashc-cuda
if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ] ||
   [ -x "$cuda_pypi/toolkit/bin/ptxas" ]; then
  exit 0
fi
if [ "${FLASHC_NO_PYPI_CUDA:-0}" = 1 ]; then
  echo "install-deps: no CUDA toolkit (no ptxas); FLASHC_NO_PYPI_CUDA=1: the tests that need ptxas will be skipped"
  exit 0
fi
echo "install-deps: no CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda}: installing NVIDIA's ptxas and nvcc (CUDA 13.0, PyPI) into $cuda_pypi"
if $SUDO /usr/bin/python3 -m pip install --quiet --disable-pip-version-check \
     --no-input --root-user-action=ignore --target "$cuda_pypi/pip" \
     "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" \
     "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*" &&
   [ -x "$cuda_pypi/pip/nvidia/cu13/bin/ptxas" ]; then
  $SUDO ln -sfn pip/nvidia/cu13 "$cuda_pypi/toolkit"
  echo "install-deps: ptxas is $cuda_pypi/toolkit/bin/ptxas"
else
  echo "install-deps: could not install ptxas from PyPI; the tests that need it will be skipped" >&2
fi
