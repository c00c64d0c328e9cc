#!/usr/bin/env python3
# ===- scripts/sim_sweep.py - Random GPU problems in the simulator --------===#
#
# Draws attention problems and schedule options at random and runs each
# through `flashc run --simulate --check-rows 0`: the GPU kernel (sm_80 or
# sm_90a) compiled, executed by the PTX simulator, every output row checked
# against the float64 reference. Where the unit tests pin the shipped
# variants and a few chosen ones, the sweep covers their combinations:
# GQA groups of any size (the tiles' padding rows), head dims that are
# padded or copied element by element, Dv != D, causal with Nq < Nk and
# Nq > Nk, the log-sum-exp, decode with splits, less aligned tensors, the
# pipeline's stages and the sm_90a schedule switches.
#
#   sim_sweep.py --flashc build/bin/flashc [--seconds S | --runs N]
#                [--seed N] [--targets sm_80,sm_90a] [--quiet]
#
# Every problem is expected to compile and pass: a run that exits non-zero
# (a refusal, a crash, a check outside its tolerance, a simulator fault) is
# a failure, and so is one whose kernels met a shared-memory bank conflict
# (the simulator's counters, which `flashc run` prints): in an ldmatrix
# read (every placement of a kernel's buffers puts the 8 rows a read takes
# in 8 bank groups), or, where rows are whole 128-byte lines, in an
# ld/st.shared or cp.async request (which then take no more wavefronts
# than their words need). Each is printed with the command that repeats
# it. Exit status 1 when any run failed.
#
# ===----------------------------------------------------------------------===#

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time


