#!/usr/bin/env bash
# Fuzz flashc-opt, flashc, the runtime's bundle loader (through the C API)
# and the PTX simulator for a bounded time (see scripts/fuzz.py).
#
#   scripts/fuzz.sh [--seconds N] [--seed S] [--targets opt,driver,bundle,ptx]
#                   [--flashc-opt PATH] [--flashc PATH] [--bundle-target PATH]
#                   [--test-bundle DIR] [--flashc-ptxsim PATH]
#                   [--out DIR] [--jobs J] [--max-inputs N]
#
# Exit status 1 when any input crashed, hung, ran out of memory or broke its
# tool's error contract.
# The Python is scripts/lib/python.sh's (PYTHON overrides it).
here=$(dirname "$0")
. "$here/lib/python.sh"
python=$(flashc_python) || exit 2
exec "$python" "$here/fuzz.py" "$@"
