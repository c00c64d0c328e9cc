#!/usr/bin/env python3
# ===- scripts/gpu_check.py - flashc's kernels against PyTorch on a GPU ---===#
#
# Runs flashc's precompiled kernels (a bundle, through the C API of
# libflashc_runtime.so and ctypes) on PyTorch tensors, on PyTorch's current
# stream:
#
#   1. numerics: fresh random inputs, flashc's outputs poisoned with NaN
#      beforehand, compared with a float64 reference and with
#      torch.nn.functional.scaled_dot_product_attention;
#   2. benchmark (CUDA events around runs of calls back to back, median of
#      many such runs): prefill in TFLOP/s
#      against SDPA's flash and cuDNN backends, and decode in GB/s and as a
#      percentage of a measured device-to-device copy bandwidth, and again
#      with every kernel launched as any other (no programmatic dependent
#      launch: FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0).
#
#   gpu_check.py --lib LIB --bundle DIR [--quick] [--json FILE]
#   gpu_check.py --lib LIB --bundle DIR --dry-run
#
# --dry-run needs no GPU: it runs small numerics through the
# same C API on the PTX simulator with numpy arrays, and prints the
# benchmark plan.
#
# ===----------------------------------------------------------------------===#

import argparse
import contextlib
import ctypes
import json
import math
import os
import statistics
import sys
import time

FLASHC_F32, FLASHC_F16, FLASHC_BF16 = 0, 1, 2
FLASHC_LAYOUT_STRIDED = 2
FLASHC_MASK_NONE, FLASHC_MASK_CAUSAL = 0, 1
DEVICE_CUDA, DEVICE_SIMULATOR = 0, 1


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("sizes", ctypes.c_int64 * 4),
                ("strides", ctypes.c_int64 * 4)]


class Flashc:
    """The runtime's C API."""

    def __init__(self, lib, bundle):
        self.lib = ctypes.CDLL(lib)
        self.lib.flashc_bundle_open.argtypes = [
            ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.flashc_attention.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int] + [ctypes.POINTER(Tensor)] * 5 + [
            ctypes.c_int, ctypes.c_double, ctypes.c_void_p]
        self.lib.flashc_last_error.restype = ctypes.c_char_p
        self.lib.flashc_bundle_size.argtypes = [ctypes.c_void_p]
        self.lib.flashc_bundle_size.restype = ctypes.c_int64
        self.bundle = ctypes.c_void_p()
        if self.lib.flashc_bundle_open(bundle.encode(),
                                       ctypes.byref(self.bundle)):
            raise RuntimeError(self.error())

    def error(self):
        return self.lib.flashc_last_error().decode()

    def attention(self, device, q, k, v, out, lse, causal, stream=None):
        args = [ctypes.byref(t) if t is not None else None
                for t in (q, k, v, out, lse)]
        rc = self.lib.flashc_attention(self.bundle, device, FLASHC_LAYOUT_STRIDED,
                                       *args,
                                       FLASHC_MASK_CAUSAL if causal
                                       else FLASHC_MASK_NONE, 0.0, stream)
        if rc:
            raise RuntimeError(self.error())


def driver_buffers(what, shapes, item_bytes):
    """Opens the CUDA driver (libcuda.so.1 as LD_LIBRARY_PATH finds it:
    the stand-in one for host-time measurements), makes device 0's
    primary context current on this thread and allocates a dense buffer
    of each shape: [(pointer, strides in elements)]. Exits naming
    ``what`` where a call fails."""
    cuda = ctypes.CDLL("libcuda.so.1")
    device, context = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), 0) or
            cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) or
            cuda.cuCtxSetCurrent(context)):
        sys.exit(f"{what}: no CUDA context")
    buffers = []
    for shape in shapes:
        strides, elements = [], 1
        for n in reversed(shape):
            strides.insert(0, elements)
            elements *= n
        pointer = ctypes.c_uint64()
        nbytes = elements * item_bytes
        if cuda.cuMemAllocAsync(ctypes.byref(pointer),
                                ctypes.c_size_t(nbytes), None):
            sys.exit(f"{what}: cannot allocate {nbytes} bytes")
        buffers.append((pointer.value, strides))
    return buffers


