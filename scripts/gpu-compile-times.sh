#!/usr/bin/env bash
#===- scripts/gpu-compile-times.sh - Spec to PTX, cold --------------------===#
#
# How long flashc takes from an attention spec to PTX for one GPU kernel
# variant, cold: each measurement is a fresh `flashc bundle` process
# compiling that one variant without assembling it (PTX to cubin is the
# driver's or ptxas's job). Prints, per variant, the median of N runs of
# the in-process time (spec to PTX, as `flashc bundle` reports it) and of
# the whole process's wall time (start-up and library loading included).
#
#   scripts/gpu-compile-times.sh [N]     (default 5)
#
# Needs a built tree (scripts/build.sh); FLASHC_BUILD_DIR names another.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flashc="${FLASHC_BUILD_DIR:-$root/build}/bin/flashc"
runs="${1:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-40s %12s %12s\n" "variant" "spec->PTX ms" "process ms"
for target in sm_80 sm_90a; do
  for config in "f16 64 1 no prefill" "f16 128 1 yes prefill" \
                "bf16 128 4 yes prefill" "f16 256 1 no prefill" \
                "bf16 128 4 no decode" "f16 64 4 yes decode"; do
    set -- $config
    inproc=()
    wall=()
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      line=$("$flashc" bundle -o "$tmp/b" --targets "$target" --dtypes "$1" \
        --head-dims "$2" --groups "$3" --causal "$4" --variants "$5" \
        --no-assemble | head -n 1)
      wall+=($(( ($(date +%s%N) - start) / 1000000 )))
      inproc+=("$(echo "$line" | awk '{print $2}')")
      id=$(echo "$line" | awk '{print $1}')
    done
    printf "%-40s %12s %12s\n" "$id" \
      "$(printf '%s\n' "${inproc[@]}" | median)" \
      "$(printf '%s\n' "${wall[@]}" | median)"
  done
done
