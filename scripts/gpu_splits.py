#!/usr/bin/env python3
# ===- scripts/gpu_splits.py - decode speed against the split count ------===#
#
# Times a bundle's decode kernel (bf16, GQA 32/8, D = 128, one query) on a
# CUDA device at every split count from 1 up, and at the count the runtime
# chooses (its CTA x wave model), through the Python runtime module
# (flashc.load_bundle) on PyTorch tensors. Reports GB/s (K, V, Q and the
# output once) against a measured device-to-device copy, so that the wave
# model's choice can be checked against the best count measured. First, the
# host's time per call of the runtime module and of torch's SDPA. At batch
# 1, where the module's host time exceeds the kernels' below about 100 us
# a call, each count is also timed by torch.profiler (the kernels' device
# time a call, forward and combine, launched without programmatic
# dependent launches): the split count's own effect. At the runtime's
# count, each shape is also captured in a CUDA graph (torch.cuda.graph:
# 20 calls, replayed) as a decode loop in a serving framework runs it:
# whether the runtime's launches can be captured (stream-ordered
# workspace, programmatic launches), the replay's numerics against SDPA,
# and its GB/s without the host's time a call.
#
#   gpu_splits.py --bundle DIR [--json FILE]
#   gpu_splits.py --bundle DIR --dry-run
#
# --dry-run needs no GPU: it runs every split count of a small call in the
# PTX simulator against a float64 reference, and prints the plan.
#
# ===----------------------------------------------------------------------===#

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import flashc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position

CONFIGS = [(1, 1024), (1, 8192), (1, 32768), (1, 131072), (8, 8192),
           (8, 32768), (64, 1024), (64, 8192), (64, 32768)]
SPLITS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128]


def split_counts(nk, block_kv):
    """The counts to time: each leaves every split a KV block."""
    return [s for s in SPLITS if s <= math.ceil(nk / block_kv)]


def decode_variant(bundle, dtype):
    for v in bundle.variants:
        if (v["decode"] and v["dtype"] == dtype and v["group"] == 4 and
                v["head_dim"] == 128 and not v["causal"] and not v["with_lse"]):
            return v
    sys.exit(f"gpu_splits: the bundle has no {dtype} GQA-4 D = 128 decode "
             "kernel")


