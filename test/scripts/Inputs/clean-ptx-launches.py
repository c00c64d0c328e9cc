"""Runs every kernel of a bundle that scripts/fuzz.py's ptx target launches
(those without tensor maps) once, unmutated, in flashc-ptxsim with the
launch flags the target gives it (no hostile launch):
each must run clean, or the fuzzer's mutated kernels would all stop at
the launch's checks. Prints one line a kernel.

  clean-ptx-launches.py FUZZ_DIR FLASHC_PTXSIM BUNDLE
"""

import os
import random
import subprocess
import sys

sys.path.insert(0, sys.argv[1])
import fuzz  # noqa: E402  pylint: disable=wrong-import-position,import-error

ptxsim, bundle = sys.argv[2], sys.argv[3]
test_bundle = fuzz.TestBundle(bundle)
failures = 0
for name in test_bundle.launchable:
    variant = test_bundle.by_file[name]
    for key in sorted(variant["kernels"]):
        args = fuzz.ptx_launch(random.Random(1), variant, key, hostile_rate=0)
        result = subprocess.run(
            [ptxsim, os.path.join(bundle, variant["ptx"])] + args,
            capture_output=True, text=True, check=False)
        message = (result.stdout + result.stderr).strip().splitlines()
        print(f"{variant['id']} {key}: exit {result.returncode}"
              + (f": {message[0]}" if message else ""))
        failures += result.returncode != 0
sys.exit(1 if failures else 0)
