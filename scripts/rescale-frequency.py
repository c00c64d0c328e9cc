#!/usr/bin/env python3
# ===- scripts/rescale-frequency.py - How often O is rescaled ------------===#
#
# The GPU kernels rescale a row's O (flash_tile.rescale) only in the blocks
# where a running maximum the thread holds moves: where the block's maximum
# is more than 2^t above the one P and O are kept against (the
# `rescale-threshold` t, 8 by default; 0 moves it whenever it grows). A
# warp runs the branch when any of its threads needs it. The static model
# (scripts/kernel_model.py) counts the branch apart, as fix-up; this
# script estimates, for scores of random N(0, 1) Q and K scaled by
# 1/sqrt(D), the fraction of a warp's KV blocks after its first that take
# it. It runs the same recurrence as the kernels (in float64, on the CPU).
#
#   PYTHONPATH=/opt/torch-cpu python3 scripts/rescale-frequency.py
#
# ===----------------------------------------------------------------------===#
import math
import torch


def fraction(d, rows, bc, n, threshold, trials, gen):
    taken = total = 0
    for _ in range(trials):
        q = torch.randn(rows, d, generator=gen, dtype=torch.float64)
        k = torch.randn(n, d, generator=gen, dtype=torch.float64)
        s = q @ k.T / math.sqrt(d) * math.log2(math.e)
        m = torch.full((rows,), -math.inf, dtype=torch.float64)
        for j in range(0, n, bc):
            block = s[:, j:j + bc].amax(dim=1)
            moves = block > m + threshold
            if j > 0:
                total += 1
                taken += bool(moves.any())
            m = torch.where(moves, block, m)
    return taken / total


def main():
    gen = torch.Generator().manual_seed(0)
    print("| D | rows per warp | keys per block | N | threshold 0 | threshold 8 |")
    print("|---|---|---|---|---|---|")
    # The shipped prefill tiles: D = 64 (32 rows a warp, 64 keys), 128
    # (16 rows, 64 keys), 256 (16 rows, 16 keys).
    for d, rows, bc in [(64, 32, 64), (128, 16, 64), (256, 16, 16)]:
        for n in [1024, 4096, 16384]:
            trials = max(1, 16384 // n)
            f0 = fraction(d, rows, bc, n, 0, trials, gen)
            f8 = fraction(d, rows, bc, n, 8, trials, gen)
            print(f"| {d} | {rows} | {bc} | {n} | {f0:.3f} | {f8:.4f} |")


if __name__ == "__main__":
    main()
