#!/usr/bin/env bash
#===- scripts/codegen-snapshot.sh - What flashc emits, for a before/after ---===#
#
# Writes every GPU kernel variant of `flashc bundle` (PTX and manifest) and
# the CPU kernels' LLVM IR for a table of problems and schedule options into
# one directory, so that a change meant to keep code generation as it is
# can be checked by comparing two snapshots byte for byte:
#
#   scripts/codegen-snapshot.sh /tmp/before           # on the old tree
#   scripts/codegen-snapshot.sh /tmp/after            # on the new tree
#   scripts/codegen-snapshot.sh --compare /tmp/before /tmp/after
#
# FLASHC_BIN_DIR selects the tools (default: build/bin). Host-dependent CPU
# options (vector lanes, bf16 dot, scalef) are always given explicitly, so
# the snapshot does not depend on the machine it is taken on.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

if [ "${1:-}" = "--compare" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --compare BEFORE AFTER" >&2; exit 2; }
  # The manifest's compile times and tool version are not code.
  strip() { sed -E '/"[a-z_]*(seconds|_ms)"|"flashc_version"/d' "$1"; }
  status=0
  count=0
  while IFS= read -r f; do
    count=$((count + 1))
    if [ ! -f "$3/$f" ]; then
      echo "missing after: $f"; status=1; continue
    fi
    case "$f" in
      *.json) cmp -s <(strip "$2/$f") <(strip "$3/$f") ||
                { echo "differs: $f"; status=1; } ;;
      *) cmp -s "$2/$f" "$3/$f" || { echo "differs: $f"; status=1; } ;;
    esac
  done < <(cd "$2" && find . -type f | sort)
  extra=$(comm -13 <(cd "$2" && find . -type f | sort) \
                   <(cd "$3" && find . -type f | sort))
  if [ -n "$extra" ]; then echo "new after: $extra"; status=1; fi
  [ $status -eq 0 ] && echo "identical: $count files"
  exit $status
fi

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --compare BEFORE AFTER" >&2; exit 2; }
out=$1
bin=${FLASHC_BIN_DIR:-$(dirname "$0")/../build/bin}
flashc=$bin/flashc
rm -rf "$out"
mkdir -p "$out/bundle" "$out/cpu"

# Every GPU variant the bundle command knows, PTX only (ptxas's register
# counts are the assembler's, not flashc's).
"$flashc" bundle -o "$out/bundle" --no-assemble \
  --targets sm_80,sm_90a --dtypes f16,bf16 --head-dims 64,128,256 \
  --groups 1,4 --causal both --lse both --variants prefill,decode >/dev/null

# CPU kernels: prefill and decode, f32/f16/bf16, causal, LSE, GQA, the
# loop orders and the host-dependent instruction choices.
i=0
cpu() {
  i=$((i + 1))
  "$flashc" compile --target cpu --emit llvm "$@" \
    -o "$out/cpu/$(printf %02d $i).ll"
  echo "$*" >"$out/cpu/$(printf %02d $i).args"
}
for lanes in 8 16; do
  for dt in f32 f16 bf16; do
    cpu --vector-lanes $lanes --bf16-dot off --scalef off --dtype $dt \
        --seq-q 256 --seq-kv 256 --head-dim 64
    cpu --vector-lanes $lanes --bf16-dot off --scalef off --dtype $dt \
        --seq-q 1 --seq-kv 512 --head-dim 128
  done
  cpu --vector-lanes $lanes --bf16-dot off --scalef off --causal --lse \
      --heads 8 --kv-heads 2 --seq-q 128 --seq-kv 384 --head-dim 64
  cpu --vector-lanes $lanes --bf16-dot off --scalef off --head-dim 64 \
      --head-dim-v 128 --seq-q 64 --seq-kv 64
  cpu --vector-lanes $lanes --bf16-dot off --scalef off --loop-order algorithm1 \
      --seq-q 128 --seq-kv 128
  cpu --vector-lanes $lanes --bf16-dot off --scalef off --kt-reuse off \
      --seq-q 128 --seq-kv 128
done
cpu --vector-lanes 16 --bf16-dot on --scalef on --dtype bf16 --seq-q 1 \
    --seq-kv 512 --head-dim 128
cpu --vector-lanes 16 --bf16-dot off --scalef on --causal --seq-q 256 \
    --seq-kv 256
cpu --vector-lanes 16 --bf16-dot off --scalef off --splits 4 --seq-q 1 \
    --seq-kv 4096
echo "$(find "$out" -type f -name '*.ptx' | wc -l) PTX files and" \
     "$(find "$out/cpu" -name '*.ll' | wc -l) CPU modules in $out"
