#!/usr/bin/env bash
#===- scripts/torch-venv.sh - A CPU PyTorch for the multi-process examples ===#
#
# Creates a virtual environment holding a CPU build of PyTorch, for the
# multi-process example (examples/ring_attention.py) and the torch cases of
# python/tests: torch.distributed with gloo on the CPU, and flashc on torch
# tensors.
#
#   scripts/torch-venv.sh [DIR]       # default: build/venv-torch
#
# Then DIR/bin/python runs with torch importable (and flashc with
# PYTHONPATH=build/python: the environment is made from /usr/bin/python3
# with --system-site-packages, so flashc's extension modules, Debian's numpy
# and pytest all load in it).
#
# Where torch comes from: Debian's python3-torch (1.13, a CPU build with
# gloo), unpacked into DIR/debian with `dpkg -x`, nothing installed on the
# system. apt-get only downloads the packages that the system lacks (137 MB
# in 175 packages next to flashc's build dependencies; about 25 s in all).
# PyPI's Linux wheel cannot serve here: its libtorch_cpu.so itself links the
# CUDA runtime (libcudart, libcupti) and libtorch_cuda.so a dozen CUDA
# libraries, so `import torch` fails without the nvidia-* packages, several
# GB.
#
# Because the unpacked libraries are not where the dynamic loader looks,
# DIR/bin/python and DIR/bin/python3 are small wrappers that put them on
# LD_LIBRARY_PATH and run the environment's interpreter (DIR/bin/python3.11,
# which alone does not find them); processes started from it
# (torch.multiprocessing, subprocess) inherit the path.
#
# Idempotent: an environment whose torch imports and has gloo is left as it
# is. Exits nonzero with the reason when it cannot make one (apt-get's
# downloads need root when the package lists are missing or stale).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/build/venv-torch}"
base_python=/usr/bin/python3

fail() {
  echo "torch-venv: error: $*" >&2
  exit 1
}

# The check that the environment is usable: torch imports and
# torch.distributed has the gloo backend.
check='
import torch, torch.distributed as dist
assert dist.is_available(), "torch.distributed is not available"
assert dist.is_gloo_available(), "torch.distributed has no gloo backend"
print(f"torch {torch.__version__} with gloo")
'

if [ -x "$venv/bin/python" ] &&
   result=$("$venv/bin/python" -c "$check" 2>/dev/null); then
  echo "torch-venv: $venv is ready ($result)"
  exit 0
fi

start=$(date +%s)
[ -x "$base_python" ] || fail "$base_python is missing"
for tool in apt-get dpkg; do
  command -v "$tool" >/dev/null || fail "$tool is missing (Debian needed)"
done
if [ -e "$venv" ] && [ ! -e "$venv/pyvenv.cfg" ] &&
   [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
  fail "$venv exists and is not a virtual environment; not touching it"
fi
venv="$(mkdir -p "$venv" && cd "$venv" && pwd)"
case "$venv" in
  *[[:space:]:]*) fail "the path $venv holds a space or a colon" ;;
esac

# A fresh environment each time it does not work: what a failed run left
# is not trusted.
rm -rf "${venv:?}/debian" "${venv:?}/bin" "${venv:?}/lib" "${venv:?}/lib64" \
       "${venv:?}/include" "${venv:?}/pyvenv.cfg"
echo "torch-venv: creating $venv from $base_python (system site packages)"
"$base_python" -m venv --system-site-packages --without-pip "$venv" ||
  fail "cannot create the virtual environment $venv"

# The packages python3-torch needs that the system lacks (or has in an
# older version), as apt would install them.
packages() {
  apt-get install -s -qq --no-install-recommends python3-torch 2>/dev/null |
    awk '$1 == "Inst" { print $2 }'
}
installed() {
  dpkg-query -W -f='${Status}' python3-torch 2>/dev/null |
    grep -q "install ok installed"
}
mapfile -t needed < <(packages)
if [ ${#needed[@]} -eq 0 ] && ! installed; then
  # Nothing to install yet not installed: apt knows no python3-torch.
  echo "torch-venv: apt knows no python3-torch; refreshing the package lists"
  apt-get update -qq || fail "apt-get update failed (are you root?)"
  mapfile -t needed < <(packages)
  [ ${#needed[@]} -gt 0 ] || fail "apt knows no python3-torch"
fi

downloads="$venv/debian/downloads"
mkdir -p "$downloads"
if [ ${#needed[@]} -gt 0 ]; then
  echo "torch-venv: downloading ${#needed[@]} Debian packages"
  # As root, apt-get download warns that its sandbox user cannot write the
  # folder; that is not an error. Its messages are shown when it fails.
  log="$venv/debian/apt-get.log"
  if ! (cd "$downloads" && apt-get download -qq "${needed[@]}") 2>"$log"
  then
    echo "torch-venv: download failed; refreshing the package lists"
    apt-get update -qq || fail "apt-get update failed (are you root?)"
    mapfile -t needed < <(packages)
    if ! (cd "$downloads" && apt-get download -qq "${needed[@]}") 2>"$log"
    then
      cat "$log" >&2
      fail "cannot download ${needed[*]}"
    fi
  fi
  rm -f "$log"
  echo "torch-venv: downloaded $(du -sh "$downloads" | cut -f1)," \
       "unpacking into $venv/debian"
  for deb in "$downloads"/*.deb; do
    dpkg -x "$deb" "$venv/debian" || fail "cannot unpack $deb"
  done
fi
rm -rf "$downloads"

# Python finds the unpacked modules through a .pth file; the loader finds
# the libraries through LD_LIBRARY_PATH, set by the wrappers.
site="$("$venv/bin/python3" -c \
  'import sysconfig; print(sysconfig.get_path("purelib"))')"
echo "$venv/debian/usr/lib/python3/dist-packages" \
  > "$site/flashc-debian-torch.pth"
libraries=""
for top in "$venv/debian/lib" "$venv/debian/usr/lib"; do
  [ -d "$top" ] || continue
  while IFS= read -r dir; do
    libraries="${libraries:+$libraries:}$dir"
  done < <(find "$top" -name "lib*.so.[0-9]*" \( -type f -o -type l \) \
             -printf '%h\n' | grep -v "/python3/" | sort -u)
done
# bin/python3.11 (say) links the real interpreter; the wrappers run it.
real="$(readlink -f "$base_python")"
interpreter="$(basename "$real")"
ln -sfn "$real" "$venv/bin/$interpreter"
for name in python python3; do
  rm -f "$venv/bin/$name"
  cat > "$venv/bin/$name" <<EOF
#!/bin/sh
# Runs the environment's Python with the unpacked libraries on the loader's
# path (scripts/torch-venv.sh).
libraries="$libraries"
if [ -n "\$libraries" ]; then
  export LD_LIBRARY_PATH="\$libraries\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
fi
exec "$venv/bin/$interpreter" "\$@"
EOF
  chmod +x "$venv/bin/$name"
done

result=$("$venv/bin/python" -c "$check" 2>&1) ||
  fail "torch does not work in $venv: $result"
echo "torch-venv: $venv is ready ($result) in $(( $(date +%s) - start )) s"
