#!/usr/bin/env bash
#===- scripts/test.sh - Build flashc and run the whole test suite --------===#
#
# Installs the dependencies, builds, and runs every test through ctest: the
# GoogleTest unit tests, the lit suite and the generated-docs check.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure
