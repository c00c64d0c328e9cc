"""Writes the PTX of the first gpu.object in an MLIR file (the `assembly`
that gpu-module-to-binary{format=isa} leaves, with MLIR's \\XX escapes).

usage: extract_ptx.py BINARY.mlir OUT.ptx
"""
import re
import sys

text = open(sys.argv[1]).read()
m = re.search(r'assembly = "(.*?)"', text, re.S)
if not m:
    sys.exit(f"{sys.argv[1]}: no gpu.object with an assembly")
with open(sys.argv[2], "w") as f:
    f.write(re.sub(r"\\([0-9A-Fa-f]{2})", lambda h: chr(int(h.group(1), 16)),
                   m.group(1)))