def describe(ptr, dtype, sizes, strides):
    t = Tensor()
    t.data = ptr
    t.dtype = dtype
    t.rank = len(sizes)
    for i, (s, st) in enumerate(zip(sizes, strides)):
        t.sizes[i] = s
        t.strides[i] = st
    return t


# ---------------------------------------------------------------------------
# The float64 reference (numpy or torch: the same arithmetic)
# ---------------------------------------------------------------------------

def reference(xp, q, k, v, causal):
    """O and LSE in float64; bottom-right causal alignment."""
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    g = hq // hkv
    if xp.__name__ == "torch":
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    else:
        k = xp.repeat(k, g, axis=1)
        v = xp.repeat(v, g, axis=1)
        s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(d)
    if causal:
        # The mask on the scores' device (CUDA tensors take no CPU mask).
        on = {"device": s.device} if xp.__name__ == "torch" else {}
        i = xp.arange(nq, **on)[:, None]
        j = xp.arange(nk, **on)[None, :]
        visible = j <= i + (nk - nq)
        s = xp.where(visible, s, -math.inf) if xp.__name__ != "torch" else \
            s.masked_fill(~visible, -math.inf)
    m = s.max(-1, keepdims=True) if xp.__name__ != "torch" else \
        s.amax(-1, keepdim=True)
    m = xp.where(xp.isinf(m), xp.zeros_like(m), m)
    p = xp.exp(s - m)
    l = p.sum(-1, keepdims=True) if xp.__name__ != "torch" else \
        p.sum(-1, keepdim=True)
    safe = xp.where(l > 0, l, xp.ones_like(l))
    o = xp.where(l > 0, (p @ v) / safe, xp.zeros_like(p @ v))
    lse = xp.where(l[..., 0] > 0, xp.log(safe[..., 0]) + m[..., 0],
                   -math.inf * xp.ones_like(m[..., 0]))
    return o, lse


# ---------------------------------------------------------------------------
# Dry run: numpy arrays on the simulator
# ---------------------------------------------------------------------------