def dry_run(bundle):
    variant = decode_variant(bundle, "f16")
    rng = np.random.default_rng()
    b, hq, hkv, nk, d = 1, 8, 2, 300, 128
    q = rng.standard_normal((b, hq, 1, d)).astype(np.float16)
    k = rng.standard_normal((b, hkv, nk, d)).astype(np.float16)
    v = rng.standard_normal((b, hkv, nk, d)).astype(np.float16)
    qd, kd, vd = (x.astype(np.float64) for x in (q, k, v))
    kd = np.repeat(kd, hq // hkv, axis=1)
    vd = np.repeat(vd, hq // hkv, axis=1)
    s = qd @ kd.transpose(0, 1, 3, 2) / math.sqrt(d)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ vd
    failures = 0
    for splits in [0] + split_counts(nk, variant["block_kv"]):
        out = bundle.attention(q, k, v, simulate=True, chip=variant["target"],
                               splits=splits)
        err = float(np.abs(out.astype(np.float64) - ref).max())
        ok = err <= 4e-3
        failures += not ok
        print(f"  splits {splits or 'auto':>4}: max|err| {err:.2e} "
              f"{'PASS' if ok else 'FAIL'}")
    print("plan (B, Nk): split counts")
    for b, nk in CONFIGS:
        print(f"  ({b}, {nk}): auto, {split_counts(nk, variant['block_kv'])}")
    return failures


def graph_seconds(torch, fn, reset, check, calls=20, iters=20):
    """Seconds per call of ``calls`` calls of ``fn`` captured in one CUDA
    graph and replayed back to back (scripts/gpu_check.py's timer), after
    one replay that follows ``reset()`` (which clears the outputs) passed
    ``check()`` (which raises on wrong results). Raises what the capture
    or the replay raises."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # Warm-up off the default stream.
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    gpu_check.synchronize(torch)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    reset()
    graph.replay()
    gpu_check.synchronize(torch)
    check()
    return gpu_check.time_cuda(torch, graph.replay, iters) / calls


def sweep(bundle, json_path):
    import torch
    variant = decode_variant(bundle, "bf16")
    dev = torch.device("cuda")

    def timer(fn, iters=20):
        """Seconds per call, back to back (scripts/gpu_check.py's)."""
        return gpu_check.time_cuda(torch, fn, iters)

    copy_gbs = gpu_check.copy_bandwidth(torch, dev, 1 << 29, timer, 20)
    # The host's cost of a call, apart from the kernels: a small decode
    # call issued back to back without waiting for the device.
    q = torch.randn(1, 32, 1, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 8, 1024, 128, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    calls = {
        "flashc (runtime module)":
            lambda: bundle.attention(q, k, v, out=out),
        "torch SDPA": lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=True)}
    print("host time per call (B=1, Nk=1024, issued back to back):")
    for name, fn in calls.items():
        for _ in range(20):
            fn()
        gpu_check.synchronize(torch)
        start = time.perf_counter()
        for _ in range(300):
            fn()
        host_us = (time.perf_counter() - start) / 300 * 1e6
        gpu_check.synchronize(torch)
        print(f"  {name:24s} {host_us:8.1f} us")
    q = k = v = out = None

    print(f"decode (bf16, GQA 32/8, D = 128, one query; {variant['id']}; "
          f"device-to-device copy {copy_gbs:.0f} GB/s): GB/s per split count")
    report = {"copy_gbs": copy_gbs, "variant": variant["id"], "rows": []}
    failures = 0
    for b, nk in CONFIGS:
        q = torch.randn(b, 32, 1, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, 8, nk, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, 8, nk, 128, device=dev, dtype=torch.bfloat16)
        out = torch.empty_like(q)
        nbytes = (k.numel() + v.numel() + 2 * q.numel()) * 2
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=True).float()
        row = {"B": b, "Nk": nk, "gbs": {}}
        if b == 1:
            row["kernel_gbs"] = {}
        for splits in [0] + split_counts(nk, variant["block_kv"]):
            bundle.attention(q, k, v, splits=splits, out=out)
            gpu_check.synchronize(torch)
            err = (out.float() - ref).abs().max().item()
            if not err <= 3e-2:
                sys.exit(f"gpu_splits: B={b} Nk={nk} splits={splits}: "
                         f"max|err| {err:.2e} against SDPA (bf16)")
            t = timer(lambda: bundle.attention(q, k, v, splits=splits,
                                               out=out))
            row["gbs"][splits or "auto"] = nbytes / t * 1e-9
            if row.get("kernel_gbs") is not None:
                _, kernels = gpu_check.profile_calls(
                    torch, lambda: bundle.attention(q, k, v, splits=splits,
                                                    out=out))
                busy = sum(us for us in kernels.values()
                           if isinstance(us, float))
                if busy > 0:
                    row["kernel_gbs"][splits or "auto"] = (
                        nbytes / (busy * 1e-6) * 1e-9)
                else:
                    row["kernel_gbs"] = None
                    print(f"  B={b} Nk={nk}: no kernel times from "
                          f"torch.profiler: {kernels}")
        def check_graph():
            err = (out.float() - ref).abs().max().item()
            if not err <= 3e-2:
                raise RuntimeError(f"max|err| {err:.2e} against SDPA after "
                                   "a replay")
        try:
            t = graph_seconds(torch, lambda: bundle.attention(q, k, v,
                                                              out=out),
                              out.zero_, check_graph)
            row["graph_gbs"] = nbytes / t * 1e-9
        except Exception as e:  # pylint: disable=broad-except
            row["graph_error"] = f"{type(e).__name__}: {e}"
        best = max((s for s in row["gbs"] if s != "auto"),
                   key=lambda s: row["gbs"][s])
        row["best"] = best
        report["rows"].append(row)
        cells = "  ".join(f"{s}:{g:.0f}" for s, g in row["gbs"].items())
        print(f"  B={b:<3} Nk={nk:<7} auto {row['gbs']['auto']:6.0f} "
              f"({100 * row['gbs']['auto'] / copy_gbs:.0f}% copy), best "
              f"{best} splits {row['gbs'][best]:6.0f} | {cells}")
        if "graph_gbs" in row:
            print(f"    CUDA graph of 20 calls, replayed: auto "
                  f"{row['graph_gbs']:6.0f} "
                  f"({100 * row['graph_gbs'] / copy_gbs:.0f}% copy)")
        else:
            print(f"    CUDA graph: FAILED: {row['graph_error']}")
            failures += 1
        kernel_gbs = row.get("kernel_gbs")
        if kernel_gbs and "auto" in kernel_gbs:
            fixed = [s for s in kernel_gbs if s != "auto"]
            kbest = max(fixed, key=lambda s: kernel_gbs[s]) if fixed else None
            cells = "  ".join(f"{s}:{g:.0f}" for s, g in kernel_gbs.items())
            print(f"    kernels alone (torch.profiler) auto "
                  f"{kernel_gbs['auto']:6.0f} "
                  f"({100 * kernel_gbs['auto'] / copy_gbs:.0f}% copy)" +
                  (f", best {kbest} splits {kernel_gbs[kbest]:6.0f}"
                   if kbest is not None else "") + f" | {cells}")
        # Dropped before the next configuration allocates (the closures
        # above read them only within this iteration).
        q = k = v = out = ref = None
        torch.cuda.empty_cache()
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    bundle = flashc.load_bundle(args.bundle)
    if args.dry_run:
        failures = dry_run(bundle)
        print(f"gpu_splits: {'PASS' if not failures else 'FAIL'}")
        return 1 if failures else 0
    failures = sweep(bundle, args.json)
    print(f"gpu_splits: {'PASS' if not failures else 'FAIL'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
