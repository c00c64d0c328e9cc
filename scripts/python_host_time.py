#!/usr/bin/env python3
# ===- scripts/python_host_time.py - The Python module's time per call ----===#
#
# The host time the Python package spends on one call before the launch:
# argument checks, tensor descriptions, the variant's or kernel's lookup.
# The native launch is replaced by a no-op, so no GPU, simulator or CPU
# kernel runs; the inputs are numpy arrays or, with --torch, CPU torch
# tensors (described from their attributes, as CUDA tensors are). A
# decode-shaped call (one query, 1024 keys) through one entry point:
#
#   bundle     Bundle.attention, on the bundle's first f16 decode
#              variant's group and head dim (the default);
#   attention  flashc.attention on the CPU (f16 inputs, group 2, d = 64;
#              the kernel is compiled once, before the timing);
#   kernel     a compiled Kernel called directly (the same spec);
#   native     the runtime module's launch alone (Bundle.attention's
#              native call, with the descriptions the Python layer
#              builds), on the bundle's first f16 decode variant for the
#              device's chip, on the stand-in CUDA driver with its
#              launches skipped: run with
#              LD_LIBRARY_PATH=build/unittests/Runtime/fake-cuda
#              FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1 (the runtime's work and
#              the binding's, not the Python layer's).
#
#   python_host_time.py [--bundle DIR] [--entry E] [--torch] [--calls N]
#                       [--no-out] [--growing]
#
# Prints the median over 5 runs of N calls, in microseconds per call.
# With --no-out the call allocates its output (as the drop-in forms do);
# with --growing each call reads one key more of a KV cache than the one
# before (slices of one buffer, 1024 to 1535 keys, round and round), as a
# decode loop does.
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


def _stub_kernels():
    """Makes every compiled kernel's launch a no-op."""
    def runner(self, splits):  # pylint: disable=unused-argument
        return lambda *args: None
    flashc.Kernel._runner = runner  # pylint: disable=protected-access


def native_launch(args):
    """The time of the runtime module's launch of a decode call on device
    memory from the stand-in driver (which must be the libcuda.so.1 that
    LD_LIBRARY_PATH finds, with FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1)."""
    if os.environ.get("FLASHC_FAKE_CUDA_SKIP_LAUNCHES") != "1":
        sys.exit("python_host_time: --entry native times the stand-in "
                 "driver with FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1")
    bundle = flashc.load_bundle(args.bundle)
    chip = flashc._runtime.cuda_chip()  # pylint: disable=protected-access
    decode = [(i, v) for i, v in enumerate(bundle.variants)
              if v["decode"] and not v["causal"] and not v["with_lse"] and
              v["dtype"] == "f16" and v["target"] == chip]
    if not decode:
        sys.exit(f"python_host_time: the bundle has no f16 decode variant "
                 f"without LSE for {chip}")
    index, variant = decode[0]
    group, d = variant["group"], variant["head_dim"]
    shapes = ((1, 2 * group, 1, d), (1, 2, 32768, d), (1, 2, 32768, d),
              (1, 2 * group, 1, d))
    q, k, v, out = (
        (pointer, "f16", shape, tuple(strides), True)
        for shape, (pointer, strides) in zip(
            shapes, gpu_check.driver_buffers("python_host_time", shapes, 2)))
    native = bundle._native  # pylint: disable=protected-access

    def call():
        native.launch(index, "cuda", q, k, v, out, None, 0, 0, 0.125)
    us = gpu_check.host_us_per_call(call, args.calls, warmup=200)
    print(f"native launch ({variant['id']}, 32768 keys, the runtime's "
          f"split count): {us:.1f} us per call (median of 5 x "
          f"{args.calls} calls, stand-in driver, launches skipped)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle")
    parser.add_argument("--entry", choices=("bundle", "attention", "kernel",
                                            "native"), default="bundle")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--no-out", action="store_true")
    parser.add_argument("--growing", action="store_true")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    if args.entry == "native":
        native_launch(args)
        return
    if args.entry == "bundle":
        if not args.bundle:
            sys.exit("python_host_time: --entry bundle needs --bundle")
        bundle = flashc.load_bundle(args.bundle)
        decode = [v for v in bundle.variants if v["decode"] and
                  not v["causal"] and not v["with_lse"] and
                  v["dtype"] == "f16"]
        if not decode:
            sys.exit("python_host_time: the bundle has no f16 decode "
                     "variant without LSE")
        group, d = decode[0]["group"], decode[0]["head_dim"]
        chip = decode[0]["target"]
        bundle._native = _NoLaunch(bundle._native)  # pylint: disable=protected-access
    else:
        group, d = 2, 64
        _stub_kernels()
    rng = np.random.default_rng()
    keys = 1536 if args.growing else 1024
    arrays = [rng.standard_normal(s).astype(np.float16)
              for s in ((1, 2 * group, 1, d), (1, 2, keys, d),
                        (1, 2, keys, d))]
    if args.torch:
        import torch  # pylint: disable=import-outside-toplevel
        arrays = [torch.from_numpy(a) for a in arrays]
    q, k_cache, v_cache = arrays
    out = None if args.no_out else q * 0
    step = [0]

    def kv():
        """This call's keys and values: all of them, or with --growing
        the next length's slices."""
        if not args.growing:
            return k_cache, v_cache
        step[0] += 1
        n = 1024 + step[0] % 512
        return k_cache[:, :, :n], v_cache[:, :, :n]
    if args.entry == "bundle":
        def call():
            k, v = kv()
            bundle.attention(q, k, v, simulate=True, chip=chip, out=out)
    elif args.entry == "attention":
        def call():
            k, v = kv()
            flashc.attention(q, k, v, out=out)
    else:
        kernel = flashc.compile(flashc.AttentionSpec(
            heads=2 * group, kv_heads=2, head_dim=d, dtype="f16"))

        def call():
            k, v = kv()
            kernel(q, k, v, out=out)
    us = gpu_check.host_us_per_call(call, args.calls, warmup=200)
    print(f"{args.entry}, {'torch' if args.torch else 'numpy'} inputs"
          f"{', output allocated' if args.no_out else ''}"
          f"{', growing KV cache' if args.growing else ''}: "
          f"{us:.1f} us per call (median of 5 x {args.calls} calls, "
          "launch stubbed out)")


if __name__ == "__main__":
    main()
