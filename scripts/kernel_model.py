#!/usr/bin/env python3
# ===- scripts/kernel_model.py - A static performance model of GPU kernels --===#
#
# No machine here has a GPU, so a schedule is judged on the assembled
# kernel: ptxas writes the cubin, nvdisasm its SASS, and this model finds
# the main KV loop and counts what one steady-state iteration issues, per
# warp and per unit of work (16 query rows x 64 keys of both products,
# QK^T and PV). From the counts it bounds the time of a unit by four
# resources of one SM sub-partition (one warp scheduler):
#
#   tensor  HMMA.16816 occupies the sub-partition's tensor pipe for 8
#           cycles on sm_80 (4 on sm_90a, whose SM does twice the work per
#           cycle); HMMA.1688 half of that. A warpgroup's HGMMA.64xNx16
#           (wgmma) is 64 x N x 16 multiply-accumulates on the SM's four
#           tensor pipes, a quarter of them each warp's, at sm_90a's rate
#           (2048 per cycle per SM, 512 per sub-partition)
#   mufu    a warp's MUFU op takes 8 cycles (16 lanes per cycle per SM)
#   issue   one instruction per cycle
#   smem    the bytes that ldmatrix and shared loads read, and that HGMMA
#           reads of its shared-memory operands (B, and A unless A comes
#           from registers), at 128 bytes per cycle per SM, a quarter of it
#           per sub-partition
#
# and predicts the fraction of tensor peak as tensor / max(the four). It is
# an upper bound: latencies, dependencies, bank conflicts and the
# prologue/epilogue are not modelled.
#
# The steady-state iteration: the main loop is the backward branch whose
# body holds the most MMA work and not the kernel's exit (a branch back
# from an out-of-line block past the exit, such as an mbarrier wait's
# retries, spans it); of loops with the same work, the shortest
# (a causal kernel that keeps its diagonal blocks in a loop of their own
# runs that loop once or twice per CTA, the unmasked one for the rest).
# A forward branch inside the body that skips
# a region with no MMA, ldmatrix, shared or global memory access is a
# fix-up taken only by some blocks (the mask of a ragged or diagonal
# block, the rescale of O where a row's maximum moved by more than the
# rescale threshold: scripts/rescale-frequency.py estimates how often);
# its instructions are counted apart (`fixup`), not in the iteration. So is the longer arm of an if/else whose arms both move data:
# flashc's kernels branch so between a full block's copies and a ragged
# last block's checked ones, and the shorter arm is the steady state. A
# region a forward branch skips that issues TMA copies (UTMALDG) is the
# first thread's: the other warps branch over it, so its instructions land
# on one scheduler's warps and count 1 / (warps / 4) per warp (the busiest
# scheduler's share; in full without the CTA's size, `--sass` without
# `--threads`).
#
# A kernel without MMAs (the split-KV combine) is latency-bound: for it the
# model gives, over its loop with the most global loads, the loads an
# iteration issues and the round trips to memory they take (a round trip
# ends at the first instruction that reads a register one of its loads
# writes).
#
#   scripts/kernel_model.py --bundle DIR             # every kernel of a bundle
#   scripts/kernel_model.py --sass F.sass --kernel NAME --target sm_80 \
#       --head-dim 64 [--head-dim-v 64]               # one disassembled kernel
#
# The tables in docs/KERNELS.md come from here (scripts/kernels-table.py).
#
# ===----------------------------------------------------------------------===#

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Per-target figures of one SM.
TARGETS = {
    # cycles per HMMA.16816 of a sub-partition's tensor pipe, registers,
    # shared memory of an SM (bytes), reserved per CTA, most CTAs and warps.
    "sm_80": {"hmma16816": 8, "regs": 65536, "shared": 164 * 1024,
              "reserved": 1024, "ctas": 32, "warps": 64},
    "sm_90a": {"hmma16816": 4, "regs": 65536, "shared": 228 * 1024,
               "reserved": 1024, "ctas": 32, "warps": 64},
}
MUFU_CYCLES = 8
SMEM_BYTES_PER_CYCLE = 128 / 4  # per sub-partition
# Multiply-accumulates of one MMA instruction, by SASS shape.
MMA_MACS = {"16816": 16 * 8 * 16, "1688": 16 * 8 * 8, "884": 8 * 8 * 4}

