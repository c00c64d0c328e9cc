#!/usr/bin/env python3
# ===- scripts/gpu_one_call.py - one bundled attention call, for profilers ===#
#
# Makes one of the GPU check's calls through the runtime's C API (as
# scripts/gpu_check.py does) a few times and exits, so that a profiler can
# attach to a known kernel launch: bf16, and
#
#   decode    B = 1, GQA 32/8, D = 128, one query over 131072 keys
#   prefill   B = 1, 16 heads, D = 128, N = 16384
#   causal    the same, causal
#
#   gpu_one_call.py --lib LIB --bundle DIR {decode,prefill,causal}
#
# For example, Nsight Compute on the third forward launch:
#   ncu --clock-control none --section SpeedOfLight --section Occupancy \
#       --section WarpStateStats -k regex:flash_attention_fwd -s 2 -c 1 \
#       python3 scripts/gpu_one_call.py --lib LIB --bundle DIR decode
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
    parser.add_argument("call", choices=["decode", "prefill", "causal"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import torch  # pylint: disable=import-outside-toplevel
    fc = gpu_check.Flashc(args.lib, args.bundle)
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    if args.call == "decode":
        q = torch.randn(1, 32, 1, 128, **bf16)
        k = torch.randn(1, 8, 131072, 128, **bf16)
    else:
        q = torch.randn(1, 16, 16384, 128, **bf16)
        k = torch.randn(1, 16, 16384, 128, **bf16)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    views = [gpu_check.gpu_view(t, gpu_check.FLASHC_BF16)
             for t in (q, k, v, out)]
    for _ in range(args.repeat):
        fc.attention(gpu_check.DEVICE_CUDA, *views, None,
                     args.call == "causal", None)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
