#!/bin/sh
# Fuzz flashc-opt and flashc for a bounded time (see scripts/fuzz.py).
#
#   scripts/fuzz.sh [--seconds N] [--seed S] [--flashc-opt PATH] [--flashc PATH]
#                   [--out DIR] [--jobs J] [--max-inputs N]
#
# Exit status 1 when any input crashed, hung or ran out of memory.
# PYTHON overrides the interpreter (Debian's python3 by default).
here=$(dirname "$0")
if [ -z "$PYTHON" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
exec "$PYTHON" "$here/fuzz.py" "$@"
