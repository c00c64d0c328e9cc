#!/usr/bin/env python3
# ===- scripts/kernels-table.py - The GPU kernels' resource table ---------===#
#
# Compiles the shipped GPU kernel bundle (`flashc bundle` with its default
# configurations and with and without the log-sum-exp output, as
# scripts/gpu-bundle.sh ships them, assembled by the toolkit's ptxas) and
# writes
# docs/KERNELS.md: per kernel, its registers, spill bytes, shared memory and
# the counts of the main instructions in its PTX. It also enforces the
# limits every shipped kernel must meet: no spills and no ld.local/st.local
# in the PTX, at most 255 registers, shared memory within the target's
# opt-in maximum. A second table is the static performance model of each
# forward kernel's main loop (scripts/kernel_model.py, over nvdisasm's SASS).
#
#   scripts/kernels-table.py --flashc build/bin/flashc            # rewrite
#   scripts/kernels-table.py --flashc build/bin/flashc --check    # CI: stale?
#
# Exit status: 0 fine, 1 a limit is violated or (with --check) the table in
# the repository differs from the regenerated one.
#
# ===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "docs", "KERNELS.md")

# The shipped bundle: `flashc bundle`'s defaults, per target.
TARGETS = ["sm_80", "sm_90a"]
SHARED_LIMIT = {"sm_80": 163 * 1024, "sm_90a": 227 * 1024}
COUNTED = [
    ("mma", r"mma\.sync\.aligned"),
    ("wgmma", r"wgmma\.mma_async"),
    ("ldmatrix", r"ldmatrix\.sync\.aligned"),
    ("cp.async", r"cp\.async\.c[ag]\.shared\.global"),
    ("tma", r"cp\.async\.bulk\.tensor"),
    ("ex2", r"ex2\.approx"),
    ("shfl", r"shfl\.sync"),
    ("bar", r"bar\.sync"),
    ("st.global.v4", r"st\.global\.v4"),
]


def entry_ptx(ptx, name):
    """The text of one .entry of a PTX module."""
    start = ptx.find(".entry " + name + "(")
    if start < 0:
        return ""
    end = ptx.find(".entry ", start + 1)
    return ptx[start:] if end < 0 else ptx[start:end]


