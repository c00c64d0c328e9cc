#!/bin/sh
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
# PYTHON overrides the interpreter (Debian's python3 by default).
here=$(dirname "$0")
if [ -z "$PYTHON" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
exec "$PYTHON" "$here/fuzz.py" "$@"
