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
# expect_lost OUTPUT STATUS WHAT REASON: a run that lost the device at WHAT
# (its line says REASON) and stopped there, with exit 3.
expect_lost() {
  echo "$1"
  [ "$2" -eq 3 ] || fail "losing the device exited $2, not 3"
  [ "$(echo "$1" | tail -n 1)" = "lost: $3" ] ||
    fail "the device was not lost at $3, or that is not the last line"
  echo "$1" | grep -q "^$3 .*$4" || fail "$3's line does not say '$4'"
}

if [ "$mode" = simkernels ]; then
  set -- "$3" "$4"
  # The second kernel of the list is the second launch.
  out=$(FLASHC_FAKE_CUDA_HANG_AT=2 FLASHC_CUDA_SYNC_TIMEOUT_S=0.2 \
    "$gpucheck" simkernels --ptx "$1" --ptx-sm90 "$2")
  expect_lost "$out" $? blockReduce "did not finish within 0.2 s"
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
hung=$(echo "$out" | sed -n 's/^lost: //p')
[ "$(echo "$hung" | wc -w)" -eq 1 ] || fail "expected one 'lost: ID' line"
echo "$ids" | grep -qx "$hung" || fail "'$hung' is not a variant of the run"
# Nothing after the hung variant ran in that process.
expect_lost "$out" $rc "$hung" "did not finish within 0.2 s"

# A fault (a sticky error) of the same launch stops the run the same way.
out=$(FLASHC_FAKE_CUDA_FAULT_AT=2 \
  "$gpucheck" numerics --bundle "$bundle" --device cuda --quick)
expect_lost "$out" $? "$hung" "a kernel faulted, and the CUDA context is lost"

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
