"""Runs scripts/gpu_check.py (argv[1]: the scripts folder; the rest, its
arguments) on a torch older than 2.2, such as Debian's 1.13 that
scripts/torch-venv.sh installs, by giving it the torch 2 names its PyTorch
path uses: torch.nn.attention's SDPBackend and sdpa_kernel (a backend
choice this CPU run ignores) and, before 2.0,
F.scaled_dot_product_attention (softmax(Q K^T s) V in float32, the causal
mask top-left as torch's is_causal, GQA by enable_gqa). So the dry run
exercises that path, its numerics against float64 and its tables, where
no newer torch can be installed."""
import contextlib
import enum
import math
import sys
import types

import torch
import torch.nn.functional as F

if not hasattr(F, "scaled_dot_product_attention"):
    def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                     is_causal=False, scale=None,
                                     enable_gqa=False):
        if k.shape[1] != q.shape[1]:
            if not enable_gqa:
                raise RuntimeError("K's heads differ from Q's")
            g = q.shape[1] // k.shape[1]
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
        scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
        s = (q.float() @ k.float().transpose(-1, -2)) * scale
        if is_causal:
            keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
            s = s.masked_fill(~keep, float("-inf"))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf"))
        return (s.softmax(-1) @ v.float()).to(q.dtype)
    F.scaled_dot_product_attention = scaled_dot_product_attention

try:
    import torch.nn.attention  # noqa: F401
except ImportError:
    attention = types.ModuleType("torch.nn.attention")

    class SDPBackend(enum.Enum):
        MATH = 0
        FLASH_ATTENTION = 1
        EFFICIENT_ATTENTION = 2
        CUDNN_ATTENTION = 3

    @contextlib.contextmanager
    def sdpa_kernel(backends):
        del backends
        yield

    attention.SDPBackend = SDPBackend
    attention.sdpa_kernel = sdpa_kernel
    sys.modules["torch.nn.attention"] = attention
    torch.nn.attention = attention

sys.path.insert(0, sys.argv[1])
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position

sys.argv = ["gpu_check.py"] + sys.argv[2:]
sys.exit(gpu_check.main())