# The columns of a count, in order.
CATEGORIES = ["hmma", "ldsm", "ldgsts", "mufu", "fp32", "int", "shfl",
              "bar", "mem", "other"]

FP_OPS = {"FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSETP", "FSET", "F2FP",
          "F2F", "FRND", "HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2",
          "FCHK", "DADD", "DMUL", "DFMA"}
INT_OPS = {"IADD3", "IMAD", "LEA", "LOP3", "SHF", "SEL", "ISETP", "IABS",
           "PRMT", "MOV", "S2R", "CS2R", "IMNMX", "FLO", "POPC", "BREV",
           "SGXT", "BMSK", "P2R", "R2P", "PLOP3", "I2F", "F2I", "IDP",
           "ISCADD", "IADD", "SHL", "SHR", "LOP", "XMAD", "VIADD", "VIMNMX"}
MEM_OPS = {"LDS", "STS", "LDG", "STG", "LD", "ST", "LDL", "STL", "ATOM",
           "ATOMS", "RED", "LDC"}

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
# `BRA target`, `BRA P0, target` (a second predicate) or a call to a
# label, which ptxas uses as a loop's exit.
BRANCH = re.compile(r"\b(?:BRA|CALL\.REL\.NOINC)\s+(?:!?U?P[T0-9]+\s*,\s*)?"
                    r"`?\(?(\.L_x_\d+)\)?")
PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


class ModelError(Exception):
    pass


def parse_sass(text):
    """{kernel name: {"instructions": [(address, text)], "labels": {label:
    index of the instruction it marks}}} of an nvdisasm listing."""
    kernels = {}
    current = None
    pending = []
    for line in text.splitlines():
        m = re.match(r"^\.text\.([A-Za-z_$][\w$]*):", line)
        if m:
            current = {"instructions": [], "labels": {}}
            kernels[m.group(1)] = current
            pending = []
            continue
        if current is None:
            continue
        if line.startswith("//----"):
            current = None
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTRUCTION.match(line)
        if m:
            for label in pending:
                current["labels"][label] = len(current["instructions"])
            pending = []
            current["instructions"].append((int(m.group(1), 16), m.group(2)))
    return kernels


def opcode(instruction):
    """The opcode with its modifiers, without a predicate: 'HMMA.16816.F32'."""
    return PREDICATE.sub("", instruction).split()[0]


def category(op):
    base = op.split(".")[0]
    if base in ("HMMA", "HGMMA", "IMMA"):
        return "hmma"
    if base == "LDSM":
        return "ldsm"
    if base == "LDGSTS":
        return "ldgsts"
    if base == "MUFU":
        return "mufu"
    if base == "SHFL":
        return "shfl"
    if base in ("BAR", "BARRIER", "SYNCS", "WARPGROUP", "WARPSYNC"):
        return "bar"
    if base in ("UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF"):
        return "ldgsts"
    if base in FP_OPS:
        return "fp32"
    if base in INT_OPS or base.startswith("U") or base.startswith("ISETP"):
        return "int"
    if base in MEM_OPS:
        return "mem"
    return "other"


HGMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def hgmma_shape(op):
    """(M, N, K) of a warpgroup MMA opcode ('HGMMA.64x128x16.F32'), or None."""
    parts = op.split(".")
    if parts[0] != "HGMMA" or len(parts) < 2:
        return None
    m = HGMMA_SHAPE.match(parts[1])
    if not m:
        raise ModelError(f"unknown warpgroup MMA shape in {op}")
    return tuple(int(g) for g in m.groups())


