#!/bin/sh
# flashc-gpucheck on the fake CUDA driver when a kernel hangs: the driver's
# second launch never finishes (FLASHC_FAKE_CUDA_HANG_AT=2), the runtime
# gives up on it after FLASHC_CUDA_SYNC_TIMEOUT_S, and the check stops with
# "lost: WHAT" and exit 3; --resume-after WHAT then runs exactly what comes
# after WHAT. numerics also where the second launch faults instead
# (FLASHC_FAKE_CUDA_FAULT_AT=2), which loses the device the same way.
#
#   gpucheck-hang.sh numerics FLASHC_GPUCHECK BUNDLE_DIR
#       (ctest flashc-gpucheck-hang-fake-cuda)
#   gpucheck-hang.sh simkernels FLASHC_GPUCHECK PTX PTX_SM90
#       (ctest flashc-gpucheck-simkernels-hang-fake-cuda)
mode="$1"
gpucheck="$2"
fail() { echo "gpucheck-hang: $*" >&2; exit 1; }

if [ "$mode" = simkernels ]; then
  set -- "$3" "$4"
  out=$(FLASHC_FAKE_CUDA_HANG_AT=2 FLASHC_CUDA_SYNC_TIMEOUT_S=0.2 \
    "$gpucheck" simkernels --ptx "$1" --ptx-sm90 "$2")
  rc=$?
  echo "$out"
  [ "$rc" -eq 3 ] || fail "a hang exited $rc, not 3"
  # The second kernel of the list is the second launch.
  [ "$(echo "$out" | tail -n 1)" = "lost: blockReduce" ] ||
    fail "the hang is not blockReduce's, or not the last line"
  echo "$out" | grep -q "^blockReduce .*did not finish within 0.2 s" ||
    fail "blockReduce's line does not say why"
  # A name with a space; the kernels after it run, it does not.
  out=$("$gpucheck" simkernels --ptx "$1" --ptx-sm90 "$2" \
    --resume-after "tmaPipeline sw128") || fail "the resumed run failed"
  echo "$out"
  echo "$out" | grep -q '^tmaPipeline' && fail "tmaPipeline ran again"
  echo "$out" | grep -q '^blockReduce' && fail "blockReduce ran again"
  echo "$out" | grep -q '^wgmmaGemm RS .*PASS$' ||
    fail "the kernels after tmaPipeline sw128 did not run"
  err=$("$gpucheck" simkernels --ptx "$1" --ptx-sm90 "$2" \
    --resume-after nothing 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 1 ] &&
    [ "$err" = "flashc-gpucheck: --resume-after: no test kernel is called 'nothing'" ] ||
    fail "--resume-after nothing: exit $rc, '$err'"
  echo "gpucheck-hang: PASS"
  exit 0
fi

bundle="$3"

all=$("$gpucheck" numerics --bundle "$bundle" --device cuda --quick) ||
  fail "the run without a hang failed"
echo "$all"
ids=$(echo "$all" | awk '/ PASS$/ {print $1}' | uniq)
[ -n "$ids" ] || fail "no variant passed without a hang"

out=$(FLASHC_FAKE_CUDA_HANG_AT=2 FLASHC_CUDA_SYNC_TIMEOUT_S=0.2 \
  "$gpucheck" numerics --bundle "$bundle" --device cuda --quick)
rc=$?
echo "$out"
[ "$rc" -eq 3 ] || fail "a hang exited $rc, not 3"
hung=$(echo "$out" | sed -n 's/^lost: //p')
[ "$(echo "$hung" | wc -w)" -eq 1 ] || fail "expected one 'lost: ID' line"
echo "$ids" | grep -qx "$hung" || fail "'$hung' is not a variant of the run"
echo "$out" | grep -q "^$hung .*did not finish within 0.2 s" ||
  fail "the hung variant's line does not say why"
# Nothing after the hung variant ran in that process.
[ "$(echo "$out" | tail -n 1)" = "lost: $hung" ] ||
  fail "the hang is not the last line"

# A fault (a sticky error) stops the run the same way.
out=$(FLASHC_FAKE_CUDA_FAULT_AT=2 \
  "$gpucheck" numerics --bundle "$bundle" --device cuda --quick)
rc=$?
echo "$out"
[ "$rc" -eq 3 ] || fail "a fault exited $rc, not 3"
[ "$(echo "$out" | tail -n 1)" = "lost: $hung" ] ||
  fail "the fault is not the second launch's ($hung), or not the last line"
echo "$out" | grep -q "^$hung .*a kernel faulted, and the CUDA context is lost" ||
  fail "the faulted variant's line does not say why"

# The variants after it, and only those, in a new process.
after=$(echo "$ids" | sed "1,/^$hung\$/d")
resumed=$("$gpucheck" numerics --bundle "$bundle" --device cuda --quick \
  --resume-after "$hung") || fail "the resumed run failed"
echo "$resumed"
got=$(echo "$resumed" | awk '/ PASS$/ {print $1}' | uniq)
[ "$got" = "$after" ] ||
  fail "resuming after $hung ran [$got], not [$after]"

# After the last variant there is nothing left to run, and that passes.
last=$(echo "$ids" | tail -n 1)
"$gpucheck" numerics --bundle "$bundle" --device cuda --quick \
  --resume-after "$last" || fail "resuming after the last variant failed"

# An id the bundle does not have is an error naming it.
err=$("$gpucheck" numerics --bundle "$bundle" --device cuda --quick \
  --resume-after no-such-variant 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 1 ] &&
  [ "$err" = "flashc-gpucheck: --resume-after: the bundle has no variant 'no-such-variant'" ] ||
  fail "--resume-after no-such-variant: exit $rc, '$err'"
echo "gpucheck-hang: PASS"