def draw(rng, targets, lse_path):
    """One problem's `flashc run` arguments."""
    group = rng.choice([1, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 33, 48, 64,
                        80, 128])
    kv_heads = rng.randint(1, 2)
    head_dim = rng.choice([8, 16, 32, 48, 59, 64, 64, 72, 80, 96, 112, 128,
                           128, 160, 192, 256])
    head_dim_v = rng.choice([head_dim, head_dim, head_dim, 32, 61, 64, 128,
                             256])
    target = rng.choice(targets)
    decode = rng.random() < 0.35
    batch = rng.randint(1, 3)
    seq_q = rng.randint(1, 16) if decode else rng.randint(1, 300)
    seq_kv = rng.randint(1, 400)
    # At most about 2^29 multiply-adds, so that a problem takes seconds in
    # the simulator on a busy machine: fewer queries where they are more.
    while (batch * group * kv_heads * seq_q * seq_kv * (head_dim + head_dim_v)
           > 1 << 29 and seq_q > 1):
        seq_q = max(1, seq_q // 2)
    args = ["--target", target, "--dtype", rng.choice(["f16", "bf16"]),
            "--batch", str(batch),
            "--heads", str(group * kv_heads), "--kv-heads", str(kv_heads),
            "--seq-q", str(seq_q), "--seq-kv", str(seq_kv),
            "--head-dim", str(head_dim), "--head-dim-v", str(head_dim_v)]
    if rng.random() < 0.5:
        args.append("--causal")
    if rng.random() < 0.3:
        args += ["--lse", lse_path]
    if rng.random() < 0.25:
        args += ["--alignment", rng.choice(["8", "4", "2"])]
    stages = 2
    if rng.random() < 0.25:
        stages = rng.choice([2, 3, 4])
        args += ["--stages", str(stages)]
    if rng.random() < 0.15:
        args += ["--sram-bytes",
                 str(draw_budget(rng, target, head_dim, head_dim_v, stages))]
    if rng.random() < 0.2:
        args += ["--splits", rng.choice(["1", "2", "3", "7"])]
    if rng.random() < 0.2:
        args += ["--causal-order",
                 rng.choice(["lightest", "heaviest", "heaviest-per-head"])]
    if target == "sm_90a":
        for option, chance, value in (("--overlap-softmax", 0.25, "on"),
                                      ("--pingpong", 0.2, "off"),
                                      ("--warp-specialize", 0.15, "off"),
                                      ("--tma", 0.15, "off"),
                                      ("--warpgroup-mma", 0.1, "off")):
            if rng.random() < chance:
                args += [option, value]
    return args + ["--simulate", "--check-rows", "0",
                   "--seed", str(rng.randrange(1 << 31))]


# The shared memory a CTA may use: sm_80's and sm_90a's opt-in limits.
CHIP_SHARED_BYTES = {"sm_80": 166912, "sm_90a": 232448}


def draw_budget(rng, target, head_dim, head_dim_v, stages):
    """A shared-memory budget (--sram-bytes) between the chip's and one
    that the smallest block of 16 keys fits at most, whatever the tile's
    rows: Q's (128 rows at most, a row padded by a chunk), `stages` K and V
    stages of 16 keys, or the kv warps' f32 merge (64 rows of Dv + 2 at
    most), and the warpgroup kernels' alignment and mbarriers. The
    schedule must then find a block that fits, and flash-tile-allocate-
    shared must agree: a refusal is a failure of the sweep."""
    def row(d):
        return (-(-d // 16) * 16 + 8) * 2
    widest = max(row(head_dim), row(head_dim_v))
    q = 128 * widest
    kv = stages * 16 * (row(head_dim) + row(head_dim_v))
    merge = 64 * (-(-head_dim_v // 16) * 16 + 2) * 4
    least = q + max(kv, merge) + 1024 + 8 * (4 * stages + 1)
    chip = CHIP_SHARED_BYTES[target]
    return rng.randint(min(least, chip), chip) // 8 * 8


def whole_lines(command):
    """Whether a run's shared-memory rows are whole 128-byte lines (head
    dims of 64, 128 or 256, 16-byte aligned tensors): the placement
    swizzles them, and every ld/st.shared and cp.async request is free of
    bank conflicts. Other rows are padded by a chunk, which keeps ldmatrix
    free of them but not every copy that writes the rows, except in a
    kernel that multiplies by warpgroups (its simulator counters show
    wgmma), whose rows lie in a 128-, 64- or 32-byte swizzle's panels."""
    value = {command[i]: command[i + 1] for i in range(len(command) - 1)
             if command[i].startswith("--")}
    dims = (value["--head-dim"], value.get("--head-dim-v", value["--head-dim"]))
    return all(d in ("64", "128", "256") for d in dims) and \
        "--alignment" not in value


def main():
    parser = argparse.ArgumentParser(
        description="Random attention problems and schedule options through "
        "`flashc run --simulate`, each checked against float64.")
    parser.add_argument("--flashc", required=True)
    parser.add_argument("--seconds", type=float, default=60,
                        help="stop starting problems after this long")
    parser.add_argument("--runs", type=int, default=0,
                        help="stop after this many problems (0: --seconds)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--targets", default="sm_80,sm_90a")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds one run may take")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    rng = random.Random(seed)
    targets = args.targets.split(",")
    print(f"sim_sweep: seed {seed}", flush=True)
    runs = failures = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        lse = os.path.join(tmp, "lse.npy")
        while (runs < args.runs if args.runs else
               time.monotonic() - start < args.seconds):
            command = [args.flashc, "run"] + draw(rng, targets, lse)
            runs += 1
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=args.timeout, check=False)
                rc, text = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired:
                rc, text = "timeout", f"ran past {args.timeout} s"
            counters = [re.search(r"ldmatrix \d+ matrices, (\d+) extra "
                                  r"shared-memory wavefronts", text),
                        re.search(r"ld/st\.shared and cp\.async \d+ warp "
                                  r"requests, (\d+) extra wavefronts", text)]
            wgmma = re.search(r"(\d+) wgmma", text)
            # Where the kernel multiplies by warpgroups (sm_90a), Q, K and
            # V lie in a swizzle's panels, whatever the head dim.
            swizzled = whole_lines(command) or bool(
                wgmma and int(wgmma.group(1)))
            if rc == 0 and not all(counters):
                rc, text = "no counters", "`flashc run` printed no " \
                    "simulator counters"
            elif rc == 0 and any(int(c.group(1)) for c in
                                 counters[:2 if swizzled else 1]):
                rc = "bank conflicts"
                text = "\n".join(c.group(0) for c in counters
                                  if int(c.group(1)))
            if rc == 0:
                if not args.quiet:
                    print(f"ok: {' '.join(command[2:])}", flush=True)
                continue
            failures += 1
            last = [line for line in text.splitlines() if line.strip()][-3:]
            print(f"FAIL ({rc}): {' '.join(command)}", flush=True)
            for line in last:
                print(f"  {line}", flush=True)
    print(f"sim_sweep: {runs} problems, {failures} failed "
          f"({time.monotonic() - start:.0f} s, seed {seed})", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