def mma_macs(op):
    """Multiply-accumulates of one MMA instruction per warp (0 for anything
    else); a warpgroup MMA's are shared by the group's four warps."""
    parts = op.split(".")
    shape = hgmma_shape(op)
    if shape is not None:
        m, n, k = shape
        return m * n * k // 4
    if parts[0] != "HMMA":
        return 0
    for p in parts[1:]:
        if p in MMA_MACS:
            return MMA_MACS[p]
    raise ModelError(f"unknown MMA shape in {op}")


def smem_read_bytes(op, instruction=""):
    """Bytes a warp's shared-memory read of this opcode moves. For a
    warpgroup MMA, a quarter of its shared operands' bytes (16-bit
    elements): B always, A when its operand is a descriptor (`gdesc`)
    rather than registers."""
    parts = op.split(".")
    shape = hgmma_shape(op)
    if shape is not None:
        m, n, k = shape
        operands = PREDICATE.sub("", instruction).split(None, 1)
        operands = operands[1].split(",") if len(operands) > 1 else []
        a_in_smem = len(operands) > 1 and "gdesc" in operands[1]
        return ((m * k if a_in_smem else 0) + n * k) * 2 // 4
    if parts[0] == "LDSM":
        # LDSM.16.M88[.2|.4], LDSM.16.MT88[.2|.4]: 1, 2 or 4 8x8 matrices of
        # 16-bit elements.
        count = 1
        if parts[-1] in ("2", "4"):
            count = int(parts[-1])
        return 128 * count
    if parts[0] == "LDS":
        width = 32
        for p in parts[1:]:
            if p in ("U8", "S8"):
                width = 8
            elif p in ("U16", "S16"):
                width = 16
            elif p in ("64", "128"):
                width = int(p)
        return 32 * width // 8
    return 0


def is_local(op):
    """Is an instruction a local-memory access (a spill store or reload)?"""
    return op.split(".")[0] in ("LDL", "STL")


def is_data_work(op):
    """Does an instruction move data or multiply matrices (never a fix-up)?"""
    base = op.split(".")[0]
    return base in ("HMMA", "HGMMA", "LDSM", "LDGSTS", "LDS", "STS", "LDG",
                    "STG", "BAR", "UTMALDG", "UTMASTG", "UBLKCP", "SYNCS",
                    "WARPGROUP")


def loops(kernel):
    """The (first index, last index) of each loop of a parsed kernel: the
    span of a backward branch, the back edge included. ptxas moves the
    retries of an mbarrier wait to out-of-line blocks past the code, each a
    try that branches to itself and then back to the wait: their backward
    branches make no loop. One is known by its span holding an
    unconditional exit (the code before the block ends in one), or by its
    back edge being an unconditional branch right after a branch to a
    label within the span (the retry's own). A loop may exit the kernel
    from within (`@P0 EXIT`, a producer warp's loop whose end is the
    kernel's)."""
    instructions = kernel["instructions"]
    labels = kernel["labels"]
    for i, (_, text) in enumerate(instructions):
        m = BRANCH.search(text)
        if not m or m.group(1) not in labels:
            continue
        lo = labels[m.group(1)]
        if lo > i:
            continue
        if any(opcode(t).split(".")[0] in ("EXIT", "RET")
               and not PREDICATE.match(t)
               for _, t in instructions[lo:i]):
            continue
        if not PREDICATE.match(text) and i > lo:
            previous = BRANCH.search(instructions[i - 1][1])
            if (previous and previous.group(1) in labels
                    and lo < labels[previous.group(1)] < i):
                continue
        yield lo, i


def main_loop(kernel):
    """The main loop of a parsed kernel: (first index, last index) of the
    body in its instruction list, the back edge included."""
    instructions = kernel["instructions"]
    best = None
    for lo, i in loops(kernel):
        macs = sum(mma_macs(opcode(t)) for _, t in instructions[lo:i + 1])
        key = (macs, -(i - lo))
        if best is None or key > best[0]:
            best = (key, lo, i)
    if best is None or best[0][0] == 0:
        return None
    return best[1], best[2]


