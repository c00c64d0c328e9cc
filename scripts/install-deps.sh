#!/usr/bin/env bash
#===- scripts/install-deps.sh - Install flashc's build dependencies ------===#
#
# Installs every Debian package flashc needs to build and test. Idempotent:
# when everything is already present it only checks and returns quickly.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools lld-22
  cmake ninja-build ccache g++ python3 python3-numpy
  python3-dev python3-pybind11 pybind11-dev python3-pytest
  libgtest-dev googletest
  libopenblas-dev libomp-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
