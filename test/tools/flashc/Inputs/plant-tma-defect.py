"""Plants a synchronisation defect in the PTX of the one variant of a
bundle and re-hashes it in the manifest, so that the runtime loads it:
no-wait (the consumers' mbarrier waits succeed at once), no-expect-tx (the
stage's arrival does not expect the copy's bytes), wrong-parity (the first
wait is for the other phase), no-acquire (the producer's waits for a
released stage succeed at once), no-release (the consumers never release
a stage), no-first-turn (the first consumer warpgroup does not take the
first turn at the tensor cores: no arrival on its own turn barrier) or
no-last-turn (it does not meet the last turn's pass as the consumers end).

A warp-specialised kernel's producer waits right before the copy its
elected thread issues: a wait followed within a few lines by elect.sync is
the producer's, any other the consumers'."""

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
WAIT = re.compile(r"mbarrier\.try_wait\.parity\.shared\.b64 (\w+), [^;]*;")


def remove_waits(ptx, producer):
    """Makes the producer's (or the consumers') waits succeed at once."""
    lines = ptx.split("\n")
    n = 0
    for i, line in enumerate(lines):
        m = WAIT.search(line)
        if not m:
            continue
        if any("elect.sync" in l for l in lines[i + 1:i + 8]) != producer:
            continue
        lines[i] = WAIT.sub(r"setp.eq.u32 \1, 0, 0;", line)
        n += 1
    return "\n".join(lines), n


if defect == "no-wait":
    ptx, n = remove_waits(ptx, producer=False)
elif defect == "no-acquire":
    ptx, n = remove_waits(ptx, producer=True)
elif defect == "no-release":
    ptx, n = re.subn(r"mbarrier\.arrive\.shared\.b64 [^;]*;", "", ptx)
elif defect == "no-first-turn":
    # The first warpgroup's arrival on its own turn barrier (2), the only
    # bar.arrive with an immediate id.
    ptx, n = re.subn(r"bar\.arrive 2, 256;", "", ptx)
elif defect == "no-last-turn":
    # The first warpgroup's wait on its own turn barrier (2) at the end, the
    # only bar.sync of it with an immediate id.
    ptx, n = re.subn(r"bar\.sync \t2, 256;", "", ptx)
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