def producer_loop(kernel, main):
    """A warp-specialised kernel's producer loop: the loop (other than
    `main`) that issues TMA copies and multiplies nothing, as (first index,
    last index), or None. Its warp shares a scheduler with consumer warps,
    so its instructions take issue slots from theirs."""
    instructions = kernel["instructions"]
    if not any(opcode(t).startswith(("USETMAXREG", "SETMAXNREG"))
               for _, t in instructions):
        return None
    best = None
    for lo, i in loops(kernel):
        if (lo, i) == main:
            continue
        body = [opcode(t) for _, t in instructions[lo:i + 1]]
        if any(mma_macs(op) for op in body):
            continue
        copies = sum(is_tma_issue(op) for op in body)
        if copies and (best is None or (copies, i - lo) > best[0]):
            best = ((copies, i - lo), lo, i)
    return None if best is None else (best[1], best[2])


def is_tma_issue(op):
    """Is an instruction a TMA copy's issue (one thread's, in flashc's
    kernels)?"""
    return op.split(".")[0] in ("UTMALDG", "UTMASTG", "UBLKCP")


def fixup_regions(kernel, lo, hi):
    """(skipped, single): indices of the instructions in [lo, hi] skipped by
    a forward branch over a region that does no data work (or over the
    longer arm of an if/else), and of those in a region a forward branch
    skips that issues TMA copies: the first thread's, which the other warps
    branch over."""
    instructions = kernel["instructions"]
    labels = kernel["labels"]
    skipped = set()
    single = set()
    for i in range(lo, hi + 1):
        text = instructions[i][1]
        m = BRANCH.search(text)
        if not m or m.group(1) not in labels or not PREDICATE.match(text):
            continue
        end = labels[m.group(1)]
        if end <= i or end > hi:
            continue  # a backward branch or a loop exit
        region = range(i + 1, end)
        if not any(is_data_work(opcode(instructions[j][1])) for j in region):
            skipped.update(region)
            continue
        if any(is_tma_issue(opcode(instructions[j][1])) for j in region):
            single.update(region)
            continue
        # An if/else: the skipped arm ends in an unconditional branch over
        # the other arm. The longer arm is the edge case (a ragged block's
        # checked copies beside a full block's unchecked ones) and is
        # counted apart; the shorter one is the steady state.
        last = instructions[end - 1][1]
        m2 = BRANCH.search(last)
        if not m2 or PREDICATE.match(last) or m2.group(1) not in labels:
            continue
        join = labels[m2.group(1)]
        if join <= end or join > hi:
            continue
        then_arm, else_arm = range(i + 1, end), range(end, join)
        skipped.update(then_arm if len(then_arm) > len(else_arm)
                       else else_arm)
    return skipped, single - skipped


