"""Ring attention: one attention over a sequence spread across processes.

Each of W ranks holds one chunk of the sequence: its queries and its keys
and values. The K/V chunks travel around the ring (rank r sends to r + 1
and receives from r - 1, the next exchange in flight while flashc computes
on the chunk at hand), so after W - 1 steps every rank has seen every K/V
chunk. Rank r attends its queries to each chunk with
``flashc.attention(..., return_lse=True)`` and merges the partial results
with ``flashc.combine``. With ``--causal``, a chunk entirely in the future
of rank r's queries is skipped, the rank's own chunk (the diagonal) is
causal, and earlier chunks are attended in full. Rank 0 gathers the output
and the log-sum-exp and checks them against attention over the whole
sequence in float64 numpy; it exits nonzero on a mismatch.

    PYTHONPATH=build/python python examples/ring_attention.py --world-size 2
    PYTHONPATH=build/python torchrun --nproc-per-node 2 \\
        examples/ring_attention.py

The first form spawns the ranks itself (torch.multiprocessing); under
torchrun (RANK and WORLD_SIZE in the environment) each process is one rank.
(torch 1.13's torchrun under Python 3.11, as in the environment of
scripts/torch-venv.sh, fails on its default stream redirection: run it as
``python -m torch.distributed.run --standalone --nproc_per_node 2
--redirects 2 --tee 1 examples/ring_attention.py``.)
Tensors live on the CPU with the gloo backend, or with ``--device cuda`` on
a GPU with NCCL: each rank then uses one GPU, which it sees as device 0
(flashc launches on CUDA device 0), by narrowing CUDA_VISIBLE_DEVICES to
its own before CUDA starts; NCCL needs as many GPUs as ranks.
"""

import argparse
import math
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

try:
    import flashc
except ImportError as error:  # pragma: no cover - depends on the setup
    sys.exit(f"ring_attention: cannot import flashc ({error}); run with "
             "PYTHONPATH=build/python")

# Absolute tolerance of the output against float64, by dtype (those of the
# flashc kernel tests); the log-sum-exp is checked relative to its size.
TOLERANCE = {"f32": 2e-4, "f16": 4e-3}
DTYPES = {"f32": torch.float32, "f16": torch.float16}
NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16}