def build_bundle(flashc, nvdisasm, target, directory):
    subprocess.run([flashc, "bundle", "--targets", target, "--lse", "both",
                    "-o", directory],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    rows = []
    for v in manifest["variants"]:
        used = {}
        models = kernel_model.model_variant(directory, v, nvdisasm, used)
        with open(os.path.join(directory, v["ptx"])) as f:
            ptx = f.read()
        for role in ("forward", "combine"):
            k = v["kernels"].get(role)
            if not k:
                continue
            text = entry_ptx(ptx, k["name"])
            counts = [len(re.findall(p, text)) for _, p in COUNTED]
            local = len(re.findall(r"\b(?:ld|st)\.local", text))
            # A warp-specialised kernel's setmaxnreg: the producer's and the
            # consumers' allotments.
            grants = {m.group(1): int(m.group(2)) for m in re.finditer(
                r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", text)}
            rows.append((v, role, k, counts, local, models[role],
                         used[role], grants))
    return rows


def model_table(rows):
    """The static model's table: one row per kernel with an MMA loop."""
    cats = kernel_model.CATEGORIES
    lines = [
        "",
        "## The main loop, per warp and unit of work (static model)",
        "",
        "From `scripts/kernel_model.py` over the SASS of the same cubins "
        "(`nvdisasm -c`): the kernel's main KV loop, one steady-state "
        "iteration (a region that a branch skips and that holds no MMA, "
        "no ldmatrix and no memory access, the mask of a ragged or "
        "diagonal block or the rescale of O where a row's maximum moved "
        "by more than the rescale threshold, is counted apart as "
        "`fix-up`), divided into "
        "units of 16 query rows x 64 keys of QK^T and PV per warp. "
        "Cycles are one SM sub-partition's per unit: the tensor pipe "
        "(HMMA.16816: 8 cycles on sm_80, 4 on sm_90a; a warpgroup's "
        "HGMMA.64xNx16, sm_90a's warpgroup MMA, a quarter of its 64 x N x "
        "16 MACs per warp at 512 a cycle), MUFU (8 per warp "
        "instruction), issue (1 per instruction) and shared memory "
        "(ldmatrix, shared loads and HGMMA's shared operands at 32 bytes "
        "per cycle). `peak` is the "
        "tensor time over the largest of the four: an upper bound on the "
        "fraction of tensor peak, not a measurement. CTAs/SM follows from "
        "registers, threads and shared memory.",
        "",
        "| variant | kernel | CTAs/SM | units/iter | "
        + " | ".join(cats) + " | issued | fix-up | tensor | mufu | issue | "
        "smem | bound | peak |",
        "|---|---|---|---|" + "---|" * len(cats) + "---|---|---|---|---|"
        "---|---|---|",
    ]
    for v, role, _, _, _, m, _, _ in rows:
        if m is None or "per_unit" not in m:
            continue
        u = m["per_unit"]
        c = m["cycles"]
        lines.append(
            f"| {v['id']} | {role} | {m['ctas_per_sm']} | "
            f"{m['units_per_iteration']:g} | "
            + " | ".join(f"{u[k]:.1f}" for k in cats)
            + f" | {u['issued']:.1f} | {m['fixup']} | {c['tensor']:.0f} | "
            f"{c['mufu']:.0f} | {c['issue']:.0f} | {c['smem']:.0f} | "
            f"{m['bound']} | {100 * m['tensor_fraction']:.0f}% |")
    trips = [(v, role, m) for v, role, _, _, _, m, _, _ in rows
             if m is not None and "round_trips" in m]
    if trips:
        lines += [
            "",
            "## The combine kernels' loads",
            "",
            "A kernel without MMAs, the split-KV combine, waits on memory: "
            "over its loop with the most global loads (LDG), the loads an "
            "iteration (a step of whole splits) issues and the round trips "
            "to memory they take, a round trip ending at the first "
            "instruction that reads a register one of its loads writes "
            "(`scripts/kernel_model.py`). The last splits, when they are "
            "not a whole step, take a step of their own after the loop, "
            "not counted here.",
            "",
            "| variant | kernel | loads an iteration | round trips |",
            "|---|---|---|---|",
        ]
        for v, role, m in trips:
            lines.append(f"| {v['id']} | {role} | {m['loads']} | "
                         f"{m['round_trips']} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flashc", required=True)
    parser.add_argument("--check", action="store_true",
                        help="fail if docs/KERNELS.md is stale")
    parser.add_argument("--output", default=TABLE)
    parser.add_argument("--nvdisasm", help="the nvdisasm for the model "
                        "(default: kernel_model.find_nvdisasm's search)")
    args = parser.parse_args()
    nvdisasm = kernel_model.find_nvdisasm(args.nvdisasm)
    if not nvdisasm:
        print("kernels-table: no nvdisasm (scripts/install-deps.sh installs "
              "one from PyPI; or pass --nvdisasm)", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(len(TARGETS)) as pool:
            futures = [pool.submit(build_bundle, args.flashc, nvdisasm, t,
                                   os.path.join(tmp, t)) for t in TARGETS]
            rows = [r for f in futures for r in f.result()]

    problems = []
    lines = [
        "# flashc GPU kernels",
        "",
        "Generated by `scripts/kernels-table.py` from the shipped bundle "
        "(`flashc bundle` with its defaults: sm_80 and sm_90a, f16 and bf16, "
        "D = 64, 128, 256, MHA and GQA groups of 4, causal and not, prefill "
        "and decode; and each with the log-sum-exp output, `--lse both`), "
        "assembled by the toolkit's `ptxas -v`. Every kernel comes "
        "through the flash_tile IR. CI regenerates "
        "it and fails when it is stale or when a kernel spills, uses local "
        "memory in its PTX, more than 255 registers or more shared memory "
        "than its target allows.",
        "",
        "Shared memory is the dynamic size the kernel is launched with. "
        "Instruction columns count occurrences in the kernel's PTX (the "
        "loop body is unrolled, so they are per KV block, plus prologue "
        "and epilogue).",
        "",
        "`registers` is ptxas's count, the allotment a thread starts with; "
        "`SASS registers` what the code names (its highest register plus "
        "one). A warp-specialised kernel's `setmaxnreg` gives its "
        "producer's warpgroup fewer and its consumers more "
        "(producer / consumers): its code must fit the consumers' "
        "allotment, which may exceed ptxas's count; any other kernel's must "
        "fit ptxas's count.",
        "",
        "| variant | kernel | threads | registers | setmaxnreg | "
        "SASS registers | spill bytes | shared bytes | "
        + " | ".join(name for name, _ in COUNTED) + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(COUNTED),
    ]
    for v, role, k, counts, local, _, used, grants in rows:
        target = v["target"]
        if local:
            problems.append(f"{k['name']} ({v['id']}) has {local} "
                            "ld.local/st.local instructions in its PTX")
        if k["spill_bytes"] != 0:
            problems.append(f"{k['name']} ({v['id']}) spills "
                            f"{k['spill_bytes']} bytes")
        if k["registers"] < 0 or k["registers"] > 255:
            problems.append(f"{k['name']} ({v['id']}) uses "
                            f"{k['registers']} registers")
        allotment = grants.get("inc", k["registers"])
        if used > allotment:
            problems.append(f"{k['name']} ({v['id']}) names {used} "
                            f"registers, more than its {allotment}")
        if grants and (set(grants) != {"inc", "dec"} or
                       grants["dec"] * 128 + grants["inc"] *
                       (k["block"] - 128) > 65536):
            problems.append(f"{k['name']} ({v['id']}) has setmaxnreg "
                            f"{grants} that do not fit the SM's registers")
        if k["shared_bytes"] > SHARED_LIMIT[target]:
            problems.append(f"{k['name']} ({v['id']}) needs "
                            f"{k['shared_bytes']} bytes of shared memory, "
                            f"{target} allows {SHARED_LIMIT[target]}")
        setmax = (f"{grants['dec']} / {grants['inc']}"
                  if set(grants) == {"inc", "dec"} else "-")
        lines.append(f"| {v['id']} | {role} | {k['block']} | "
                     f"{k['registers']} | {setmax} | {used} | "
                     f"{k['spill_bytes']} | "
                     f"{k['shared_bytes']} | "
                     + " | ".join(str(c) for c in counts) + " |")
    lines += model_table(rows)
    text = "\n".join(lines) + "\n"

    for p in problems:
        print("kernels-table: " + p, file=sys.stderr)
    if args.check:
        try:
            with open(TABLE) as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            print("kernels-table: docs/KERNELS.md is stale; regenerate it "
                  "with scripts/kernels-table.py --flashc build/bin/flashc",
                  file=sys.stderr)
            return 1
    else:
        with open(args.output, "w") as f:
            f.write(text)
        print(f"kernels-table: {len(rows)} kernels written to {args.output}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