def occupancy(target, threads, registers, shared):
    """CTAs per SM from registers, shared memory and the hardware limits."""
    t = TARGETS[target]
    warps = (threads + 31) // 32
    per_warp = ((max(registers, 1) + 7) // 8 * 8 * 32 + 255) // 256 * 256
    warps_by_regs = 4 * ((t["regs"] // 4) // per_warp)
    by_regs = warps_by_regs // warps
    by_warps = t["warps"] // warps
    by_shared = t["shared"] // (shared + t["reserved"])
    return min(by_regs, by_warps, by_shared, t["ctas"])


def model_kernel(kernel, target, head_dim, head_dim_v, threads=None):
    """The model of one parsed kernel; None when it has no MMA loop.

    A region only the first thread runs (its TMA copies' issue) adds its
    instructions to the warps of one of the SM's four schedulers: it counts
    1 / (warps / 4) per warp, the busiest scheduler's share, with the CTA's
    `threads` known; without, in full, as every warp's."""
    loop = main_loop(kernel)
    if loop is None:
        return None
    lo, hi = loop
    instructions = kernel["instructions"]
    skipped, single = fixup_regions(kernel, lo, hi)
    share = 1.0
    if threads:
        share = 1.0 / max(1, ((threads + 31) // 32) // 4)
    counts = dict.fromkeys(CATEGORIES, 0)
    local_path = 0.0  # Spill traffic (LDL / STL) on the counted path.
    macs = 0
    hmma_cycles = 0.0
    smem = 0
    cycles_16816 = TARGETS[target]["hmma16816"]
    for i in range(lo, hi + 1):
        if i in skipped:
            continue
        op = opcode(instructions[i][1])
        weight = share if i in single else 1
        counts[category(op)] += weight
        if is_local(op):
            local_path += weight
        m = mma_macs(op)
        macs += m
        hmma_cycles += cycles_16816 * m / MMA_MACS["16816"]
        smem += smem_read_bytes(op, instructions[i][1])
    units = macs / (16 * 64 * (head_dim + head_dim_v))
    if units <= 0:
        return None
    issued = sum(counts.values())
    per_unit = {k: v / units for k, v in counts.items()}
    per_unit["issued"] = issued / units
    # A producer warp issues its loop's instructions (one iteration a KV
    # block, as the main loop's) on one scheduler, beside that scheduler's
    # share of the consumer warps: the busiest scheduler issues that much
    # more per consumer warp and unit.
    producer = producer_loop(kernel, (lo, hi)) if threads else None
    producer_per_unit = 0.0
    if producer:
        consumer_warps = (threads - 128 + 31) // 32
        producer_per_unit = (producer[1] - producer[0] + 1) / (
            units * max(1, consumer_warps // 4))
    times = {
        "tensor": hmma_cycles / units,
        "mufu": MUFU_CYCLES * counts["mufu"] / units,
        "issue": issued / units + producer_per_unit,
        "smem": smem / units / SMEM_BYTES_PER_CYCLE,
    }
    bound = max(times, key=lambda k: (times[k], k == "tensor"))
    return {
        "loop": [instructions[lo][0], instructions[hi][0]],
        "units_per_iteration": units,
        "fixup": len(skipped),
        "first_thread": len(single),
        "producer": (producer[1] - producer[0] + 1) if producer else 0,
        "producer_per_unit": producer_per_unit,
        "per_unit": per_unit,
        "smem_bytes_per_unit": smem / units,
        "cycles": times,
        "bound": bound,
        "tensor_fraction": times["tensor"] / times[bound],
        # Spill stores and reloads: in the whole kernel, and a unit on the
        # main loop's counted path (those in its fix-ups and edge-case
        # arms, the prologue, the epilogue or another loop cost far less).
        "local": {"kernel": sum(is_local(opcode(t)) for _, t in instructions),
                  "per_unit": local_path / units},
    }


REGISTER = re.compile(r"\bR(\d+)(?:\.64)?\b")


def registers_of(operand):
    """The registers an operand names: R8, or the pair of R8.64."""
    regs = set()
    for m in REGISTER.finditer(operand):
        first = int(m.group(1))
        regs.update(range(first, first + (2 if m.group(0).endswith(".64")
                                          else 1)))
    return regs


def load_round_trips(kernel):
    """Where a kernel without MMAs waits on global memory: over its loop
    with the most global loads (LDG), the loads an iteration issues and the
    round trips to memory they take, a round trip ending where an
    instruction first reads a register that a load of it writes (its loads
    are all issued by then, and all have to land for the iteration to go
    on: later loads are the next round trip). None without such a loop."""
    instructions = kernel["instructions"]
    best = None
    for lo, hi in loops(kernel):
        loads = sum(opcode(t).startswith("LDG") for _, t in
                    instructions[lo:hi + 1])
        if loads and (best is None or loads > best[0]):
            best = (loads, lo, hi)
    if best is None:
        return None
    loads, lo, hi = best
    trips, pending, issued = 0, set(), False
    for _, text in instructions[lo:hi + 1]:
        body = PREDICATE.sub("", text)
        op = body.split()[0]
        operands = [o.strip() for o in body[len(op):].split(",")]
        stores = op.split(".")[0] in ("STG", "ST", "STS", "RED", "ATOM",
                                      "BAR", "BRA")
        sources = set()
        for o in (operands if stores else operands[1:]):
            sources |= registers_of(o)
        if pending & sources:
            pending = set()
            issued = False
        if op.startswith("LDG"):
            if not issued:
                trips += 1
                issued = True
            width = 4 if ".128" in op else 2 if ".64" in op else 1
            first = registers_of(operands[0])
            if first:
                pending.update(range(min(first), min(first) + width))
        elif not stores and operands and operands[0]:
            pending -= registers_of(operands[0])
    return {"loop": [instructions[lo][0], instructions[hi][0]],
            "loads": loads, "round_trips": trips}


def find_nvdisasm(explicit=None):
    """nvdisasm: the given path, $FLASHC_NVDISASM, the pinned PyPI copy
    that scripts/install-deps.sh installs, the toolkit's, or PATH's."""
    candidates = [explicit, os.environ.get("FLASHC_NVDISASM"),
                  "/opt/flashc-cuda/nvdisasm/nvidia/cu13/bin/nvdisasm"]
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                 "/opt/flashc-cuda/toolkit"):
        if home:
            candidates.append(os.path.join(home, "bin", "nvdisasm"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("nvdisasm")


def disassemble(nvdisasm, cubin):
    result = subprocess.run([nvdisasm, "-c", cubin], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise ModelError(f"nvdisasm {cubin}: {result.stderr.strip()}")
    return result.stdout


def registers_used(kernel):
    """The registers a parsed kernel's SASS names: its highest R register's
    number plus one. For a kernel that raises its warps' allotment
    (setmaxnreg), what its code needs, which ptxas's count (the allotment
    at launch) does not show."""
    highest = -1
    for _, text in kernel["instructions"]:
        for number in re.findall(r"\bR(\d+)\b", text):
            highest = max(highest, int(number))
    return highest + 1


def model_variant(directory, variant, nvdisasm, registers=None):
    """{role: model or None} for the kernels of one variant of an assembled
    bundle in `directory` (`variant`: its manifest entry). `registers`, a
    dict, receives each role's registers_used."""
    if "cubin" not in variant:
        raise ModelError(f"{variant['id']}: the bundle has no cubin (it was "
                         "written with --no-assemble)")
    kernels = parse_sass(disassemble(nvdisasm, os.path.join(
        directory, variant["cubin"])))
    models = {}
    for role, k in variant["kernels"].items():
        if k["name"] not in kernels:
            raise ModelError(f"{variant['id']}: no {k['name']} in the cubin")
        if registers is not None:
            registers[role] = registers_used(kernels[k["name"]])
        m = model_kernel(kernels[k["name"]], variant["target"],
                         variant["head_dim"], variant["head_dim_v"],
                         k["block"])
        if m is not None:
            m["ctas_per_sm"] = occupancy(variant["target"], k["block"],
                                         k["registers"], k["shared_bytes"])
        else:
            m = load_round_trips(kernels[k["name"]])
        models[role] = m
    return models


def model_bundle(directory, nvdisasm):
    """[(variant, role, kernel manifest entry, model or None)] for every
    kernel of an assembled bundle."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    rows = []
    for v in manifest["variants"]:
        models = model_variant(directory, v, nvdisasm)
        for role in ("forward", "combine"):
            if role in models:
                rows.append((v, role, v["kernels"][role], models[role]))
    return rows


def format_model(name, m):
    if "round_trips" in m:
        return (f"{name}: loop {m['loop'][0]:#x}-{m['loop'][1]:#x}, "
                f"{m['loads']} global loads an iteration in "
                f"{m['round_trips']} round trip(s) to memory")
    u = m["per_unit"]
    c = m["cycles"]
    lines = [
        f"{name}: main loop {m['loop'][0]:#x}-{m['loop'][1]:#x}, "
        f"{m['units_per_iteration']:g} units per iteration, "
        f"{m['fixup']} fix-up instructions apart"
        + (f", {m['first_thread']} the first thread's (TMA issue)"
           if m.get("first_thread") else "")
        + (f"; a producer warp's loop of {m['producer']} instructions, "
           f"{m['producer_per_unit']:.1f} a unit on its scheduler"
           if m.get("producer") else ""),
        "  per warp per unit (16 query rows x 64 keys): "
        + ", ".join(f"{k} {u[k]:.1f}" for k in CATEGORIES + ["issued"]),
        f"  cycles per unit: tensor {c['tensor']:.0f}, mufu {c['mufu']:.0f}, "
        f"issue {c['issue']:.0f}, smem {c['smem']:.0f} "
        f"({m['smem_bytes_per_unit']:.0f} bytes read); bound: {m['bound']}; "
        f"at most {100 * m['tensor_fraction']:.0f}% of tensor peak; "
        f"issue:tensor {100 * c['issue'] / c['tensor']:.0f}%",
    ]
    local = m.get("local")
    if local and local["kernel"]:
        lines.append(f"  local memory (spills): {local['kernel']} LDL/STL in "
                     f"the kernel, {local['per_unit']:.1f} a unit on the "
                     "main loop's counted path")
    if "ctas_per_sm" in m:
        lines.append(f"  CTAs per SM: {m['ctas_per_sm']}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description="The static performance model of flashc's GPU kernels.")
    parser.add_argument("--bundle", help="an assembled `flashc bundle` "
                        "directory: model every kernel in it")
    parser.add_argument("--sass", help="an nvdisasm listing")
    parser.add_argument("--kernel", help="with --sass: the kernel")
    parser.add_argument("--target", choices=sorted(TARGETS),
                        help="with --sass: the kernel's target")
    parser.add_argument("--head-dim", type=int, help="with --sass: D")
    parser.add_argument("--head-dim-v", type=int,
                        help="with --sass: Dv (default D)")
    parser.add_argument("--threads", type=int,
                        help="with --sass: the CTA's threads (the first "
                        "thread's TMA issue then counts for its scheduler's "
                        "warps only)")
    parser.add_argument("--nvdisasm", help="the nvdisasm to use")
    parser.add_argument("--json", action="store_true",
                        help="print the figures as JSON")
    args = parser.parse_args()
    try:
        if args.sass:
            if args.bundle or not (args.kernel and args.target and
                                   args.head_dim):
                parser.error("--sass takes --kernel, --target and "
                             "--head-dim, and no --bundle")
            with open(args.sass) as f:
                kernels = parse_sass(f.read())
            if args.kernel not in kernels:
                raise ModelError(f"no kernel {args.kernel} in {args.sass} "
                                 f"(it has: {', '.join(sorted(kernels))})")
            m = model_kernel(kernels[args.kernel], args.target, args.head_dim,
                             args.head_dim_v or args.head_dim, args.threads)
            if m is None:
                m = load_round_trips(kernels[args.kernel])
            if m is None:
                raise ModelError(f"{args.kernel} has no loop with MMA "
                                 "instructions or global loads")
            print(json.dumps(m, indent=1, sort_keys=True) if args.json
                  else format_model(args.kernel, m))
            return 0
        if not args.bundle:
            parser.error("give --bundle DIR or --sass FILE")
        nvdisasm = find_nvdisasm(args.nvdisasm)
        if not nvdisasm:
            raise ModelError("no nvdisasm (scripts/install-deps.sh installs "
                             "one from PyPI; or pass --nvdisasm)")
        rows = model_bundle(args.bundle, nvdisasm)
        if args.json:
            print(json.dumps([{"variant": v["id"], "kernel": role, "model": m}
                              for v, role, _, m in rows], indent=1,
                             sort_keys=True))
        else:
            for v, role, _, m in rows:
                if m is not None:
                    print(format_model(f"{v['id']} {role}", m))
        return 0
    except (ModelError, OSError, ValueError) as e:
        print(f"kernel_model: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
