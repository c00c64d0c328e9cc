#!/usr/bin/env python3
# ===- scripts/gpu_compare.py - several bundles on the same prefill calls -===#
#
# Times the prefill kernels of several bundles of the same configurations
# (compiled with different options, e.g. `--causal-order`) on a CUDA
# device, through the C API of libflashc_runtime.so on PyTorch tensors.
# The bundles take turns on each configuration, for several rounds, each
# round starting with the next bundle, so that drift in clocks or
# temperature and the place in a round fall on all of them alike (a
# bundle named twice measures that noise); each figure is the median of
# its rounds, each round the median of gpu_check.time_cuda's samples.
# Every bundle's output is checked against the first bundle's on each
# configuration (the kernels compute the same thing).
#
#   gpu_compare.py --lib LIB --bundles DIR,DIR[,...] [--causal-only]
#                  [--json FILE]
#   gpu_compare.py --lib LIB --bundles DIR,DIR[,...] --dry-run
#
# --dry-run needs no GPU: it runs one small call of each bundle in the PTX
# simulator, compares the outputs, and prints the plan.
#
# ===----------------------------------------------------------------------===#

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position

ROUNDS = 5


def configs(causal_only):
    """The benchmark's MHA prefill shapes (the bundles compared hold MHA
    kernels; gpu_check's GQA rows are its own)."""
    return [c for c in gpu_check.prefill_configs()
            if len(c) == 5 and (c[2] or not causal_only)]


def dry_run(lib, bundles, causal_only):
    import numpy as np
    rng = np.random.default_rng()
    b, h, n, d = 1, 2, 100, 64
    q, k, v = (rng.standard_normal((b, h, n, d)).astype(np.float16)
               for _ in range(3))
    outs = []
    for path in bundles:
        fc = gpu_check.Flashc(lib, path)
        out = np.full_like(q, np.nan)

        def view(a):
            return gpu_check.describe(a.ctypes.data, gpu_check.FLASHC_F16,
                                      a.shape,
                                      [s // a.itemsize for s in a.strides])
        fc.attention(gpu_check.DEVICE_SIMULATOR, view(q), view(k), view(v),
                     view(out), None, True)
        outs.append(out.astype(np.float64))
    ref, _ = gpu_check.reference(np, *(x.astype(np.float64) for x in (q, k, v)),
                                 True)
    failures = 0
    for path, out in zip(bundles, outs):
        err = float(np.abs(out - ref).max()) if np.isfinite(out).all() \
            else float("inf")
        ok = err <= 4e-3
        failures += not ok
        print(f"  {path}: causal B={b} H={h} N={n} D={d} max|err| vs f64 "
              f"{err:.2e} {'PASS' if ok else 'FAIL'}")
    print(f"plan: {ROUNDS} rounds of each bundle in turn on")
    for c in configs(causal_only):
        print("  prefill (d, heads, causal, batch, n) =", c)
    return failures


def compare(lib, bundles, causal_only, json_path):
    import torch
    fcs = [gpu_check.Flashc(lib, path) for path in bundles]
    stream = torch.cuda.current_stream().cuda_stream
    report = {"device": torch.cuda.get_device_name(), "bundles": bundles,
              "prefill": []}
    failures = 0
    names = [os.path.basename(os.path.normpath(p)) for p in bundles]
    print("prefill (bf16, TFLOP/s; median of "
          f"{ROUNDS} rounds, the bundles in turn):")
    print(f"  {'D':>4} {'H':>3} {'causal':>6} {'B':>3} {'N':>6} " +
          " ".join(f"{n[-22:]:>22}" for n in names))
    for (d, h, causal, b, n) in configs(causal_only):
        q, k, v = (torch.randn(b, h, n, d, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        outs = [torch.full_like(q, float("nan")) for _ in fcs]
        views = [[gpu_check.gpu_view(t, gpu_check.FLASHC_BF16)
                  for t in (q, k, v, out)] for out in outs]

        def call(i):
            fcs[i].attention(gpu_check.DEVICE_CUDA, *views[i], None, causal,
                             stream)
        times = [[] for _ in fcs]
        for r in range(ROUNDS):
            # Round r starts with bundle r (mod n): each bundle takes each
            # place in the rounds alike, so that a place's own effect (the
            # first after the previous configuration's last) falls on all.
            for j in range(len(fcs)):
                i = (r + j) % len(fcs)
                times[i].append(gpu_check.time_cuda(torch, lambda: call(i), 10))
        gpu_check.synchronize(torch)
        # Same inputs, same arithmetic up to the order of the blocks: the
        # outputs agree to a few units of bf16 rounding.
        diffs = [(o.float() - outs[0].float()).abs().max().item()
                 for o in outs[1:]]
        ok = all(dd <= 2e-2 for dd in diffs) and \
            all(bool(torch.isfinite(o).all()) for o in outs)
        failures += not ok
        flops = 4 * b * h * n * n * d / (2 if causal else 1)
        tf = [flops / statistics.median(t) * 1e-12 for t in times]
        report["prefill"].append(dict(D=d, H=h, causal=causal, B=b, N=n,
                                      tflops=tf, max_diff=diffs, ok=ok))
        print(f"  {d:>4} {h:>3} {int(causal):>6} {b:>3} {n:>6} " +
              " ".join(f"{x:22.1f}" for x in tf) +
              ("" if ok else f"  outputs differ: {diffs}"))
        # Dropped before the next configuration allocates (the closure
        # above reads them only within this iteration).
        q = k = v = outs = views = None
        torch.cuda.empty_cache()
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--bundles", required=True,
                        help="comma-separated bundle folders")
    parser.add_argument("--causal-only", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    bundles = args.bundles.split(",")
    if args.dry_run:
        failures = dry_run(args.lib, bundles, args.causal_only)
    else:
        failures = compare(args.lib, bundles, args.causal_only, args.json)
    print("gpu_compare: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
