#!/usr/bin/env bash
#===- scripts/gpu-bundle.sh - the kernels scripts/gpu-check.sh runs -------===#
#
# Compiles the bundle that scripts/gpu-check.sh loads on a GPU machine
# without MLIR: sm_90a (H200) kernels for f16 and bf16, head dims 64 and
# 128, MHA and GQA groups of 4 (32 query heads over 8 KV heads), causal and
# not, with and without LSE, prefill and split-KV decode; bf16 D = 128 for
# a group of 7 (28 query heads over 4, padding rows in every tile); bf16
# D = 96 and f16 D = 80 prefill kernels (rows in panels of the 64- and
# 32-byte swizzles); bf16 prefill kernels of D = 192 and Dv = 128; and the two
# variants the numerics' offset cases run built for 2-byte aligned tensors
# too (the runtime's fallback). The folder is git-ignored; pass it to the
# device machine with the run's carry list.
#
#   scripts/gpu-bundle.sh [OUT_DIR] [extra flashc bundle options]
#
# Needs a built tree (scripts/build.sh); FLASHC_BUILD_DIR names another.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHC_BUILD_DIR:-$root/build}"
out="${1:-$root/gpu-bundle}"
[ $# -gt 0 ] && shift
flashc="$build/bin/flashc"
if [ ! -x "$flashc" ]; then
  echo "gpu-bundle: $flashc not found; run scripts/build.sh first" >&2
  exit 1
fi
rm -rf "$out"
"$flashc" bundle -o "$out" --targets sm_90a --dtypes f16,bf16 \
  --head-dims 64,128 --groups 1,4 --causal both --lse both \
  --variants prefill,decode "$@"
# A GQA group that is not a power of two (28 / 4 query heads, as Qwen2-7B).
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes bf16 \
  --head-dims 128 --groups 7 --causal both --lse both \
  --variants prefill,decode "$@"
# Head dims whose rows take the 64- and 32-byte swizzles.
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes bf16 \
  --head-dims 96 --groups 1 --causal both --lse both --variants prefill "$@"
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes f16 \
  --head-dims 80 --groups 4 --causal both --lse no --variants prefill "$@"
# V's head dim below Q's (DeepSeek's 192 / 128): O stored by TMA through
# the first panels of Q's buffer.
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes bf16 \
  --head-dims 192 --head-dim-v 128 --groups 1 --causal both --lse no \
  --variants prefill "$@"
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes f16 \
  --head-dims 64 --groups 1 --masks causal --lse yes --variants prefill \
  --alignments 2 "$@"
"$flashc" bundle -o "$out" --add --targets sm_90a --dtypes bf16 \
  --head-dims 128 --groups 4 --masks none --lse no --variants decode \
  --alignments 2 "$@"
du -sh "$out"
