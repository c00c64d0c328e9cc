#!/usr/bin/env python3
# ===- scripts/python_host_time.py - The Python module's time per call ----===#
#
# The host time the Python package spends on one Bundle.attention call
# before the launch: argument checks, tensor descriptions, the variant's
# lookup. The native launch is replaced by a no-op, so no GPU (and no
# simulator run) is involved; the inputs are numpy arrays or, with
# --torch, CPU torch tensors (described from their attributes, as CUDA
# tensors are). A decode-shaped call (one query, 1024 keys) on the
# bundle's first decode variant's group and head dim.
#
#   python_host_time.py --bundle DIR [--torch] [--calls N]
#
# Prints the median over 5 runs of N calls, in microseconds per call.
#
# ===----------------------------------------------------------------------===#

import argparse
import os
import sys

import numpy as np

import flashc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position


class _NoLaunch:
    """The native bundle with its launch replaced by a no-op."""

    def __init__(self, native):
        self._real = native

    def find(self, *query):
        return self._real.find(*query)

    def launch(self, index, *args):
        """Runs nothing; says that the variant asked for ran (no
        fallback), as the native launch does."""
        return index

    @property
    def variants(self):
        return self._real.variants


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    bundle = flashc.load_bundle(args.bundle)
    decode = [v for v in bundle.variants if v["decode"] and not v["causal"]
              and not v["with_lse"] and v["dtype"] == "f16"]
    if not decode:
        sys.exit("python_host_time: the bundle has no f16 decode variant "
                 "without LSE")
    group, d = decode[0]["group"], decode[0]["head_dim"]
    chip = decode[0]["target"]
    bundle._native = _NoLaunch(bundle._native)  # pylint: disable=protected-access
    rng = np.random.default_rng()
    arrays = [rng.standard_normal(s).astype(np.float16)
              for s in ((1, 2 * group, 1, d), (1, 2, 1024, d),
                        (1, 2, 1024, d))]
    if args.torch:
        import torch  # pylint: disable=import-outside-toplevel
        arrays = [torch.from_numpy(a) for a in arrays]
    q, k, v = arrays
    out = q * 0

    def call():
        bundle.attention(q, k, v, simulate=True, chip=chip, out=out)
    us = gpu_check.host_us_per_call(call, args.calls, warmup=200)
    print(f"{'torch' if args.torch else 'numpy'} inputs: "
          f"{us:.1f} us per call (median of 5 x "
          f"{args.calls} calls, launch stubbed out)")


if __name__ == "__main__":
    main()
