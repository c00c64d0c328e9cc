#!/bin/sh
# A stand-in `flashc run --simulate` for sim-sweep.test: runs whose head dim
# is 32 report ldmatrix bank conflicts in the simulator's counters, those of
# 72 and 128 conflicts of ld/st.shared, those of 80 too in a kernel that
# multiplies by warpgroups (wgmma counted), those of head dim 48 print no
# counters, those of 96 fail their check (exit 2); the rest pass cleanly.
dim=
extra=0
shared=0
wgmma=0
while [ $# -gt 0 ]; do
  [ "$1" = "--head-dim" ] && dim=$2
  shift
done
case "$dim" in
  32) extra=640 ;;
  72|128) shared=24 ;;
  80) shared=24; wgmma=36 ;;
  48) echo "check: PASS"; exit 0 ;;
  96) echo "check: max |error| 1.0e+00: FAIL"; exit 2 ;;
esac
echo "simulator: 100 thread instructions; ldmatrix 640 matrices, $extra extra shared-memory wavefronts from bank conflicts; ld/st.shared and cp.async 96 warp requests, $shared extra wavefronts; $wgmma wgmma (per warp), 0 TMA loads, 0 TMA stores (first run)"
echo "check: PASS"
