"""Plants a synchronisation defect in the PTX of the one variant of a
bundle and re-hashes it in the manifest, so that the runtime loads it:
no-wait (every mbarrier wait succeeds at once), no-expect-tx (the stage's
arrival does not expect the copy's bytes) or wrong-parity (the first wait
is for the other phase)."""

import json
import re
import sys

directory, defect = sys.argv[1], sys.argv[2]
with open(directory + "/manifest.json") as f:
    manifest = json.load(f)
variant = manifest["variants"][0]
path = directory + "/" + variant["ptx"]
with open(path) as f:
    ptx = f.read()
if defect == "no-wait":
    ptx, n = re.subn(r"mbarrier\.try_wait\.parity\.shared\.b64 (\w+), [^;]*;",
                     r"setp.eq.u32 \1, 0, 0;", ptx)
elif defect == "no-expect-tx":
    ptx, n = re.subn(
        r"mbarrier\.arrive\.expect_tx\.shared\.b64 ([^,]+), (\[[^\]]+\]), [^;]*;",
        r"mbarrier.arrive.shared.b64 \1, \2;", ptx)
elif defect == "wrong-parity":
    # The first wait, Q's, is for phase 0 (an immediate).
    ptx, n = re.subn(r"(mbarrier\.try_wait\.parity\.shared\.b64 \w+, "
                     r"\[[^\]]+\]), 0,", r"\1, 1,", ptx, count=1)
else:
    sys.exit("unknown defect " + defect)
print(defect, "planted", n, "time(s)")
with open(path, "w") as f:
    f.write(ptx)
h = 0xCBF29CE484222325
for c in ptx.encode():
    h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
variant["ptx_fnv1a"] = "%016x" % h
with open(directory + "/manifest.json", "w") as f:
    json.dump(manifest, f, indent=1)
