"""A decode loop over a growing KV cache: one kernel serves every length,
so only the first step compiles. Prints the compiler cache's size and the
time of each step.

    python3 decode_loop.py [--steps N] [--start NK] [--dtype f32|f16]
"""

import argparse
import time

import numpy as np

import flashc


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--start", type=int, default=1024)
    parser.add_argument("--dtype", default="f16", choices=["f32", "f16"])
    args = parser.parse_args()
    dtype = np.float16 if args.dtype == "f16" else np.float32

    rng = np.random.default_rng(0)
    total = args.start + args.steps
    # The cache holds every step's keys; step i reads the first start + i.
    k_cache = rng.standard_normal((1, 2, total, 128)).astype(dtype)
    v_cache = rng.standard_normal((1, 2, total, 128)).astype(dtype)
    before = flashc.cache_size()
    times = []
    for step in range(args.steps):
        nk = args.start + step
        q = rng.standard_normal((1, 8, 1, 128)).astype(dtype)
        t0 = time.perf_counter()
        flashc.attention(q, k_cache[:, :, :nk], v_cache[:, :, :nk])
        times.append(time.perf_counter() - t0)
    compiled = flashc.cache_size() - before
    print(f"decode loop: {args.steps} steps, Nk from {args.start} to "
          f"{args.start + args.steps - 1}, 8 query heads over 2 KV heads, "
          f"d = 128, {args.dtype}")
    print(f"kernels compiled: {compiled}")
    print(f"first step {times[0] * 1e3:.1f} ms (compiles), later steps "
          f"{np.median(times[1:]) * 1e3:.3f} ms (median)")


if __name__ == "__main__":
    main()
