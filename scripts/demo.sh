#!/usr/bin/env bash
#===- scripts/demo.sh - flashc's main job on the built-in example --------===#
#
# Builds flashc, shows a naive attention graph before and after
# `flash-fuse-attention`, then runs the `flashc` driver on its built-in
# example: compile for the CPU, run, check against a float64 reference,
# time, and print the cost report.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"

example="$root/examples/naive_attention.mlir"
echo "=== naive attention (examples/naive_attention.mlir) ==="
"$build/bin/flashc-opt" "$example"
echo
echo "=== after flashc-opt --flash-fuse-attention ==="
"$build/bin/flashc-opt" --flash-fuse-attention "$example"
echo
echo "=== flashc (the built-in example: compile, run, check, cost) ==="
"$build/bin/flashc" run
