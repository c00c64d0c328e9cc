"""Runs the PTX of Inputs/attention-block.mlir in flashc-ptxsim on fresh
random inputs and compares O with a float64 reference.

usage: run_attention.py FLASHC_PTXSIM KERNEL.ptx WORKDIR [STAGES]

STAGES (default 2) is the stages of the kernel's K and V buffers, which
size its shared memory.

Q, K and V are N(0, 1) rounded to f16. P goes to the P V
multiply in f16, so each term of O = sum_j p_j v_j carries a relative error
of at most 2^-11; the tolerance is 2^-11 max|V| plus 1e-5 for the f32
sums. Prints the seed, and `attention ok` when every element is within it.
"""
import os
import subprocess
import sys

import numpy as np

N, D = 200, 64


def main():
    ptxsim, ptx, work = sys.argv[1:4]
    stages = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    inputs = {}
    for name in "qkv":
        inputs[name] = rng.standard_normal((N, D)).astype(np.float16)
        np.save(os.path.join(work, name + ".npy"), inputs[name])
    out = os.path.join(work, "o.npy")
    # 4 CTAs of 64 rows; shared memory: the Q tile and the stages of K and
    # V.
    shared = (1 + 2 * stages) * 64 * 64 * 2
    subprocess.run([ptxsim, ptx, "--kernel", "attention", "--grid", "4",
                    "--block", "128", "--dynamic-shared", str(shared),
                    "--param", "buf:" + os.path.join(work, "q.npy"),
                    "--param", "buf:" + os.path.join(work, "k.npy"),
                    "--param", "buf:" + os.path.join(work, "v.npy"),
                    "--param", f"buf:zeros:f32:{N}x{D}",
                    "--out", "3=" + out], check=True)
    q, k, v = (inputs[n].astype(np.float64) for n in "qkv")
    s = q @ k.T / 8
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = (p / p.sum(axis=1, keepdims=True)) @ v
    o = np.load(out).astype(np.float64)
    tolerance = 2.0 ** -11 * np.abs(v).max() + 1e-5
    err = np.abs(o - ref)
    worst = np.unravel_index(np.argmax(err), err.shape)
    print(f"max error {err.max():.3g} at {worst}, tolerance {tolerance:.3g}")
    if not np.isfinite(o).all() or err.max() > tolerance:
        sys.exit(f"attention differs from the reference (seed {seed})")
    print("attention ok")


if __name__ == "__main__":
    main()