def dry_run(fc):
    import numpy as np
    rng = np.random.default_rng()
    failures = 0
    for (b, hq, hkv, nq, nk, d, causal) in [(1, 4, 1, 40, 70, 64, True),
                                            (2, 8, 2, 1, 300, 128, False)]:
        q = rng.standard_normal((b, hq, nq, d)).astype(np.float16)
        k = rng.standard_normal((b, hkv, nk, d)).astype(np.float16)
        v = rng.standard_normal((b, hkv, nk, d)).astype(np.float16)
        out = np.full((b, hq, nq, d), np.nan, dtype=np.float16)

        def view(a):
            return describe(a.ctypes.data, FLASHC_F16, a.shape,
                            [s // a.itemsize for s in a.strides])
        try:
            fc.attention(DEVICE_SIMULATOR, view(q), view(k), view(v),
                         view(out), None, causal)
        except RuntimeError as e:
            print(f"  {(b, hq, hkv, nq, nk, d)}: {e}")
            failures += 1
            continue
        ref, _ = reference(np, q.astype(np.float64), k.astype(np.float64),
                           v.astype(np.float64), causal)
        err = float(np.nanmax(np.abs(out.astype(np.float64) - ref))) \
            if np.isfinite(out).all() else math.inf
        ok = err < 4e-3
        failures += not ok
        print(f"  simulator B={b} Hq={hq} Hkv={hkv} Nq={nq} Nk={nk} D={d} "
              f"causal={causal}: max|err| {err:.2e} {'PASS' if ok else 'FAIL'}")
    print("benchmark plan:")
    for row in prefill_configs():
        print("  prefill", row)
    for row in decode_configs():
        print("  decode", row)
    return failures


# ---------------------------------------------------------------------------
# On the GPU
# ---------------------------------------------------------------------------

def prefill_configs(quick=False):
    """(d, heads, causal, batch, n[, kv_heads]): batch x n = 16K tokens;
    MHA, then a GQA group that is not a power of two (28 query heads over
    4 KV heads, 7 a group, as Qwen2-7B: each 128-row tile packs 7 x 18
    rows), then D = 96 (32 heads, as Phi-3-mini: rows in panels of the
    64-byte swizzle; given with its kv_heads, so that gpu_compare.py,
    whose bundles hold D = 64 and 128 only, leaves it out)."""
    sizes = [512, 2048, 8192] if quick else [512, 1024, 2048, 4096, 8192,
                                             16384]
    return ([(d, 32 if d == 64 else 16, causal, 16384 // n, n)
             for d in (64, 128) for causal in (False, True) for n in sizes] +
            [(128, 28, causal, 16384 // n, n, 4)
             for causal in (False, True) for n in (2048, 8192)] +
            [(96, 32, causal, 16384 // n, n, 32)
             for causal in (False, True) for n in (2048, 8192)])


def decode_configs(quick=False):
    """(batch, nk): GQA 32/8, d = 128, one query."""
    if quick:
        return [(1, 32768), (8, 8192), (64, 1024)]
    return [(1, 1024), (1, 8192), (1, 32768), (1, 131072), (8, 8192),
            (8, 32768), (64, 1024), (64, 8192), (64, 32768)]


def copy_bandwidth(torch, dev, elems, timer, iters):
    """GB/s of a device-to-device copy of `elems` f16 elements (read and
    written), by `timer(fn, iters)`; the buffers are freed on return."""
    src = torch.empty(elems, device=dev, dtype=torch.float16)
    dst = torch.empty_like(src)
    seconds = timer(lambda: dst.copy_(src), iters)
    return 2 * elems * 2 / seconds * 1e-9


def synchronize(torch, event=None):
    """torch.cuda.synchronize (or `event`'s), bounded as the runtime's own
    waits are: work that has not finished FLASHC_CUDA_SYNC_TIMEOUT_S
    seconds later (unset or 0: no bound) is a kernel that hangs, and the
    process ends at once (exit 3) with a line saying so, since nothing
    after it would run."""
    text = os.environ.get("FLASHC_CUDA_SYNC_TIMEOUT_S") or "0"
    try:
        limit = float(text)
    except ValueError:
        sys.exit(f"FLASHC_CUDA_SYNC_TIMEOUT_S is '{text}': give seconds")
    if limit > 0:
        done = event.query if event is not None else \
            torch.cuda.current_stream().query
        start = time.monotonic()
        while not done():
            waited = time.monotonic() - start
            if waited > limit:
                print(f"FAIL: the GPU's work did not finish within {limit:g} "
                      "s (FLASHC_CUDA_SYNC_TIMEOUT_S): a kernel that hangs; "
                      "nothing after it would run, so this check stops",
                      flush=True)
                os._exit(3)
            # Spins for the first millisecond, as the driver's wait does.
            time.sleep(0 if waited < 1e-3 else 1e-3)
    if event is not None:
        event.synchronize()
    else:
        torch.cuda.synchronize()


def gpu_view(t, dtype_code):
    return describe(t.data_ptr(), dtype_code, list(t.shape), list(t.stride()))


def time_cuda(torch, fn, iters):
    """Seconds per call: the median over `iters` samples, each a run of
    calls back to back between two CUDA events (enough of them to fill
    about a millisecond), after warm-up. Back to back, the host's time to
    make a call overlaps the kernels before it, as in a model's forward
    pass; a lone call would also count the host's latency."""
    for _ in range(3):
        fn()
    synchronize(torch)

    def sample(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        synchronize(torch, end)
        return start.elapsed_time(end) * 1e-3 / reps
    reps = max(1, min(100, math.ceil(1e-3 / max(sample(1), 1e-7))))
    times = sorted(sample(reps) for _ in range(iters))
    return times[len(times) // 2]


NUMERICS_GPU = [
    # dtype, B, Hq, Hkv, Nq, Nk, D, causal, lse
    ("float16", 2, 16, 16, 1023, 1023, 64, True, True),
    ("bfloat16", 1, 32, 8, 777, 2051, 128, False, False),
    ("bfloat16", 4, 16, 16, 2048, 2048, 128, True, True),
    ("float16", 3, 32, 8, 1, 40000, 128, False, True),
    ("bfloat16", 16, 32, 8, 1, 4097, 128, True, False),
    ("float16", 1, 32, 8, 4, 1000, 128, True, True),
    ("float16", 2, 8, 8, 300, 100, 64, True, True),
    # A GQA group of 7 (28 / 4): prefill tiles of 7 x 18 rows and 2
    # padding rows, TMA boxes of 7 groups; a decode tile of 7 x 2.
    ("bfloat16", 2, 28, 4, 1000, 1500, 128, True, False),
    ("bfloat16", 3, 28, 4, 1, 7000, 128, False, True),
    # Tensors starting 1 element into their buffers (2-byte aligned): the
    # bundle's fallback variants (--alignments 16,2), element by element.
    ("float16", 2, 16, 16, 1023, 1023, 64, True, True, 1),
    ("bfloat16", 3, 32, 8, 1, 5000, 128, False, False, 1)]

# The same code path at simulator sizes (--dry-run with PyTorch present).
NUMERICS_SIM = [
    ("float16", 1, 2, 2, 37, 37, 64, True, True),
    ("bfloat16", 1, 8, 2, 19, 71, 128, False, False),
    ("float16", 2, 8, 2, 1, 300, 128, False, True),
    ("bfloat16", 1, 8, 2, 4, 50, 128, True, True),
    ("float16", 1, 2, 2, 30, 10, 64, True, True),
    ("bfloat16", 1, 14, 2, 50, 70, 128, True, False),
    ("bfloat16", 1, 7, 1, 1, 200, 128, False, True),
    ("float16", 1, 2, 2, 37, 37, 64, True, True, 1),
    ("bfloat16", 2, 8, 2, 1, 300, 128, False, False, 1)]


def torch_check(fc, torch, device_code, dev, stream, timer, numerics_cases,
                prefill_cfgs, decode_cfgs, copy_elems, iters, profiler=None):
    """Numerics against float64 and SDPA, then the benchmark tables.

    `dev` is the torch device holding the tensors and `device_code` the
    runtime device running flashc (CUDA, or the simulator on CPU tensors);
    `timer(fn, iters)` gives seconds per call; `profiler(fn)`, where given,
    the host's and the kernels' time a decode call (`profile_calls`).
    """
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    codes = {torch.float16: FLASHC_F16, torch.bfloat16: FLASHC_BF16}
    report = {"numerics": [], "prefill": [], "decode": []}

    def flashc(q, k, v, out, causal, lse=None):
        fc.attention(device_code, gpu_view(q, codes[q.dtype]),
                     gpu_view(k, codes[k.dtype]), gpu_view(v, codes[v.dtype]),
                     gpu_view(out, codes[out.dtype]),
                     gpu_view(lse, FLASHC_F32) if lse is not None else None,
                     causal, stream())

    def sdpa(backends, q, k, v, causal, expand=False):
        """SDPA; GQA by `enable_gqa` (torch >= 2.5). Where that argument is
        missing, K and V are repeated per query head when `expand` (for
        numerics; never inside a timed call) and the call fails otherwise."""
        gqa = q.shape[1] != k.shape[1]
        with sdpa_kernel(backends):
            if not gqa:
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=causal)
            try:
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, enable_gqa=True)
            except TypeError:
                if not expand:
                    raise
            g = q.shape[1] // k.shape[1]
            return F.scaled_dot_product_attention(
                q, k.repeat_interleave(g, dim=1),
                v.repeat_interleave(g, dim=1), is_causal=causal)

    # 1. Numerics against float64 and SDPA.
    print("numerics (flashc vs float64 reference and torch SDPA):")
    failures = 0
    for case in numerics_cases:
        (dtype, b, hq, hkv, nq, nk, d, causal, with_lse), offset = \
            case[:9], (case[9] if len(case) > 9 else 0)
        dtype = getattr(torch, dtype)
        g = torch.Generator(device=dev).manual_seed(time.time_ns() % 2**62)

        def tensor(*shape, fill=None):
            """Random (or `fill`) of `shape`, `offset` elements into a
            buffer of its own."""
            n = math.prod(shape)
            buffer = torch.empty(n + offset, device=dev, dtype=dtype)
            t = buffer[offset:].view(*shape)
            if fill is None:
                t.copy_(torch.randn(*shape, device=dev, dtype=dtype,
                                    generator=g))
            else:
                t.fill_(fill)
            return t
        q = tensor(b, hq, nq, d)
        k = tensor(b, hkv, nk, d)
        v = tensor(b, hkv, nk, d)
        # Poisoned outputs: a row the kernel never writes stays NaN.
        out = tensor(b, hq, nq, d, fill=float("nan"))
        lse = torch.full((b, hq, nq), float("nan"), device=dev) \
            if with_lse else None
        shape = f"{str(dtype):15s} B={b:<3} Hq={hq:<3} Hkv={hkv:<3} " \
                f"Nq={nq:<5} Nk={nk:<6} D={d:<4} causal={int(causal)}" + \
                (f" offset={offset}" if offset else "")
        try:
            flashc(q, k, v, out, causal, lse)
            if dev.type == "cuda":
                synchronize(torch)
        except RuntimeError as e:
            print(f"  {shape}: {e}")
            failures += 1
            continue
        ref, ref_lse = reference(torch, q.double(), k.double(), v.double(),
                                 causal)
        err = (out.double() - ref).abs().max().item() \
            if torch.isfinite(out).all() else math.inf
        # SDPA aligns causal masks top-left: compare it where that equals
        # bottom-right alignment (Nq == Nk, or no mask).
        sdpa_err = float("nan")
        if not causal or nq == nk:
            s = sdpa([SDPBackend.FLASH_ATTENTION,
                      SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH],
                     q, k, v, causal, expand=True)
            sdpa_err = (out.double() - s.double()).abs().max().item()
        lse_err = 0.0
        if with_lse:
            fin = torch.isfinite(ref_lse)
            lse_err = ((lse.double() - ref_lse).abs()[fin] /
                       (1 + ref_lse.abs()[fin])).max().item() \
                if fin.any() else 0.0
            # Fully masked rows: lse = -inf exactly.
            masked = lse[~fin]
            if not bool((masked == -math.inf).all()):
                lse_err = math.inf
        tol = 4e-3 if dtype == torch.float16 else 3e-2
        ok = err <= tol and lse_err <= 1e-3
        failures += not ok
        report["numerics"].append(dict(
            dtype=str(dtype), B=b, Hq=hq, Hkv=hkv, Nq=nq, Nk=nk, D=d,
            causal=causal, offset=offset, err=err, sdpa_err=sdpa_err, lse_err=lse_err,
            ok=ok))
        print(f"  {shape}: max|err| vs f64 {err:.2e} (tol {tol:.0e}), vs "
              f"SDPA {sdpa_err:.2e}, lse {lse_err:.2e}  "
              f"{'PASS' if ok else 'FAIL'}")

    def against_sdpa(q, k, v, out, causal, serial=False):
        """Seconds per call for flashc and SDPA's flash and cuDNN; with
        `serial`, also flashc with every kernel launched as any other
        (FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0: no programmatic dependent
        launch), as "flashc_serial"."""
        views = [gpu_view(t, FLASHC_BF16) for t in (q, k, v, out)]

        def run_flashc():
            fc.attention(device_code, *views, None, causal, stream())
        results = {"flashc": timer(run_flashc, iters)}
        if serial:
            with no_programmatic_launch():
                results["flashc_serial"] = timer(run_flashc, iters)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            # A backend that refuses the shape (or this torch's SDPA lacks
            # GQA) leaves its column NaN.
            try:
                results[name] = timer(
                    lambda: sdpa([backend], q, k, v, causal), iters)
            except (RuntimeError, TypeError):
                results[name] = float("nan")
        return results

    # 2a. Prefill.
    print("\nprefill (bf16, TFLOP/s; batch x N = 16K tokens):")
    print(f"  {'D':>4} {'H':>5} {'causal':>6} {'B':>3} {'N':>6} "
          f"{'flashc':>8} {'flash':>8} {'cudnn':>8} {'flashc/flash':>13}")
    for cfg in prefill_cfgs:
        (d, h, causal, b, n), hkv = cfg[:5], (cfg[5] if len(cfg) > 5
                                              else cfg[1])
        q = torch.randn(b, h, n, d, device=dev, dtype=torch.bfloat16)
        k, v = (torch.randn(b, hkv, n, d, device=dev, dtype=torch.bfloat16)
                for _ in range(2))
        out = torch.empty_like(q)
        flops = 4 * b * h * n * n * d / (2 if causal else 1)
        tf = {k2: flops / t * 1e-12
              for k2, t in against_sdpa(q, k, v, out, causal).items()}
        report["prefill"].append(dict(D=d, H=h, HKV=hkv, causal=causal, B=b,
                                      N=n, **tf))
        heads = str(h) if hkv == h else f"{h}/{hkv}"
        print(f"  {d:>4} {heads:>5} {int(causal):>6} {b:>3} {n:>6} "
              f"{tf['flashc']:8.1f} {tf['flash']:8.1f} {tf['cudnn']:8.1f} "
              f"{tf['flashc'] / tf['flash']:13.2f}")
        del q, k, v, out

    # 2b. Decode, against the measured copy bandwidth.
    copy_gbs = copy_bandwidth(torch, dev, copy_elems, timer, iters)
    print(f"\ndecode (bf16, GQA 32/8, D = 128, one query; device-to-device "
          f"copy {copy_gbs:.0f} GB/s):")
    print(f"  {'B':>3} {'Nk':>7} {'flashc GB/s':>12} {'% copy':>7} "
          f"{'flash GB/s':>11} {'cudnn GB/s':>11} {'no PDL GB/s':>12} "
          f"{'causal GB/s':>12}")
    for (b, nk) in decode_cfgs:
        q = torch.randn(b, 32, 1, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, 8, nk, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, 8, nk, 128, device=dev, dtype=torch.bfloat16)
        out = torch.empty_like(q)
        nbytes = (k.numel() + v.numel() + 2 * q.numel()) * 2
        gbs = {k2: nbytes / t * 1e-9
               for k2, t in against_sdpa(q, k, v, out, False,
                                         serial=True).items()}
        views = [gpu_view(t, FLASHC_BF16) for t in (q, k, v, out)]
        # The causal variant (one query sees every key; its one KV loop
        # masks a block only where some row does not see it whole).
        gbs["flashc_causal"] = nbytes / timer(
            lambda: fc.attention(device_code, *views, None, True, stream()),
            iters) * 1e-9
        row = dict(B=b, Nk=nk, copy_gbs=copy_gbs, **gbs)
        line = (f"  {b:>3} {nk:>7} {gbs['flashc']:12.0f} "
                f"{100 * gbs['flashc'] / copy_gbs:6.0f}% {gbs['flash']:11.0f} "
                f"{gbs['cudnn']:11.0f} {gbs['flashc_serial']:12.0f} "
                f"{gbs['flashc_causal']:12.0f}")
        if profiler:
            host, kernels = profiler(
                lambda: fc.attention(device_code, *views, None, False,
                                     stream()))
            row.update(host_us=host * 1e6, kernels_us=kernels)
            busy = sum(t for t in kernels.values()
                       if isinstance(t, float))
            line += (f"   host {host * 1e6:6.1f} us, kernels "
                     f"{busy:7.1f} us a call: " +
                     ", ".join(f"{name[:40]} {t:.1f}"
                               if isinstance(t, float) else f"{name}: {t}"
                               for name, t in kernels.items()))
        report["decode"].append(row)
        print(line)
        del q, k, v, out
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return failures, report


def gpu_check(fc, quick, json_path):
    import torch
    dev = torch.device("cuda")
    failures, report = torch_check(
        fc, torch, DEVICE_CUDA, dev,
        lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
        lambda fn, iters: time_cuda(torch, fn, iters), NUMERICS_GPU,
        prefill_configs(quick), decode_configs(quick), 1 << 29,  # 1 GiB
        10 if quick else 30, lambda fn: profile_calls(torch, fn))
    report["device"] = torch.cuda.get_device_name()
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
    return failures


@contextlib.contextmanager
def no_programmatic_launch():
    """Within it, the runtime launches every kernel as any other
    (FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0, read at each launch); the variable
    is restored after."""
    saved = os.environ.get("FLASHC_CUDA_PROGRAMMATIC_LAUNCH")
    os.environ["FLASHC_CUDA_PROGRAMMATIC_LAUNCH"] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("FLASHC_CUDA_PROGRAMMATIC_LAUNCH", None)
        else:
            os.environ["FLASHC_CUDA_PROGRAMMATIC_LAUNCH"] = saved


def profile_calls(torch, fn, calls=50):
    """The host's seconds a call (calls issued without waiting; the
    kernels queue behind them) and, by torch.profiler (CUPTI), each
    kernel's device microseconds a call, the calls profiled without
    programmatic dependent launches (a kernel launched early waits at its
    griddepcontrol.wait for the one before it, and the profiler would count
    the wait). Where the host's time exceeds the kernels', calls back to
    back measure the host."""
    for _ in range(3):
        fn()
    synchronize(torch)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls
    synchronize(torch)
    kernels = {}
    try:
        from torch.profiler import ProfilerActivity, profile
        with no_programmatic_launch(), \
                profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            synchronize(torch)
        for e in prof.key_averages():
            t = getattr(e, "self_device_time_total", None)
            if t is None:
                t = getattr(e, "self_cuda_time_total", 0)
            if t > 0:
                kernels[e.key] = float(t) / calls
    except Exception as e:  # The profiler is optional; say why it failed.
        kernels = {"profiler": repr(e)[:200]}
    return host, kernels


def wall_clock(fn, iters):
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def host_us_per_call(fn, calls, warmup, runs=5):
    """The median over `runs` runs of `calls` back-to-back calls of `fn`,
    after `warmup` calls, in microseconds per call (the host's time where
    the calls launch nothing or do not wait)."""
    for _ in range(warmup):
        fn()
    return statistics.median(wall_clock(fn, calls) * 1e6
                             for _ in range(runs))


def torch_dry_run(fc):
    """gpu_check's PyTorch path on CPU tensors, flashc on the simulator."""
    try:
        import torch
    except ImportError:
        print("PyTorch not installed: its code path skipped")
        return 0
    print("PyTorch path on the simulator (CPU tensors, wall-clock timer; "
          "the figures mean nothing):")
    failures, _ = torch_check(
        fc, torch, DEVICE_SIMULATOR, torch.device("cpu"), lambda: None,
        wall_clock, NUMERICS_SIM, [(64, 2, True, 1, 48),
                                   (128, 14, False, 1, 20, 2)],
        [(1, 300)], 1 << 12,
        1, lambda fn: (wall_clock(fn, 1), {}))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    fc = Flashc(args.lib, args.bundle)
    print(f"bundle: {args.bundle}, "
          f"{fc.lib.flashc_bundle_size(fc.bundle)} kernel variants")
    if args.dry_run:
        failures = dry_run(fc) + torch_dry_run(fc)
    else:
        failures = gpu_check(fc, args.quick, args.json)
    print("gpu_check: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