def chunk_bounds(seq_len, world):
    """[start, end) of each rank's chunk: the sequence split as evenly as
    it goes (the first ``seq_len % world`` chunks one longer)."""
    base, extra = divmod(seq_len, world)
    bounds, start = [], 0
    for r in range(world):
        end = start + base + (1 if r < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def make_problem(args):
    """The whole q, k, v as numpy arrays of the dtype, the same on every
    rank (they come from the seed)."""
    rng = np.random.default_rng(args.seed)
    b, hq, hkv, n, d = (args.batch, args.heads, args.kv_heads, args.seq_len,
                        args.head_dim)
    dtype = NUMPY_DTYPES[args.dtype]
    q = rng.standard_normal((b, hq, n, d)).astype(dtype)
    k = rng.standard_normal((b, hkv, n, d)).astype(dtype)
    v = rng.standard_normal((b, hkv, n, d)).astype(dtype)
    return q, k, v


def reference(q, k, v, causal, scale):
    """Attention over the whole sequence in float64: O and LSE."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = scale * (q @ np.swapaxes(k, -1, -2))
    if causal:
        n = s.shape[-1]
        s = np.where(np.tri(n, dtype=bool), s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    p = np.exp(s - top)
    total = p.sum(axis=-1, keepdims=True)
    return (p @ v) / total, (top + np.log(total))[..., 0]


class Ring:
    """Passes K/V chunks around the ring: ``start(chunk, size)`` sends
    ``chunk`` to the next rank and receives the previous rank's chunk of
    ``size`` elements; ``wait()`` returns it once both have completed."""

    def __init__(self, rank, world, device):
        self.next = (rank + 1) % world
        self.prev = (rank - 1) % world
        self.device = device
        self.requests = []
        self.incoming = None

    def start(self, chunk, size):
        self.incoming = torch.empty(size, dtype=chunk.dtype,
                                    device=self.device)
        if dist.get_backend() == "nccl":
            # Posted as one group: NCCL sends launched one by one around a
            # ring would each wait for the next rank's, which waits too.
            self.requests = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, chunk, self.next),
                dist.P2POp(dist.irecv, self.incoming, self.prev)])
        else:
            self.requests = [dist.isend(chunk, self.next),
                             dist.irecv(self.incoming, self.prev)]

    def wait(self):
        for request in self.requests:
            request.wait()
        self.requests = []
        return self.incoming


def ring_attention(q, k, v, rank, world, bounds, causal, scale):
    """This rank's output and LSE: its queries ``q`` against every rank's
    keys, with its own chunk ``k``/``v`` passed around the ring."""
    b, hkv, _, d = k.shape
    dv = v.shape[3]
    hq, nq = q.shape[1], q.shape[2]
    ring = Ring(rank, world, q.device)
    # K and V travel as one flat buffer.
    held = torch.cat([k.reshape(-1), v.reshape(-1)])
    outputs, lses = [], []
    for step in range(world):
        # The chunk held now started on rank `source`.
        source = (rank - step) % world
        if step + 1 < world:
            # The chunk to hold next step: the one from rank source - 1.
            start, end = bounds[(source - 1) % world]
            ring.start(held, b * hkv * (end - start) * (d + dv))
        if not causal or source <= rank:
            start, end = bounds[source]
            n = end - start
            kc = held[:b * hkv * n * d].view(b, hkv, n, d)
            vc = held[b * hkv * n * d:].view(b, hkv, n, dv)
            # flashc writes into tensors of the caller's library and device.
            out = torch.empty((b, hq, nq, dv), dtype=q.dtype, device=q.device)
            lse = torch.empty((b, hq, nq), dtype=torch.float32,
                              device=q.device)
            # The diagonal chunk is causal (its queries and keys are the
            # same positions); earlier chunks are seen in full; later ones
            # are skipped.
            flashc.attention(q, kc, vc, causal=causal and source == rank,
                             scale=scale, out=out, lse=lse)
            outputs.append(out)
            lses.append(lse)
        if step + 1 < world:
            held = ring.wait()
    return flashc.combine(outputs, lses)


def gather_to_rank0(out, lse, rank, world, bounds, device):
    """Rank 0 receives every rank's output and LSE and returns the whole
    ones (sequence order); other ranks send theirs and return None."""
    if rank != 0:
        dist.send(out.contiguous(), 0)
        dist.send(lse.contiguous(), 0)
        return None
    outs, lses = [out], [lse]
    for r in range(1, world):
        n = bounds[r][1] - bounds[r][0]
        o = torch.empty(out.shape[:2] + (n,) + out.shape[3:], dtype=out.dtype,
                        device=device)
        l = torch.empty(lse.shape[:2] + (n,), dtype=lse.dtype, device=device)
        dist.recv(o, r)
        dist.recv(l, r)
        outs.append(o)
        lses.append(l)
    return torch.cat(outs, dim=2), torch.cat(lses, dim=2)


def check(out, lse, args):
    """Rank 0's check against float64 numpy; True when within tolerance."""
    q, k, v = make_problem(args)
    scale = 1.0 / math.sqrt(args.head_dim)
    ref_out, ref_lse = reference(q, k, v, args.causal, scale)
    out = out.cpu().to(torch.float64).numpy()
    lse = lse.cpu().to(torch.float64).numpy()
    # The same attention in one flashc call, for comparison.
    single = flashc.attention(q, k, v, causal=args.causal, scale=scale)
    single_error = float(np.abs(single.astype(np.float64) - ref_out).max())
    out_error = float(np.abs(out - ref_out).max())
    lse_error = float((np.abs(lse - ref_lse) /
                       (1e-3 + 1e-5 * np.abs(ref_lse))).max())
    tolerance = TOLERANCE[args.dtype]
    ok = out_error <= tolerance and lse_error <= 1.0
    print(f"ring attention over {args.world_size} ranks ({args.backend}), "
          f"sequence {args.seq_len}{', causal' if args.causal else ''}, "
          f"{args.dtype}, seed {args.seed}\n"
          f"max |error| against float64: {out_error:.2e} (tolerance "
          f"{tolerance:g}; one flashc call over the whole sequence: "
          f"{single_error:.2e})\n"
          f"lse error: {lse_error:.3f} of its tolerance\n"
          f"{'ok' if ok else 'MISMATCH'}", flush=True)
    return ok


def run(rank, world, args):
    """One rank's work, in an initialised process group; True when it
    succeeded (on rank 0: the check passed)."""
    device = torch.device("cuda", 0) if args.device == "cuda" else \
        torch.device("cpu")
    # Rank 0 picks the seed when none was given, and tells the others.
    seed = torch.tensor([args.seed if args.seed is not None else
                         int.from_bytes(os.urandom(4), "little")],
                        dtype=torch.int64, device=device)
    dist.broadcast(seed, 0)
    args.seed = int(seed.item())
    bounds = chunk_bounds(args.seq_len, world)
    start, end = bounds[rank]
    # Every rank makes the same problem from the seed and keeps its chunk.
    q, k, v = (torch.from_numpy(np.ascontiguousarray(x[:, :, start:end]))
               .to(device) for x in make_problem(args))
    scale = 1.0 / math.sqrt(args.head_dim)
    out, lse = ring_attention(q, k, v, rank, world, bounds, args.causal,
                              scale)
    whole = gather_to_rank0(out, lse, rank, world, bounds, device)
    return check(*whole, args) if rank == 0 else True


def use_own_gpu(local_rank):
    """Narrows CUDA_VISIBLE_DEVICES to this rank's GPU (before CUDA starts),
    so that it is device 0 of the process."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else None
    if devices is not None and len(devices) == 1:
        return
    mine = devices[local_rank % len(devices)] if devices else str(local_rank)
    os.environ["CUDA_VISIBLE_DEVICES"] = mine


def spawned(rank, args, address):
    """The body of a rank started by torch.multiprocessing."""
    if args.device == "cuda":
        use_own_gpu(rank)
    dist.init_process_group(backend=args.backend, init_method=address,
                            rank=rank, world_size=args.world_size)
    try:
        ok = run(rank, args.world_size, args)
    finally:
        dist.destroy_process_group()
    if not ok:
        sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(argv):
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-size", type=int, default=2,
                        help="ranks to spawn (ignored under torchrun)")
    parser.add_argument("--seq-len", type=int, default=100,
                        help="the whole sequence; split as evenly as it goes")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--seed", type=int, default=None,
                        help="of the random inputs (default: a fresh one, "
                        "printed)")
    args = parser.parse_args(argv)
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        args.world_size = int(os.environ["WORLD_SIZE"])
    if args.world_size < 1:
        parser.error(f"--world-size must be at least 1, got {args.world_size}")
    if args.seq_len < args.world_size:
        parser.error(f"--seq-len {args.seq_len} leaves a rank of the "
                     f"{args.world_size} without a chunk")
    for name in ("batch", "heads", "kv_heads", "head_dim"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.device == "cuda" and args.dtype == "f32":
        parser.error("flashc's GPU kernels take f16 (f32 runs on the CPU "
                     "only): use --dtype f16 with --device cuda")
    if args.heads % args.kv_heads:
        parser.error(f"--heads {args.heads} is not a multiple of --kv-heads "
                     f"{args.kv_heads}")
    args.backend = "nccl" if args.device == "cuda" else "gloo"
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        # torchrun: this process is one rank.
        rank = int(os.environ["RANK"])
        if args.device == "cuda":
            use_own_gpu(int(os.environ.get("LOCAL_RANK", rank)))
        dist.init_process_group(backend=args.backend)
        try:
            ok = run(rank, args.world_size, args)
        finally:
            dist.destroy_process_group()
        return 0 if ok else 1
    address = f"tcp://127.0.0.1:{free_port()}"
    try:
        mp.spawn(spawned, args=(args, address), nprocs=args.world_size,
                 join=True)
    except Exception as error:  # pylint: disable=broad-except
        # A rank failed: the check on rank 0, or an error (its traceback
        # was printed by the rank).
        print(f"ring_attention: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
