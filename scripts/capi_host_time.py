#!/usr/bin/env python3
# ===- scripts/capi_host_time.py - The C API's host time per call ---------===#
#
# The host time of one flashc_attention call through ctypes (as
# scripts/gpu_check.py makes it): a decode call, bf16, GQA 32/8, D = 128,
# one query, on the bundle's matching variant. Run it on the stand-in
# driver with its launches skipped, so that the figure is the C API's and
# the runtime's own work:
#
#   FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1 \
#   LD_LIBRARY_PATH=build/unittests/Runtime/fake-cuda \
#   python3 scripts/capi_host_time.py --lib build/lib/libflashc_runtime.so \
#     --bundle gpu-bundle [--seq-kv 32768] [--calls N]
#
# On a GPU machine (without the two variables) the figure also holds the
# driver's launches, and kernels longer than a call make the host wait.
#
# ===----------------------------------------------------------------------===#

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--seq-kv", type=int, default=32768)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    shapes = ([1, 32, 1, 128], [1, 8, args.seq_kv, 128],
              [1, 8, args.seq_kv, 128], [1, 32, 1, 128])
    q, k, v, out = (
        gpu_check.describe(pointer, gpu_check.FLASHC_BF16, shape, strides)
        for shape, (pointer, strides) in zip(
            shapes, gpu_check.driver_buffers("capi_host_time", shapes, 2)))
    fc = gpu_check.Flashc(args.lib, args.bundle)

    def call():
        fc.attention(gpu_check.DEVICE_CUDA, q, k, v, out, None, False, None)
    us = gpu_check.host_us_per_call(call, args.calls, warmup=20)
    print(f"Nk={args.seq_kv}: {us:.1f} us per "
          f"flashc_attention call through ctypes (median of 5 x "
          f"{args.calls} calls)")


if __name__ == "__main__":
    main()
