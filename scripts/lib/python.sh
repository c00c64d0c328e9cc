# shellcheck shell=bash
#===- scripts/lib/python.sh - The Python flashc's scripts run -------------===#
#
# Sourced by the scripts (build.sh, gpu-check.sh, fuzz.sh), so that all of
# them pick their Python the same way:
#
#   flashc_python [MODULE...]
#
# prints the first of $PYTHON, `python3` on PATH and /usr/bin/python3
# (Debian's, which scripts/install-deps.sh gives numpy and pytest) that
# imports numpy and every MODULE named. $PYTHON, when set, is used as it
# is or refused, never passed over. Prints why on stderr and returns 1
# when none does.
#
#===----------------------------------------------------------------------===#

flashc_python() {
  local modules="numpy" m candidate
  for m in "$@"; do modules="$modules, $m"; done
  if [ -n "${PYTHON:-}" ]; then
    if "$PYTHON" -c "import $modules" 2>/dev/null; then
      command -v "$PYTHON"
      return 0
    fi
    echo "PYTHON=$PYTHON cannot import $modules" >&2
    return 1
  fi
  for candidate in "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] &&
       "$candidate" -c "import $modules" 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo "no Python 3 that imports $modules: neither python3 on PATH" \
       "($(command -v python3 2>/dev/null || echo none)) nor /usr/bin/python3;" \
       "run scripts/install-deps.sh or set PYTHON" >&2
  return 1
}
