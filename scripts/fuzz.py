#!/usr/bin/python3
"""A seeded, time-bounded fuzzer for flashc-opt, flashc, flashc-bench, the
runtime's bundle loader and the PTX simulator.

Usage:
  scripts/fuzz.py [--seconds N] [--seed S] [--targets opt,driver,bundle,ptx]
                  [--flashc-opt PATH] [--flashc PATH] [--flashc-bench PATH]
                  [--bundle-target PATH] [--test-bundle DIR]
                  [--flashc-ptxsim PATH] [--out DIR] [--jobs J] [--max-inputs N]
                  [--timeout SECONDS] [--mem-mb MB] [--quiet]
  scripts/fuzz.py --minimize FILE --cmd 'flashc-opt {} --flash-tile' [--min-out PATH]
  scripts/fuzz.py --minimize FILE.ptx --cmd 'flashc-ptxsim {} --kernel ...'
  scripts/fuzz.py --minimize-cmd 'flashc run --seq-q 4 ... --iters -1'

Each input is one process of one target (--flashc-share, --bundle-share and
--ptx-share of the inputs go to driver, bundle and ptx, the rest to opt):
  opt     an IR file run through flashc-opt with a flash pass, a chain of
          flash passes or a flash pipeline (random options, often invalid);
  driver  a flashc (or, now and then, flashc-bench) command line with
          random flag values;
  bundle  a mutated copy of the runtime tests' bundle (manifest.json and
          its .ptx files), opened through the C API by FlashcBundleLoadTarget
          (unittests/Runtime/BundleLoadTarget.c), which then runs tiny
          attention calls with it on the PTX simulator (its budget per
          thread FLASHC_SIM_MAX_INSTRUCTIONS=--sim-max-instructions, 100000
          by default, so that a runaway kernel fails). Mutations: manifest
          fields set to edge values or other types, keys dropped or
          duplicated, deep nesting, odd ids, the variants list emptied or
          duplicated, bytes JSON does not allow; files truncated, flipped,
          made directories, FIFOs, symlinks (/dev/zero, loops), deleted or
          huge and sparse; the PTX mutations below; a kernel or variant field
          changed alike in the manifest and the PTX's descriptor lines. Most
          inputs with changed files get their ptx_fnv1a checksum recomputed,
          so that they pass the check on load and reach the PTX parser and
          the launch;
  ptx     a mutated kernel of that bundle run by flashc-ptxsim on a small
          problem (B = 1, Nq = 20 or 3, Nk = 30 or 200, D = 64) with a
          per-thread instruction budget: IR token and line mutations, and
          numbers of .align, .reqntid, .reg counts, array sizes and added
          .local/.shared/.global declarations at edge values, parameter lists
          changed, instructions deleted, duplicated or moved, branches sent
          to other labels (loops), registers renumbered past their count,
          address offsets at edge values, opcodes and types swapped.
bundle and ptx are left out, with a warning, when their tools are not built
and neither --targets nor a path names them. The IR comes from two
generators:
  * mutations of the lit tests' inputs (test/**/*.mlir and examples/, split
    on `// -----` and `//--- name`, comment lines dropped), and of the IR the
    attention pipeline makes from a few fixed graphs;
  * generated flash.attention / flash.softmax / flash.matmul graphs and naive
    matmul-softmax-matmul chains with random, often invalid, parameters.

Every process runs in a scratch directory under /tmp with a wall-clock
timeout and an address-space limit, and is classified as
  ok      exit 0
  error   non-zero exit with a diagnostic and no crash signature
  guarded flashc-opt recovered from a crash inside MLIR's own parser and
          rejected the input with a clean error (counted apart)
  crash   killed by a signal, or a crash signature on stderr
  hang    timed out
  oom     std::bad_alloc / out of memory, or killed at the memory limit
  messy   (flashc, flashc-bench) an error that is not one
          `flashc: error: ...` (`flashc-bench: error: ...`) line with exit
          status 1; (bundle) exit status other than 0, a
          `violation:` line (a failure without a message, ...) or output
          other than `error: ...` lines; (ptx) exit status other than 0, 1
          and 3, or a failure without exactly one `flashc-ptxsim: ...` line
  wrong   (flashc run) exit status 2: the kernel's output failed the
          check against the float64 reference.
The same seed gives the same inputs in the same order; --seconds and
--max-inputs bound the run (whichever comes first). Each failure is saved
under --out with its input (an IR file, a bundle directory, a PTX file),
its exact command line and its stderr, and a summary table is printed. The
exit status is 1 when a crash, hang, OOM, messy or wrong result was found.

--minimize reduces a failing IR file by deleting lines, then tokens, while
the failure (class and signature) stays the same. In --cmd, `{}` stands
for the input file (if absent, the file's path itself or an appended path
is used). --minimize-cmd reduces a flashc command line the same way.

Python 3 standard library only.
"""

import argparse
import collections
import copy
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CLASSES = ("ok", "error", "guarded", "crash", "hang", "oom", "messy", "wrong")
FAILURES = ("crash", "hang", "oom", "messy", "wrong")
CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump", "LLVM ERROR",
                 "Assertion", "terminate called", "Segmentation fault")
OOM_MARKERS = ("std::bad_alloc", "out of memory")
# flashc-opt's line for an input that crashes MLIR's own parser, recovered
# (docs/Robustness.md): a clean error for the user, counted apart.
GUARDED_MARKER = "MLIR's parser crashed on this input"
# flashc-bench measures for seconds by design: its time limit is this
# many times the others'.
BENCH_TIMEOUT_FACTOR = 4

# Integer literals a mutation may substitute, and float literals for scales.
EDGE_INTS = ("0", "1", "-1", "2", "99999999999999999999", "2147483648",
             "2147483647", "9223372036854775807", "9223372036854775808",
             "-9223372036854775808", "4294967296", "100000", "65536")
EDGE_FLOATS = ("0.0", "-0.0", "-1.0", "1.0", "0.125", "1.0e+39", "1.0e-50",
               "1.0e-300", "3.4e+38", "1.0e-45", "0x7F800000", "0xFF800000",
               "0x7FC00000", "inf", "nan", "1e400")
TYPES = ("f16", "bf16", "f32", "f64", "i32")
GOOD_TYPES = ("f16", "bf16", "f32")
ODD_TYPES = ("f64", "i32", "i1", "f8E4M3FN", "index", "complex<f32>")
PIPELINES = ("flash-attention-pipeline", "flash-cpu-pipeline",
             "flash-gpu-pipeline")
# The flash passes in pipeline order: chains are prefixes/windows of it.
PASS_ORDER = ("flash-fuse-attention", "flash-online-softmax", "flash-tile",
              "flash-split-kv", "flash-causal-skip",
              "flash-cpu-widen-operands", "flash-cpu-transpose-keys",
              "flash-cpu-direct-finalize", "flash-expand-to-cpu",
              "flash-cpu-dynamic-schedule", "flash-approximate-math")
GPU_TAIL = ("flash-to-tile",)
STRING_OPTION_VALUES = {
    "target": ("cpu", "sm_80", "sm_90a", "sm_99", "", "CPU"),
    "chip": ("sm_80", "sm_90a", "sm_70", ""),
    "format": ("isa", "isa", "isa", "bin", "fatbin", ""),
    "loop-order": ("fa2", "algorithm1", "alg1", "fa3", ""),
    "ptx": ("ptx80", "ptx83", "ptx1", "", "ptx999"),
}
GOOD_LONGS = ("0", "1", "2", "4", "8", "16", "32", "64", "128", "256")
BAD_LONGS = ("-1", "-16", "2147483648", "4294967296", "9223372036854775807",
             "9223372036854775808", "100000", "abc", "1e3", "")


# --------------------------------------------------------------------------
# Corpus: the lit tests' inputs.
# --------------------------------------------------------------------------

def strip_comment_lines(text):
    """Drops whole-line `//` comments (RUN, CHECK, prose)."""
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("//")]
    return "\n".join(lines).strip() + "\n"


def split_lit_file(text):
    """Splits a lit .mlir file on `//--- name` and `// -----` markers."""
    parts = re.split(r"^//--- .*$", text, flags=re.M)
    if len(parts) > 1:
        parts = parts[1:]  # the header before the first marker is RUN lines
    pieces = []
    for part in parts:
        pieces.extend(re.split(r"^// -----\s*$", part, flags=re.M))
    return [p for p in (strip_comment_lines(x) for x in pieces) if p.strip()]


def load_corpus(root):
    """Returns a sorted list of (name, text) inputs from test/ and examples/."""
    corpus = []
    for top in ("test", "examples"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".mlir"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    pieces = split_lit_file(f.read())
                rel = os.path.relpath(path, root)
                corpus.extend((f"{rel}#{i}", p) for i, p in enumerate(pieces))
    return corpus


# --------------------------------------------------------------------------
# Pass discovery from `flashc-opt --help`.
# --------------------------------------------------------------------------

def parse_pass_help(help_text):
    """Returns {pass name: [(option, type or None)]} for flash-* entries."""
    passes = {}
    current, indent = None, 0
    for line in help_text.splitlines():
        m = re.match(r"^(\s+)--([\w-]+)(=<(\w+)>)?\s", line + " ")
        if not m:
            continue
        depth = len(m.group(1))
        if current is not None and depth > indent:
            passes[current].append((m.group(2), m.group(4)))
            continue
        current = None
        if m.group(2).startswith("flash-"):
            current, indent = m.group(2), depth
            passes[current] = []
    return passes


def discover_passes(flashc_opt):
    out = run_quick([flashc_opt, "--help"])
    passes = parse_pass_help(out)
    if not passes:
        sys.exit(f"fuzz.py: no flash passes in `{flashc_opt} --help`")
    return passes


def run_quick(argv, stdin_text=None):
    """Runs a short helper command and returns its stdout."""
    r = subprocess.run(argv, input=stdin_text, capture_output=True,
                       text=True, timeout=60)
    return r.stdout


# --------------------------------------------------------------------------
# IR generators.
# --------------------------------------------------------------------------

def ttype(dims, elem):
    """tensor<AxBxf32>, with `?` for None."""
    shape = "".join(("?" if d is None else str(d)) + "x" for d in dims)
    return f"tensor<{shape}{elem}>"


def pick(rng, common, rare, p_rare=0.1):
    return rng.choice(rare) if rng.random() < p_rare else rng.choice(common)


def pick_size(rng):
    return pick(rng, (1, 2, 3, 4, 7, 8, 16, 17, 32, 64, 128),
                (0, None, 100000, 2**31, 2**32, 2**63 - 1, 1024), 0.05)


def pick_head_dim(rng):
    return pick(rng, (8, 16, 32, 64, 128),
                (0, 1, 3, 256, 512, 513, 100000, 2**32, None), 0.06)


def pick_dtype(rng):
    return pick(rng, GOOD_TYPES, ODD_TYPES, 0.04)


def pick_scale(rng):
    """None (the op's default) or a scale literal, often a hostile one."""
    if rng.random() < 0.5:
        return None
    return pick(rng, ("0.125", "0.25", "1.0", "0.0883883461"), EDGE_FLOATS, 0.3)


def maybe_dynamic(rng, dims, p):
    return [None if rng.random() < p else d for d in dims]


def dynamic_roles(rng, shapes, roles):
    """Makes the dims of some roles dynamic in every shape alike.

    `roles` gives, per shape, the role of each dim ('b', 'h', 'n', 'd', ...).
    Batch and sequence lengths may be dynamic in valid IR; head counts and
    head dims may not, so those become dynamic only rarely."""
    p = {"b": 0.15, "nq": 0.15, "nk": 0.15, "m": 0.1, "n": 0.1}
    dyn = {r for r in ("b", "nq", "nk", "m", "n", "h", "g", "d", "dv", "k")
           if rng.random() < p.get(r, 0.02)}
    out = []
    for dims, rs in zip(shapes, roles):
        dims = [None if r in dyn else d for d, r in zip(dims, rs)]
        out.append(maybe_dynamic(rng, dims, 0.01))
    return out


def reshape_rank(rng, shapes):
    """Sometimes drops or adds leading dims of every shape alike."""
    r = rng.random()
    if r < 0.03:
        return [s[1:] for s in shapes]
    if r < 0.05:
        return [s[2:] for s in shapes]
    if r < 0.07:
        return [[2] + s for s in shapes]
    return shapes


def perturb_one(rng, dims):
    """Changes one dim of a shape (a shape mismatch the verifier must see)."""
    if not dims:
        return dims
    dims = list(dims)
    i = rng.randrange(len(dims))
    dims[i] = rng.choice((1, 5, None, 0, (dims[i] or 1) * 2))
    return dims


ATTENTION_ROLES = (("b", "h", "nq", "d"), ("b", "g", "nk", "d"),
                   ("b", "g", "nk", "dv"), ("b", "h", "nq", "dv"), ("b", "h", "nq"))


def attention_shapes(rng, group=None):
    b, hkv, nq, nk = (pick_size(rng) for _ in range(4))
    hkv = hkv if rng.random() < 0.3 else rng.choice((1, 2, 4))
    if group is None:
        group = pick(rng, (1, 1, 2, 4, 8), (0, 3, None, 2**31), 0.05)
    hq = None if group is None or hkv is None else group * hkv
    if rng.random() < 0.05:
        hq = pick_size(rng)  # often not a multiple of hkv
    d = pick_head_dim(rng)
    dv = d if rng.random() < 0.7 else pick_head_dim(rng)
    q, k, v = [b, hq, nq, d], [b, hkv, nk, d], [b, hkv, nk, dv]
    o, lse = [b, hq, nq, dv], [b, hq, nq]
    return q, k, v, o, lse


def gen_attention(rng, name="attention"):
    shapes = dynamic_roles(rng, attention_shapes(rng), ATTENTION_ROLES)
    q, k, v, o, lse = reshape_rank(rng, shapes)
    if rng.random() < 0.04:
        o = perturb_one(rng, o)
    dt = pick_dtype(rng)
    types = [dt] * 4
    if rng.random() < 0.03:
        types[rng.randrange(4)] = pick_dtype(rng)
    tq, tk, tv, to = (ttype(s, t) for s, t in zip((q, k, v, o), types))
    with_lse = rng.random() < 0.3
    tl = ttype(perturb_one(rng, lse) if rng.random() < 0.05 else lse,
               "f32" if rng.random() < 0.95 else pick_dtype(rng))
    attrs = ""
    scale = pick_scale(rng)
    if scale is not None:
        attrs += f" scale = {scale}"
    if rng.random() < 0.5:
        attrs += " causal"
    results = f"{to}, {tl}" if with_lse else to
    lhs = "%o, %lse" if with_lse else "%o"
    rets = "%o, %lse" if with_lse else "%o"
    return (f"func.func @{name}(%q: {tq}, %k: {tk}, %v: {tv}) -> ({results}) {{\n"
            f"  {lhs} = flash.attention %q, %k, %v{attrs}\n"
            f"      : {tq}, {tk}, {tv} -> {results}\n"
            f"  return {rets} : {results}\n}}\n")


def gen_softmax(rng, name="softmax"):
    rank = pick(rng, (2, 3, 4), (0, 1, 5), 0.1)
    dims = maybe_dynamic(rng, [pick_size(rng) for _ in range(rank)], 0.15)
    tin = ttype(dims, pick(rng, ("f32",), ODD_TYPES + GOOD_TYPES, 0.1))
    tout = ttype(perturb_one(rng, dims) if rng.random() < 0.05 else dims,
                 pick_dtype(rng))
    attrs = ""
    if rng.random() < 0.25:
        attrs += " dim = " + pick(rng, [str(i) for i in range(max(rank, 1))],
                                  ("-1", str(rank), "9223372036854775807"), 0.3)
    scale = pick_scale(rng)
    if scale is not None:
        attrs += f" scale = {scale}"
    if rng.random() < 0.4:
        attrs += " causal"
    return (f"func.func @{name}(%s: {tin}) -> {tout} {{\n"
            f"  %p = flash.softmax %s{attrs} : {tin} -> {tout}\n"
            f"  return %p : {tout}\n}}\n")


def gen_matmul(rng, name="matmul"):
    lead = [pick_size(rng) for _ in range(rng.choice((0, 1, 2, 2)))]
    m, kk, n = pick_size(rng), pick_head_dim(rng), pick_size(rng)
    tb = rng.random() < 0.5
    a = lead + [m, kk]
    b = lead + ([n, kk] if tb else [kk, n])
    c = lead + [m, n]
    if rng.random() < 0.1:
        b = perturb_one(rng, b)
    if rng.random() < 0.05:
        c = perturb_one(rng, c)
    roles = ["b"] * len(lead)
    a, b, c = dynamic_roles(rng, (a, b, c), (roles + ["m", "k"],
                            roles + (["n", "k"] if tb else ["k", "n"]), roles + ["m", "n"]))
    dt = pick_dtype(rng)
    ta, tb_, tc = ttype(a, dt), ttype(b, dt), ttype(c, rng.choice(("f32", dt)))
    flag = " transpose_b" if tb else ""
    return (f"func.func @{name}(%a: {ta}, %b: {tb_}) -> {tc} {{\n"
            f"  %c = flash.matmul %a, %b{flag} : {ta}, {tb_} -> {tc}\n"
            f"  return %c : {tc}\n}}\n")


def scale_ops(rng, ts):
    """Optional explicit scaling of the scores %s; returns (ops, value)."""
    r = rng.random()
    if r < 0.4:
        return "", "%s"
    op = "arith.divf" if r < 0.7 else "arith.mulf"
    value = pick(rng, ("8.0", "0.125", "4.0"), EDGE_FLOATS, 0.2)
    const = f"  %c = arith.constant dense<{value}> : {ts}\n"
    if rng.random() < 0.05:
        const = f"  %c = arith.constant dense<{value}> : tensor<f32>\n"
    return const + f"  %t = {op} %s, %c : {ts}\n", "%t"


def gen_naive_chain(rng, name="naive"):
    """S = Q K^T, optional scaling, softmax, O = P V."""
    group = 1 if rng.random() < 0.95 else None  # flash.matmul has no GQA
    shapes = dynamic_roles(rng, attention_shapes(rng, group), ATTENTION_ROLES)
    q, k, v, o, _ = reshape_rank(rng, shapes)
    s = q[:-1] + [k[-2] if len(k) >= 2 else 1]
    if rng.random() < 0.03:
        s = perturb_one(rng, s)
    dt = pick_dtype(rng)
    tq, tk, tv, to = (ttype(x, dt) for x in (q, k, v, o))
    ts, tp = ttype(s, "f32"), ttype(s, dt if rng.random() < 0.95 else "f32")
    ops, scaled = scale_ops(rng, ts) if None not in s else ("", "%s")
    attrs = ""
    scale = pick_scale(rng)
    if scale is not None:
        attrs += f" scale = {scale}"
    if rng.random() < 0.5:
        attrs += " causal"
    if rng.random() < 0.08:
        attrs = f" dim = {rng.choice((0, 1, 2, 3, -1))}" + attrs
    return (f"func.func @{name}(%q: {tq}, %k: {tk}, %v: {tv}) -> {to} {{\n"
            f"  %s = flash.matmul %q, %k transpose_b : {tq}, {tk} -> {ts}\n"
            f"{ops}"
            f"  %p = flash.softmax {scaled}{attrs} : {ts} -> {tp}\n"
            f"  %o = flash.matmul %p, %v : {tp}, {tv} -> {to}\n"
            f"  return %o : {to}\n}}\n")


def gen_framework_chain(rng, name="framework"):
    """A framework-style graph: heads split with tensor.expand_shape, K
    transposed with linalg.transpose, then the naive chain."""
    b, h, n, d = 1, rng.choice((1, 2, 4)), rng.choice((4, 8, 16)), rng.choice((8, 16))
    dt = rng.choice(GOOD_TYPES)
    flat, heads = ttype([b, n, h * d], dt), ttype([b, n, h, d], dt)
    bhnd, bhdn = ttype([b, h, n, d], dt), ttype([b, h, d, n], dt)
    ts = ttype([b, h, n, n], "f32")
    lines = [
        f"func.func @{name}(%x: {flat}, %k: {bhnd}, %v: {bhnd}) -> {bhnd} {{",
        f"  %e = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [{b}, {n}, {h}, {d}] : {flat} into {heads}",
        f"  %i = tensor.empty() : {bhnd}",
        f"  %q = linalg.transpose ins(%e : {heads}) outs(%i : {bhnd}) permutation = [0, 2, 1, 3]",
        f"  %j = tensor.empty() : {bhdn}",
        f"  %kt = linalg.transpose ins(%k : {bhnd}) outs(%j : {bhdn}) permutation = [0, 1, 3, 2]",
        f"  %s = flash.matmul %q, %kt : {bhnd}, {bhdn} -> {ts}",
        f"  %p = flash.softmax %s causal : {ts} -> {ttype([b, h, n, n], dt)}",
        f"  %o = flash.matmul %p, %v : {ttype([b, h, n, n], dt)}, {bhnd} -> {bhnd}",
        f"  return %o : {bhnd}",
        "}",
    ]
    return "\n".join(lines) + "\n"


GENERATORS = ((gen_attention, 4), (gen_naive_chain, 3), (gen_softmax, 1),
              (gen_matmul, 1), (gen_framework_chain, 1))


def generate_module(rng):
    """One to three generated functions."""
    funcs = []
    gens, weights = zip(*GENERATORS)
    for i in range(rng.choice((1, 1, 1, 2, 3))):
        gen = rng.choices(gens, weights)[0]
        funcs.append(gen(rng, f"f{i}"))
    return "\n".join(funcs)


# --------------------------------------------------------------------------
# Mutations.
# --------------------------------------------------------------------------

TOKEN_RE = re.compile(r"\s+|%[\w#.$-]+|@[\w.$-]+|0x[0-9a-fA-F]+|-?\d+\.\d*(?:e[+-]?\d+)?"
                      r"|-?\d+|[A-Za-z_][\w.$]*|->|.", re.S)


def tokenize(text):
    return TOKEN_RE.findall(text)


def random_match(rng, pattern, text):
    matches = list(re.finditer(pattern, text))
    return rng.choice(matches) if matches else None


def replace_span(text, m, group, new):
    return text[:m.start(group)] + new + text[m.end(group):]


def mut_int(rng, text):
    m = random_match(rng, r"(?<![\w.%#@])(-?\d+)(?![\w.])", text)
    return replace_span(text, m, 1, rng.choice(EDGE_INTS)) if m else text


SHAPED_RE = r"(?:tensor|memref|vector)<((?:[\d?]+x)*)(\w+)"


def change_shaped_type(rng, text, change):
    """Rewrites one shaped type with `change(rng, dims, elem)`, usually at
    every place the same type is spelled (so that SSA uses stay alike)."""
    m = random_match(rng, SHAPED_RE, text)
    if not m:
        return text
    dims = m.group(1).split("x")[:-1]
    new_dims, elem = change(rng, dims, m.group(2))
    old = m.group(0)
    new = old[:m.start(1) - m.start()] + "".join(d + "x" for d in new_dims) + elem
    if rng.random() < 0.85:
        return re.sub(re.escape(old) + r"(?![\w])", new, text)
    return text[:m.start()] + new + text[m.end():]


def set_one_dim(values):
    def change(rng, dims, elem):
        if dims:
            dims = list(dims)
            dims[rng.randrange(len(dims))] = rng.choice(values)
        return dims, elem
    return change


def mut_type(rng, text):
    return change_shaped_type(rng, text, lambda r, d, e: (d, r.choice(TYPES)))


def mut_dynamic(rng, text):
    return change_shaped_type(rng, text, set_one_dim(("?",)))


def mut_dim_value(rng, text):
    values = ("0", "1", "3", "100000", "4294967296", "2147483648",
              "9223372036854775807", "513")
    return change_shaped_type(rng, text, set_one_dim(values))


def mut_scale(rng, text):
    m = random_match(rng, r"scale = ([^\s:,]+)", text)
    return replace_span(text, m, 1, rng.choice(EDGE_FLOATS)) if m else text


def mut_float(rng, text):
    m = random_match(rng, r"(?<![\w.])(-?\d+\.\d*(?:e[+-]?\d+)?)", text)
    return replace_span(text, m, 1, rng.choice(EDGE_FLOATS)) if m else text


def random_attrs(rng, op):
    """A fresh attribute list for flash.attention or flash.softmax, in the
    order the custom syntax wants (rarely a duplicate or a wrong one)."""
    attrs = ""
    if op == "softmax" and rng.random() < 0.3:
        attrs += " dim = " + rng.choice(("0", "1", "2", "3", "-1", "64"))
    if rng.random() < 0.5:
        attrs += " scale = " + pick(rng, ("0.125", "1.0"), EDGE_FLOATS, 0.5)
    if rng.random() < 0.5:
        attrs += " causal"
    if rng.random() < 0.05:
        attrs += rng.choice((" causal", " transpose_b", " dim = 0"))
    return attrs


def mut_attrs(rng, text):
    """Replaces the attributes of a flash.attention/softmax, or toggles a
    transpose_b / key_transposed."""
    m = random_match(rng, r"flash\.(attention|softmax) %[\w#]+(?:, %[\w#]+)*"
                          r"((?: (?:dim|scale) = [^\s:]+| causal)*)(?=\s*:)", text)
    if m and rng.random() < 0.8:
        return replace_span(text, m, 2, random_attrs(rng, m.group(1)))
    m = random_match(rng, r" (transpose_b|key_transposed)\b", text)
    if m:
        return text[:m.start()] + text[m.end():]
    m = random_match(rng, r"flash\.matmul %[\w#]+, %[\w#]+()", text)
    return replace_span(text, m, 1, " transpose_b") if m else text


def mut_dim_attr(rng, text):
    m = random_match(rng, r"dim = (-?\d+)", text)
    return replace_span(text, m, 1, rng.choice(("-1", "0", "1", "3", "4", "64",
                                                "9223372036854775807"))) if m else text


def mut_delete_token(rng, text):
    toks = tokenize(text)
    if toks:
        del toks[rng.randrange(len(toks))]
    return "".join(toks)


def mut_dup_token(rng, text):
    toks = tokenize(text)
    if toks:
        i = rng.randrange(len(toks))
        toks.insert(i, toks[i])
    return "".join(toks)


def mut_delete_line(rng, text):
    lines = text.splitlines(True)
    if lines:
        del lines[rng.randrange(len(lines))]
    return "".join(lines)


def mut_dup_line(rng, text):
    lines = text.splitlines(True)
    if lines:
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "".join(lines)


def mut_swap_lines(rng, text):
    lines = text.splitlines(True)
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def mut_truncate(rng, text):
    return text[:rng.randrange(len(text) + 1)]


def mut_empty_brackets(rng, text):
    """Empties one bracketed list (reassociations, permutations, offsets)."""
    m = random_match(rng, r"\[([^\[\]]*)\]", text)
    return replace_span(text, m, 1, rng.choice(("", "0", "-1", "0, 0"))) if m else text


# Mutations and their weights: the ones that keep the IR parseable come
# first and are the most likely.
MUTATIONS = ((mut_int, 8), (mut_type, 3), (mut_dynamic, 5), (mut_dim_value, 4),
             (mut_scale, 3), (mut_float, 2), (mut_attrs, 3), (mut_dim_attr, 1),
             (mut_delete_token, 2), (mut_dup_token, 1), (mut_delete_line, 1),
             (mut_dup_line, 1), (mut_swap_lines, 1), (mut_truncate, 1),
             (mut_empty_brackets, 2))


def mutate(rng, text):
    """Applies one to four random mutations."""
    funcs, weights = zip(*MUTATIONS)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        for _attempt in range(4):  # some mutations find nothing to change
            changed = rng.choices(funcs, weights)[0](rng, text)
            if changed != text:
                text = changed
                break
    return text


# --------------------------------------------------------------------------
# Commands.
# --------------------------------------------------------------------------

def option_value(rng, name, kind):
    if kind is None:  # a flag
        return name + rng.choice(("", "", "=true", "=false", "=1", "=maybe"))
    if kind == "string":
        values = STRING_OPTION_VALUES.get(name, ("x", ""))
        return f"{name}={rng.choice(values)}"
    if kind in ("long", "int", "uint", "ulong"):
        return f"{name}={pick(rng, GOOD_LONGS, BAD_LONGS, 0.25)}"
    return f"{name}={rng.choice(('0', '1', 'x'))}"


def pass_arg(rng, name, options, p_option=0.3):
    """`--name` or `--name=opt=v opt=v` with a random subset of options."""
    chosen = [option_value(rng, o, k) for o, k in options if rng.random() < p_option]
    if rng.random() < 0.02:
        chosen.append("bogus-option=1")
    return f"--{name}=" + " ".join(chosen) if chosen else f"--{name}"


def pipeline_arg(rng, name, options):
    arg = pass_arg(rng, name, options, 0.15)
    if name != "flash-gpu-pipeline" or "chip=" in arg or rng.random() < 0.1:
        return arg
    chip = f"chip={rng.choice(('sm_80', 'sm_90a'))} format=isa"
    return f"{arg} {chip}" if "=" in arg else f"{arg}={chip}"


def flash_passes(passes):
    return sorted(p for p in passes if p not in PIPELINES)


def pass_chain(rng, passes):
    """A window of the pipeline order, or one or two random flash passes."""
    r = rng.random()
    if r < 0.4:
        order = [p for p in PASS_ORDER if p in passes]
        if rng.random() < 0.3:
            order = order[:4] + [p for p in GPU_TAIL if p in passes]
        start = rng.randrange(len(order))
        end = rng.randrange(start, len(order))
        return order[start:end + 1]
    names = flash_passes(passes)
    return [rng.choice(names) for _ in range(1 if r < 0.85 else 2)]


def opt_command(rng, passes):
    """Returns (label, args after the input file) for flashc-opt."""
    r = rng.random()
    if r < 0.06:
        return "parse-only", rng.choice(([], ["--mlir-print-op-generic"]))
    if r < 0.35:
        names = [p for p in PIPELINES if p in passes]
        name = rng.choice(names)
        return name, [pipeline_arg(rng, name, passes[name])]
    chain = pass_chain(rng, passes)
    args = [pass_arg(rng, p, passes[p]) for p in chain]
    return chain[-1], args


# Values for flashc's flags: mostly small and valid, sometimes hostile.
SIZE_RARE = ("0", "-1", "2147483648", "4294967296", "9223372036854775807",
             "9223372036854775808", "1152921504606846977", "abc", "")
FLASHC_FLAGS = {
    "--batch": (("1", "2"), SIZE_RARE),
    "--heads": (("1", "2", "4", "8"), SIZE_RARE),
    "--kv-heads": (("1", "2", "4"), SIZE_RARE + ("3",)),
    "--seq-q": (("1", "2", "4", "7", "16", "33", "64"), SIZE_RARE),
    "--seq-kv": (("1", "4", "16", "64", "100", "128"), SIZE_RARE),
    "--head-dim": (("8", "16", "32", "64", "128"),
                   SIZE_RARE + ("1", "3", "256", "512", "513", "100000")),
    "--head-dim-v": (("8", "16", "64"), SIZE_RARE + ("100000", "513")),
    "--dtype": (("f32", "f16", "bf16"), ("f64", "i32", "", "F16")),
    "--scale": (("0.125", "0.5", "1"), ("0", "-1", "inf", "nan", "1e39",
                                        "1e-50", "1e-300", "x", "1e400")),
    "--target": (("cpu", "sm_80", "sm_90a"), ("sm_99", "gpu", "")),
    "--loop-order": (("fa2", "algorithm1"), ("fa3", "")),
    "--block-q": (("0", "4", "16", "64"), SIZE_RARE + ("65537",)),
    "--block-kv": (("0", "8", "32", "128"), SIZE_RARE + ("65537",)),
    "--splits": (("0", "1", "2", "4"), SIZE_RARE + ("1000",)),
    "--num-threads": (("0", "1", "2"), ("-1", "1024", "1025", "4294967296", "x")),
    "--sram-bytes": (("0", "65536", "1048576"), SIZE_RARE + ("1",)),
}


def flashc_flag(rng, flag):
    common, rare = FLASHC_FLAGS[flag]
    return [flag, pick(rng, common, rare, 0.12)]


def run_flags(rng):
    args = ["--iters", pick(rng, ("1", "1", "2"), ("-1", "0", "x", "-5"), 0.08)]
    if rng.random() < 0.3:
        args += ["--check-rows", pick(rng, ("1", "4"), ("0", "-1", "x"), 0.3)]
    if rng.random() < 0.3:
        args += ["--seed", rng.choice(("1", "42", "-1", "18446744073709551616"))]
    if rng.random() < 0.3:
        args += ["--simulate"]
    if rng.random() < 0.1:
        args += ["--versus", rng.choice((
            "--block-kv 32", "--scalef off", "--num-threads 1", "--splits 2",
            "--kt-reuse off", "--kt-reuse x",
            "--block-q 16 --block-kv 16", "", " ", "--heads 2", "--block-kv x",
            "--vector-lanes 12", "--ablate pv", "--versus --splits"))]
    for flag, files in (("--out", ("out.npy", "/dev/full", "nodir/x.npy")),
                        ("--lse", ("lse.npy", "/dev/full")),
                        ("--q", ("bad.npy", "short.npy", "/dev/null", "missing.npy")),
                        ("--k", ("bad.npy", "short.npy"))):
        if rng.random() < 0.06:
            args += [flag, rng.choice(files)]
    return args


def compile_flags(rng, gpu):
    emits = ("mlir", "ptx", "manifest") if gpu else ("mlir", "llvm")
    emit = pick(rng, emits, ("mlir", "llvm", "ptx", "manifest", "cubin", "x"), 0.1)
    args = ["--emit", emit]
    if emit == "cubin" or rng.random() < 0.2:
        args += ["-o", rng.choice(("out.txt", "out.txt", "/dev/full"))]
    if emit == "mlir" and rng.random() < 0.3:
        stages = ("fuse", "online", "tiled", "gpu", "nvvm", "binary") if gpu else \
                 ("fuse", "online", "tiled", "bufferized", "cpu", "llvm")
        args += ["--stop-after", pick(rng, stages, ("x", "", "fuse,online"), 0.1)]
    return args


def problem_flags(rng):
    """Target, dtype and heads chosen to fit together most of the time; the
    other problem and schedule flags at random."""
    gpu = rng.random() < 0.35
    args = []
    if gpu or rng.random() < 0.3:
        args += ["--target", pick(rng, ("sm_80", "sm_90a") if gpu else ("cpu",),
                                  FLASHC_FLAGS["--target"][1], 0.05)]
    if gpu or rng.random() < 0.5:
        args += ["--dtype", pick(rng, ("f16", "bf16") if gpu else GOOD_TYPES,
                                 FLASHC_FLAGS["--dtype"][1], 0.05)]
    if rng.random() < 0.6:
        kv = rng.choice((1, 2, 4))
        args += ["--kv-heads", str(kv), "--heads", str(kv * rng.choice((1, 2, 4)))]
    for flag in FLASHC_FLAGS:
        if flag not in args and rng.random() < 0.35:
            args += flashc_flag(rng, flag)
    return args, gpu


def list_value(rng, good, bad, n=1):
    return ",".join(pick(rng, good, bad, 0.15) for _ in range(n))


def bundle_command(rng):
    """`flashc bundle` with short lists: the default lists would compile
    dozens of kernels, past the time limit."""
    args = ["bundle"]
    if rng.random() < 0.95:
        args += ["-o", pick(rng, ("bundle",), ("/dev/full/x", "/proc/version", ""), 0.1)]
    lists = {"--targets": (("sm_80", "sm_90a"), ("sm_99", "cpu", "", ",")),
             "--dtypes": (("f16", "bf16"), ("f32", "x", "")),
             "--head-dims": (("64", "128"), ("0", "32", "512", "100000", "-1", "x", "")),
             "--groups": (("1", "4"), ("0", "3", "-1", "65537", "x")),
             "--variants": (("prefill", "decode"), ("x", ""))}
    longer = rng.choice(list(lists))
    for flag, (good, bad) in lists.items():
        if rng.random() < 0.97:
            n = 2 if flag == longer and rng.random() < 0.3 else 1
            args += [flag, list_value(rng, good, bad, n)]
    for flag in ("--causal", "--lse"):
        args += [flag, pick(rng, ("yes", "no"), ("both", "maybe", ""), 0.1)]
    if rng.random() < 0.9:
        args += ["--no-assemble"]
    return "flashc bundle", args


def bench_command(rng):
    """flashc-bench on one small problem, one iteration. A benchmark
    measures each of its 4 rows (flashc and BLAS, causal or not) for about
    a second, so it gets BENCH_TIMEOUT_FACTOR times the time limit."""
    args = ["--sizes", list_value(rng, ("16", "64", "100"),
                                  ("0", "-1", "x", "", "9223372036854775807")),
            "--head-dims", list_value(rng, ("16", "64"), ("0", "513", "x", ""))]
    args += ["--iters", pick(rng, ("1",), ("0", "-1", "x"), 0.1)]
    if rng.random() < 0.5:
        args += ["--heads", pick(rng, ("1", "2"), ("0", "-1", "x", "4294967296"), 0.15)]
    if rng.random() < 0.3:
        args += ["--json", pick(rng, ("bench.json",), ("/dev/full", "nodir/x.json"), 0.3)]
    return "flashc-bench", args


def flashc_command(rng):
    """Returns (label, argv tail) for a flashc command line, or now and then
    a flashc-bench one (label "flashc-bench")."""
    r = rng.random()
    if r < 0.06:
        return bundle_command(rng)
    if r < 0.10:
        return bench_command(rng)
    sub = rng.choices(("run", "compile", "cost"), (4, 4, 2))[0]
    problem, gpu = problem_flags(rng)
    args = [sub] + problem
    if sub != "run" and rng.random() < 0.25:
        args += ["--lse"]
    if rng.random() < 0.25:
        args += ["--causal"]
    if sub == "run":
        args += run_flags(rng)
        if gpu and "--simulate" not in args and rng.random() < 0.8:
            args += ["--simulate"]
    elif sub == "compile":
        args += compile_flags(rng, gpu)
    elif rng.random() < 0.3:
        args += ["--json"]
    if rng.random() < 0.02:
        args += [rng.choice(("--bogus", "stray", "--seq-q"))]
    return f"flashc {sub}", args


# --------------------------------------------------------------------------
# PTX mutations (the ptx target, and the PTX files of the bundle target).
# --------------------------------------------------------------------------

# Integers for PTX directives, register numbers, sizes and offsets.
PTX_EDGE_INTS = ("0", "1", "-1", "3", "7", "1023", "1024", "1025", "65535",
                 "65536", "2147483647", "2147483648", "4294967295",
                 "4294967296", "9223372036854775807", "9223372036854775808",
                 "18446744073709551615", "18446744073709551616",
                 "99999999999999999999", "0x7fffffff", "0xffffffffffffffff")
PTX_TYPES = (".u8", ".u16", ".u32", ".u64", ".s32", ".s64", ".b8", ".b16",
             ".b32", ".b64", ".b128", ".f16", ".f16x2", ".f32", ".f64", ".pred")
DIRECTIVE_RE = re.compile(r"\.(?:align|reqntid|maxntid|maxnreg|minnctapersm|"
                          r"address_size|version)[ \t]+([^;\n{(]*)")
LABEL_DEF_RE = re.compile(r"^(\$?[\w$]+):", re.M)
BRANCH_RE = re.compile(r"\bbra(?:\.uni)?\s+(\$?[\w$]+)\s*;")
REGISTER_RE = re.compile(r"%(r|rd|rs|p|f|fd|h|hh)(\d+)\b")
ADDRESS_RE = re.compile(r"\[(%?[\w$]+)((?:\s*[+-]\s*\d+)?)\]")


def ptx_edge(rng):
    return rng.choice(PTX_EDGE_INTS)


def is_instruction(line):
    s = line.strip()
    return s.endswith(";") and not s.startswith((".", "//", "{", "}"))


def instruction_lines(lines):
    return [i for i, l in enumerate(lines) if is_instruction(l)]


def ptx_mut_directive(rng, text):
    """A number of .align, .reqntid, .maxnreg, .version, ... set to an edge
    value."""
    matches = collections.defaultdict(list)
    for m in DIRECTIVE_RE.finditer(text):
        matches[m.group(0).split(None, 1)[0]].append(m)
    if not matches:
        return text
    # A directive first, so that the many .align of the parameters do not
    # crowd out the rest.
    m = rng.choice(matches[rng.choice(sorted(matches))])
    nums = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?!\w)", m.group(1)))
    if not nums:
        return text
    n = rng.choice(nums)
    start = m.start(1) + n.start()
    return text[:start] + ptx_edge(rng) + text[m.start(1) + n.end():]


def ptx_mut_reg_count(rng, text):
    m = random_match(rng, r"\.reg\s+\.\w+\s+%\w+<(\d+)>", text)
    return replace_span(text, m, 1, ptx_edge(rng)) if m else text


def ptx_mut_array_size(rng, text):
    """An array size of a declaration (flash_smem[] included)."""
    m = random_match(rng, r"(?m)^[^\n;]*\.(?:shared|local|global|const|param)[^\n;]*"
                          r"\w\[(\d*)\]", text)
    if not m:
        return text
    return replace_span(text, m, 1, rng.choice(("",) + PTX_EDGE_INTS))


def ptx_mut_declare(rng, text):
    """Adds a .local, .shared, .reg or .global declaration of an edge size."""
    space = rng.choice(("local", "shared", "reg", "global", "const"))
    size, align = ptx_edge(rng), rng.choice(("1", "4", "16", "3", "0", "65536",
                                             "4294967296"))
    if space == "reg":
        decl = f"\t.reg .b32 \t%fz<{size}>;\n"
    else:
        decl = f"\t.{space} .align {align} .b8 fuzz_{space}[{size}];\n"
    if space in ("global", "const"):
        m = re.search(r"^\.address_size[^\n]*\n", text, re.M)
        return text[:m.end()] + decl + text[m.end():] if m else decl + text
    m = random_match(rng, r"(?m)^\{\n", text)
    return text[:m.end()] + decl + text[m.end():] if m else text


def ptx_mut_reqntid(rng, text):
    m = random_match(rng, r"(?m)^\.(?:reqntid|maxntid)[^\n]*", text)
    if not m:
        return text
    r = rng.random()
    if r < 0.2:
        new = ""
    elif r < 0.3:
        new = m.group(0) + "\n" + m.group(0)
    else:
        dims = [rng.choice(("1", "128", "32", "0", "1024", "1025", "2048",
                            "64", "4294967297", "-1")) for _ in range(rng.choice((1, 2, 3)))]
        new = rng.choice((".reqntid ", ".maxntid ")) + ", ".join(dims)
    return text[:m.start()] + new + text[m.end():]


def ptx_mut_params(rng, text):
    """Changes an .entry's parameter list: one deleted, duplicated, retyped,
    renamed after another, made an array, or the list emptied."""
    m = random_match(rng, r"\.entry\s+[\w$]+\(\n((?:[^)]*\n)*?)\)", text)
    if not m:
        return text
    params = m.group(1).splitlines(True)
    if not params:
        return text
    i = rng.randrange(len(params))
    r = rng.random()
    if r < 0.2:
        del params[i]
        if i == len(params) and params:  # the last one has no comma
            params[-1] = params[-1].replace(",\n", "\n")
    elif r < 0.35:
        params.insert(i, params[i].rstrip("\n").rstrip(",") + ",\n")
    elif r < 0.55:
        params[i] = re.sub(r"\.(u64|b64|s64)\b", rng.choice(PTX_TYPES)[1:],
                           params[i], count=1)
    elif r < 0.7:
        other = re.search(r"([\w$]+)\s*,?\s*$", rng.choice(params))
        if other:
            params[i] = re.sub(r"[\w$]+(\s*,?\s*)$",
                               lambda n: other.group(1) + n.group(1), params[i])
    elif r < 0.85:
        params[i] = re.sub(r"\.param\s+\.\w+(?:\s+\.ptr)?(?:\s+\.align\s+\d+)?",
                           f".param .align {rng.choice(('1', '8', '0', '3'))} .b8",
                           params[i], count=1)
        size = ptx_edge(rng)
        params[i] = re.sub(r"([\w$]+)(\s*,?\s*)$",
                           lambda n: f"{n.group(1)}[{size}]{n.group(2)}", params[i])
    else:
        params = []
    return text[:m.start(1)] + "".join(params) + text[m.end(1):]


DESCRIPTOR_VALUES = ("0", "1", "-1", "2147483648", "4294967296",
                     "9223372036854775808", "x", "", "1e300", "nan", "0x1p-3",
                     "sm_90a", "bf16", "B*ceildiv(Nq,0)", "(" * 70 + "B" + ")" * 70)


def ptx_mut_descriptor(rng, text):
    """Changes the `// flashc-variant` / `// flashc-kernel` lines: a field's
    value, a field dropped, duplicated or added, a line dropped or doubled."""
    m = random_match(rng, r"(?m)^// flashc-(?:variant|kernel) ([^\n]*)", text)
    if not m:
        return text
    line = m.group(0)
    fields = m.group(1).split(" ")
    r = rng.random()
    if r < 0.15:
        return text[:m.start()] + text[m.end() + 1:]
    if r < 0.25:
        return text[:m.end()] + "\n" + line + text[m.end():]
    i = rng.randrange(len(fields))
    key = fields[i].split("=", 1)[0]
    if r < 0.65:
        fields[i] = f"{key}={rng.choice(DESCRIPTOR_VALUES)}"
    elif r < 0.75:
        del fields[i]
    elif r < 0.85:
        fields.insert(i, f"{key}={rng.choice(DESCRIPTOR_VALUES)}")
    elif r < 0.95:
        fields.insert(i, rng.choice(("extra=1", "=", "novalue", "\x01=\x7f", "a=b=c")))
    else:
        fields = [f.replace("=", " = ") for f in fields]
    return text[:m.start(1)] + " ".join(fields) + text[m.end(1):]


def ptx_mut_instruction(rng, text):
    """An instruction deleted, duplicated or moved elsewhere in the body."""
    lines = text.splitlines(True)
    idx = instruction_lines(lines)
    if not idx:
        return text
    i = rng.choice(idx)
    r = rng.random()
    if r < 0.4:
        del lines[i]
    elif r < 0.8:
        lines.insert(i, lines[i])
    else:
        line = lines.pop(i)
        lines.insert(rng.choice(idx[:-1] or [0]), line)
    return "".join(lines)


def ptx_mut_branch(rng, text):
    """A branch sent to another label (often an earlier one: a loop), or an
    unconditional backward branch added."""
    labels = [(m.start(), m.group(1)) for m in LABEL_DEF_RE.finditer(text)]
    if not labels:
        return text
    if rng.random() < 0.7:
        m = random_match(rng, BRANCH_RE, text)
        if m:
            earlier = [name for pos, name in labels if pos < m.start()]
            target = rng.choice(earlier if earlier and rng.random() < 0.7
                                else [name for _, name in labels])
            return replace_span(text, m, 1, target)
    lines = text.splitlines(True)
    idx = instruction_lines(lines)
    if not idx:
        return text
    i = rng.choice(idx)
    pos = sum(len(l) for l in lines[:i])
    earlier = [name for p, name in labels if p < pos] or [labels[0][1]]
    lines.insert(i, f"\tbra.uni \t{rng.choice(earlier)};\n")
    return "".join(lines)


def ptx_mut_register(rng, text):
    """A register use renumbered, often past its declared count."""
    m = random_match(rng, REGISTER_RE, text)
    if not m:
        return text
    count = re.search(r"%" + m.group(1) + r"<(\d+)>", text)
    values = PTX_EDGE_INTS[:3] + ("2147483648", "4294967296")
    if count:
        n = int(count.group(1))
        values += (str(n), str(n + 1), str(n - 1))
    return replace_span(text, m, 2, rng.choice(values))


def ptx_mut_address(rng, text):
    """An address operand's offset set to an edge value."""
    m = random_match(rng, ADDRESS_RE, text)
    if not m:
        return text
    off = rng.choice(("+2147483647", "+2147483648", "-1", "+4294967296",
                      "+9223372036854775807", "-9223372036854775808", "+65536",
                      "+18446744073709551615", "-16", "+1", "+3"))
    return replace_span(text, m, 2, off)


def ptx_mut_opcode(rng, text):
    """An instruction's opcode swapped for another one's, or a type suffix
    or vector width changed."""
    lines = text.splitlines(True)
    idx = instruction_lines(lines)
    if len(idx) < 2:
        return text
    i = rng.choice(idx)
    head = re.match(r"(\s*(?:@!?%\w+\s+)?)([\w.]+)", lines[i])
    if not head:
        return text
    r = rng.random()
    if r < 0.5:
        other = re.match(r"\s*(?:@!?%\w+\s+)?([\w.]+)", lines[rng.choice(idx)])
        new = other.group(1) if other else head.group(2)
    elif r < 0.8:
        parts = head.group(2).split(".")
        j = rng.randrange(len(parts))
        parts[j] = rng.choice(PTX_TYPES)[1:] if j else parts[j]
        new = ".".join(parts)
    else:
        new = re.sub(r"\.v\d\b", rng.choice((".v8", ".v1", ".v3", ".v16")),
                     head.group(2))
    lines[i] = lines[i][:head.start(2)] + new + lines[i][head.end(2):]
    return "".join(lines)


# PTX mutations and their weights; the IR's token and line mutations too.
PTX_MUTATIONS = ((ptx_mut_directive, 3), (ptx_mut_reg_count, 2),
                 (ptx_mut_array_size, 2), (ptx_mut_declare, 2),
                 (ptx_mut_reqntid, 2), (ptx_mut_params, 3),
                 (ptx_mut_descriptor, 1), (ptx_mut_instruction, 4),
                 (ptx_mut_branch, 3), (ptx_mut_register, 2),
                 (ptx_mut_address, 3), (ptx_mut_opcode, 2),
                 (mut_int, 3), (mut_delete_token, 2), (mut_dup_token, 1),
                 (mut_delete_line, 1), (mut_dup_line, 1), (mut_swap_lines, 1),
                 (mut_truncate, 1))


def mutate_ptx(rng, text, descriptor_weight=None):
    """Applies one to three PTX mutations; returns (text, names)."""
    table = PTX_MUTATIONS
    if descriptor_weight is not None:
        table = tuple((f, descriptor_weight if f is ptx_mut_descriptor else w)
                      for f, w in table)
    funcs, weights = zip(*table)
    names = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        for _attempt in range(4):
            f = rng.choices(funcs, weights)[0]
            changed = f(rng, text)
            if changed != text:
                text = changed
                names.append(f.__name__.replace("ptx_mut_", "").replace("mut_", ""))
                break
    return text, names


# --------------------------------------------------------------------------
# The ptx target: flashc-ptxsim on a mutated kernel of the test bundle.
# --------------------------------------------------------------------------

FNV_PRIME = 0x100000001b3
FNV_OFFSET = 0xcbf29ce484222325
MASK64 = (1 << 64) - 1


def fnv1a(data, h=FNV_OFFSET):
    """64-bit FNV-1a, as lib/Runtime/KernelVariant.cpp checks PTX files."""
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


def fnv1a_zeros(h, count):
    """FNV-1a state after `count` more zero bytes (x ^ 0 = x)."""
    return (h * pow(FNV_PRIME, count, 1 << 64)) & MASK64


def eval_grid(grid, sizes):
    """Evaluates a manifest's grid (a list of factors, each
    {"product": [size names and integers], "ceildiv": d}) over `sizes`."""
    total = 1
    for factor in grid:
        product = 1
        for operand in factor["product"]:
            product *= sizes[operand] if isinstance(operand, str) else operand
        total *= -(-product // factor.get("ceildiv", 1))
    return total


def grid_text(grid):
    """The grid as the PTX descriptor prints it (B*ceildiv(Nq,16)*splits);
    a malformed grid as its JSON, which no descriptor matches."""
    try:
        parts = []
        for factor in grid:
            product = "*".join(str(o) for o in factor["product"])
            d = factor.get("ceildiv", 1)
            parts.append(product if d == 1 else f"ceildiv({product},{d})")
        return "*".join(parts)
    except (TypeError, KeyError, AttributeError):
        return json.dumps(grid, separators=(",", ":"))


def ptx_launch(rng, variant, kernel_key, hostile_rate=0.1):
    """flashc-ptxsim's launch flags for one kernel of a test-bundle variant,
    on a small problem: B = 1, Nq = 20 (prefill) or 3 (decode), Nk = 30 or
    200 in two splits, the variant's group and head dims; with probability
    `hostile_rate`, a hostile launch (0: a clean one, with the default
    instruction budget and no other flag drawn). The parameters follow the manifest's
    list of arguments by name, so that a kernel argument added later
    raises here instead of leaving every launch refused."""
    decode = variant["decode"]
    g, d, dv = variant["group"], variant["head_dim"], variant["head_dim_v"]
    nq, nk, splits = (3, 200, 2) if decode else (20, 30, 1)
    kernel = variant["kernels"][kernel_key]
    grid = eval_grid(kernel["grid"], {"B": 1, "Nq": nq, "Nk": nk, "splits": splits})
    dt = variant["dtype"]
    values = {
        "q": f"buf:zeros:{dt}:1x{g}x{nq}x{d}",
        "k": f"buf:zeros:{dt}:1x{nk}x{d}",
        "v": f"buf:zeros:{dt}:1x{nk}x{dv}",
        "out": f"buf:zeros:{dt}:1x{g}x{nq}x{dv}",
        "lse": f"buf:zeros:f32:1x{g}x{nq}",
        "ws_out": f"buf:zeros:f32:{splits}x1x{g}x{nq}x{dv}" if decode
                  else "buf:zeros:f32:1",
        "ws_lse": f"buf:zeros:f32:{splits * g * nq}" if decode
                  else "buf:zeros:f32:1",
        "B": 1, "Nq": nq, "Nk": nk, "splits": splits,
        "q_stride_b": g * nq * d, "q_stride_h": nq * d, "q_stride_n": d,
        "k_stride_b": nk * d, "k_stride_h": nk * d, "k_stride_n": d,
        "v_stride_b": nk * dv, "v_stride_h": nk * dv, "v_stride_n": dv,
        "out_stride_b": g * nq * dv, "out_stride_h": nq * dv,
        "out_stride_n": dv,
        "scale": "f32:0.125"}
    params = []
    for argument in variant["arguments"]:
        name = argument["name"]
        if name not in values:
            raise ValueError(f"fuzz.py: no value for kernel argument '{name}' "
                             "of the test bundle's manifest")
        value = values[name]
        params.append(value if isinstance(value, str) else f"u64:{value}")
    sizes = [i for i, p in enumerate(params) if p.startswith("u64:")]
    block, shared = kernel["block"], kernel["shared_bytes"]
    args = ["--kernel", kernel["name"], "--grid", str(grid), "--block", str(block)]
    if rng.random() < hostile_rate:
        # A hostile launch: a size or stride at an edge value, a grid or block
        # beyond the limits, too little dynamic shared memory.
        r = rng.random()
        if r < 0.5:
            i = rng.choice(sizes)
            params[i] = "u64:" + rng.choice(("0", "4294967296", "9223372036854775807",
                                             "18446744073709551615", "100000"))
        elif r < 0.7:
            # (A valid grid of many CTAs would run for long: not a hang.)
            args[3] = rng.choice(("0", "2147483648", "4294967296", "-1", "1,65536",
                                  "1,1,65536", "3", "1,2,2"))
        elif r < 0.85:
            args[5] = rng.choice(("0", "1025", "1024", "32", "127"))
        else:
            shared = rng.choice((0, 1, shared - 1, 1 << 32, 1 << 31))
    if shared:
        args += ["--dynamic-shared", str(shared)]
    for p in params:
        args += ["--param", p]
    if hostile_rate == 0:
        # A clean launch: the default budget, nothing else drawn.
        return args + ["--max-instructions", "20000"]
    args += ["--max-instructions", pick(rng, ("20000",), ("1", "1000", "200000"), 0.1)]
    if rng.random() < 0.1:
        args += ["--workers", rng.choice(("1", "3"))]
    if rng.random() < 0.05:
        args += ["--memory-budget", rng.choice(("1", "100000", "70000000"))]
    return args


def ptx_case(ctx, rng, index):
    name = rng.choice(ctx.bundle.launchable)
    variant = ctx.bundle.by_file[name]
    key = "combine" if "combine" in variant["kernels"] and rng.random() < 0.3 \
        else "forward"
    text, names = mutate_ptx(rng, ctx.bundle.ptx[name].decode("latin-1"), 0.2)
    args = ptx_launch(rng, variant, key)
    return Case(index, "flashc-ptxsim", f"ptxsim {key}", args,
                text.encode("latin-1"), f"{name}: " + ", ".join(names))


# --------------------------------------------------------------------------
# The bundle target: a mutated copy of the test bundle, opened and used
# through the C API (unittests/Runtime/BundleLoadTarget.c).
# --------------------------------------------------------------------------

class TestBundle:
    """The runtime tests' bundle, read once: the manifest and its files."""

    def __init__(self, directory):
        with open(os.path.join(directory, "manifest.json"), "rb") as f:
            self.manifest_bytes = f.read()
        self.manifest = json.loads(self.manifest_bytes)
        self.ptx, self.by_file = {}, {}
        for v in self.manifest["variants"]:
            with open(os.path.join(directory, v["ptx"]), "rb") as f:
                self.ptx[v["ptx"]] = f.read()
            self.by_file[v["ptx"]] = v
        # The kernels the ptx target can launch: flashc-ptxsim's command line
        # cannot build the tensor maps of sm_90a's TMA kernels (the bundle
        # target's simulator device builds them).
        self.launchable = sorted(
            name for name, v in self.by_file.items()
            if not any(a["name"].endswith("_map") for a in v["arguments"]))


def call_name(variant_id):
    """The BundleLoadTarget call that runs a variant of the test bundle."""
    m = re.search(r"((?:causal-)?(?:lse-)?(?:prefill|decode))$", variant_id)
    return m.group(1) if m else None


ALL_CALLS = ("prefill", "causal-prefill", "lse-prefill", "causal-lse-prefill",
             "decode", "causal-decode", "lse-decode", "causal-lse-decode")

# Values a manifest field may become: numbers at the edges, NaN-ish and huge
# strings, other types.
JSON_EDGES = (0, -1, 1, 2**31, 2**32, 2**63, 2**64, -2**63, 1e300, -1e300,
              1e-300, 0.5, -0.0, float("nan"), float("inf"), float("-inf"),
              "NaN", "nan", "inf", "-inf", "Infinity", "1e400", "0x1p-3",
              "0x1p+1024", "-0x1p-3", "", "0", "1", "x" * 100000, "\u0000",
              "\ud800", "é", True, False, None, [], {}, [1], {"a": 1})
ID_EDGES = ("..", "../x", "a/b", "/etc/passwd", "x\u0000y", "a\u0001b", "\n",
            ".hidden", "A" * 201, "A" * 200, "", "-", "a b", "é", "\ud800",
            "sm_80-f16-g4-d64-prefill", "manifest", "x" * 100000)
NEW_IDS = ("x..y", "A" * 200, "-", "_", "a.b.c", "sm_80-f16-g4-d64-prefill.ptx",
           "manifest.json", "0")
GRID_EDGES = ("B*ceildiv(Nq,16)", [], {}, 4, None, [[["B"]]],
              [{"product": []}], [{"product": "B"}], [{"ceildiv": 4}],
              [{"product": ["B"]}] * 9, [{"product": ["B"] * 9}],
              [{"product": [9223372036854775807, 9223372036854775807]}],
              [{"product": ["Nq"], "ceildiv": 0}],
              [{"product": ["Nq"], "ceildiv": -1}], [{"product": [-1]}],
              [{"product": [0]}], [{"product": [2147483647]}],
              [{"product": [2147483648]}],
              [{"product": ["B", "Nq", "Nk", "splits", 4294967296]}],
              [{"product": ["x"]}], [{"product": ["\u0000"]}],
              [{"product": [1.5]}], [{"product": ["B"], "ceildiv": "4"}],
              [{"product": ["B"]}, {"product": ["Nq"], "ceildiv": 16},
               {"product": [2]}],
              [{"product": [1]}], [{"product": ["Nk"] * 8}],
              [{"product": ["Nk"] * 4}] * 8)
RAW_NUMBERS = ("1e99999", "-0", "00012", "1.", ".5", "+1", "0x10", "1_000",
               "NaN", "Infinity", "-Infinity", "9" * 400, "1e-99999", "-",
               "2e", "0.0000000000000000000000000000001e400")


def json_paths(obj, path=()):
    """Every (path, value) inside `obj`, the root excluded."""
    items = obj.items() if isinstance(obj, dict) else \
        enumerate(obj) if isinstance(obj, list) else ()
    out = []
    for k, v in items:
        out.append((path + (k,), v))
        out.extend(json_paths(v, path + (k,)))
    return out


def json_get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


def swapped_type(rng, value):
    if isinstance(value, bool):
        return rng.choice(("true", 1, 0, None, [value]))
    if isinstance(value, (int, float)):
        return rng.choice((str(value), None, [value], {"v": value}, True))
    if isinstance(value, str):
        try:
            return rng.choice((int(value), float(value), None, [value]))
        except ValueError:
            return rng.choice((0, None, [value], {"v": value}, True))
    if isinstance(value, list):
        return rng.choice(({str(i): v for i, v in enumerate(value)}, None, "[]", 0))
    if isinstance(value, dict):
        return rng.choice((list(value.values()), None, "{}", 0))
    return rng.choice((0, "", "null", [], {}))


class BundleSpec:
    """A bundle to write: its directory name and its entries, each
    ("bytes", data), ("sparse", data, size), ("dir",), ("fifo",) or
    ("symlink", target); an absent name is no file."""

    def __init__(self, name, entries):
        self.name, self.entries = name, entries

    def materialize(self, parent):
        root = os.path.join(parent, self.name)
        os.makedirs(root)
        for name in sorted(self.entries):
            entry, path = self.entries[name], os.path.join(root, name)
            kind = entry[0]
            if kind == "bytes":
                with open(path, "wb") as f:
                    f.write(entry[1])
            elif kind == "sparse":
                with open(path, "wb") as f:
                    f.write(entry[1])
                try:
                    os.truncate(path, entry[2])
                except OSError:
                    pass
            elif kind == "dir":
                os.mkdir(path)
            elif kind == "fifo":
                os.mkfifo(path)
            elif kind == "symlink":
                os.symlink(entry[1], path)
        return root

    def checksum(self, name):
        """The FNV-1a of a file as written, or None if it is not a file."""
        entry = self.entries.get(name)
        if entry is None or entry[0] not in ("bytes", "sparse"):
            return None
        h = fnv1a(entry[1])
        if entry[0] == "sparse" and entry[2] > len(entry[1]):
            h = fnv1a_zeros(h, entry[2] - len(entry[1]))
        return f"{h:016x}"


def mutate_manifest_json(rng, manifest):
    """One change to the parsed manifest; returns (manifest, placeholders,
    touched variant ids), placeholders being {string: raw JSON text} to
    substitute after serialising (duplicate keys, deep nesting, raw
    numbers)."""
    raw = {}
    touched = set()
    if not isinstance(manifest, dict):
        return manifest, raw, touched
    variants = manifest.get("variants")
    if not isinstance(variants, list):
        variants = []

    def placeholder(text):
        key = f"@@fuzz{len(raw)}@@"
        raw[json.dumps(key)] = text
        return key

    r = rng.random()
    dicts = [v for v in variants if isinstance(v, dict)]
    if not dicts:
        r = min(r, 0.17)
    if r < 0.12:
        # The variants list: emptied, an entry duplicated, dropped, moved, or
        # the list of another type.
        s = rng.random()
        if s < 0.15:
            manifest["variants"] = []
        elif s < 0.4 and variants:
            i = rng.randrange(len(variants))
            variants.insert(rng.randrange(len(variants) + 1), copy.deepcopy(variants[i]))
        elif s < 0.55 and variants:
            del variants[rng.randrange(len(variants))]
        elif s < 0.7:
            rng.shuffle(variants)
        elif s < 0.8:
            manifest["variants"] = variants * rng.choice((50, 1000))
        else:
            manifest["variants"] = rng.choice(({"0": variants[:1]}, None, "x", 0,
                                               [None], [[]], ["sm_80-f16-g4-d64-prefill"]))
        return manifest, raw, touched
    if r < 0.18:
        # The top level.
        s = rng.random()
        if s < 0.3:
            manifest["format"] = rng.choice(("flashc-bundle-2", "", None, 1,
                                             "flashc-bundle-1\u0000", "FLASHC-BUNDLE-1"))
        elif s < 0.5:
            manifest[rng.choice(("extra", "", "\u0000", "variants\u0000"))] = \
                rng.choice(JSON_EDGES)
        elif s < 0.7:
            manifest.pop(rng.choice(("format", "variants")), None)
        else:
            depth = rng.choice((65, 1000, 100000))
            manifest[rng.choice(("format", "variants", "extra"))] = placeholder(
                rng.choice(("[" * depth + "]" * depth,
                            '{"a":' * depth + "1" + "}" * depth)))
        return manifest, raw, touched
    v = rng.choice(dicts)
    if isinstance(v.get("id"), str):
        touched.add(v["id"])
    if r < 0.3:
        v["id"] = rng.choice(ID_EDGES)
        return manifest, raw, touched
    kernels = v.get("kernels")
    if r < 0.4 and isinstance(kernels, dict) and kernels:
        # The grid of a kernel.
        k = kernels[rng.choice(sorted(kernels))]
        if isinstance(k, dict):
            k["grid"] = rng.choice(GRID_EDGES)
        return manifest, raw, touched
    if r < 0.5:
        # A key duplicated with another value, dropped or renamed.
        paths = [p for p, _ in json_paths(v) if isinstance(p[-1], str)]
        if not paths:
            return manifest, raw, touched
        path = rng.choice(paths)
        parent = json_get(v, path[:-1])
        s = rng.random()
        if s < 0.4:
            value = json.dumps(rng.choice(JSON_EDGES + (parent[path[-1]],)))
            dup = {}
            for key in parent:
                if key == path[-1] and rng.random() < 0.5:
                    dup[placeholder(json.dumps(key))] = placeholder(value)
                dup[key] = parent[key]
                if key == path[-1]:
                    dup[placeholder(json.dumps(key))] = placeholder(value)
            parent.clear()
            parent.update(dup)
        elif s < 0.8:
            del parent[path[-1]]
        else:
            parent[path[-1] + rng.choice(("x", "\u0000", " "))] = parent.pop(path[-1])
        return manifest, raw, touched
    # A value (mostly a variant's own or a kernel's): an edge value, another
    # type, or a raw number.
    paths = json_paths(v)
    if not paths:
        return manifest, raw, touched
    top = [pv for pv in paths if len(pv[0]) == 1]
    kernel = [pv for pv in paths if len(pv[0]) == 3 and pv[0][0] == "kernels"]
    s = rng.random()
    path, value = rng.choice(top if s < 0.5 and top else
                             kernel if s < 0.75 and kernel else paths)
    parent = json_get(v, path[:-1])
    s = rng.random()
    if s < 0.5:
        parent[path[-1]] = rng.choice(JSON_EDGES)
    elif s < 0.8:
        parent[path[-1]] = swapped_type(rng, value)
    else:
        parent[path[-1]] = placeholder(rng.choice(RAW_NUMBERS))
    return manifest, raw, touched


def mutate_manifest_text(rng, data):
    """A change to the manifest's bytes: the IR's token and line mutations,
    or bytes JSON does not allow."""
    r = rng.random()
    if r < 0.5:
        text = data.decode("latin-1")
        funcs = (mut_int, mut_delete_token, mut_dup_token, mut_delete_line,
                 mut_dup_line, mut_swap_lines, mut_truncate)
        return rng.choice(funcs)(rng, text).encode("latin-1")
    pos = rng.randrange(len(data) + 1)
    insert = rng.choice((b"\x00", b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x01",
                         b"\\u", b"\\uZZZZ", b"\\ud800", b'"', b"//", b"/*",
                         b"\n" * 1000, b"\\", b"\xe2\x80\xa8"))
    s = rng.random()
    if s < 0.15:
        return b"\xef\xbb\xbf" + data
    if s < 0.3:
        return data + rng.choice((b"x", b"{}", b"\x00", b" " * 100, b"]"))
    if s < 0.4:
        return b"[" * 100000 + b"]" * 100000
    return data[:pos] + insert + data[pos:]


def mutate_file_entry(rng, spec, name, data):
    """A file made truncated, flipped, a directory, a FIFO, a symlink, absent
    or huge and sparse."""
    r = rng.random()
    others = sorted(n for n in spec.entries if n != name)
    if r < 0.2:
        n = rng.choice((0, 1, len(data) - 1, rng.randrange(len(data) + 1)))
        spec.entries[name] = ("bytes", data[:max(n, 0)])
    elif r < 0.4:
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 8))):
            if b:
                i = rng.randrange(len(b))
                b[i] ^= rng.randrange(1, 256)
        spec.entries[name] = ("bytes", bytes(b))
    elif r < 0.5:
        spec.entries[name] = ("dir",)
    elif r < 0.6:
        spec.entries[name] = ("fifo",)
    elif r < 0.75:
        spec.entries[name] = ("symlink", rng.choice(
            ("/dev/zero", "/dev/null", "/dev/urandom", name, "missing",
             "/proc/self/status", "/", rng.choice(others) if others else "x")))
    elif r < 0.85:
        spec.entries.pop(name, None)
    else:
        limit = 64 << 20
        size = rng.choice((limit - 1, limit, limit + 1, (1 << 32) + 5, 1 << 40,
                           32 << 20, (32 << 20) + 1))
        spec.entries[name] = ("sparse", data, size)


def bundle_case(ctx, rng, index):
    base = ctx.bundle
    entries = {"manifest.json": ("bytes", base.manifest_bytes)}
    entries.update({n: ("bytes", d) for n, d in base.ptx.items()})
    name = "bundle"
    if rng.random() < 0.03:
        name = rng.choice(("b\nundle", "bün\x01dle", "bundle with spaces",
                           "b" * 255, "-bundle", "bundle\\x"))
    spec = BundleSpec(name, entries)
    manifest = copy.deepcopy(base.manifest)
    raw, touched, notes = {}, set(), []
    text_mutation = False
    ptx_names = sorted(base.ptx)
    resum = False
    kind = rng.choices(("manifest", "files", "ptx", "descriptor"), (3, 2, 4, 1))[0]
    if kind == "manifest":
        for _ in range(rng.choice((1, 1, 2, 3))):
            manifest, more, t = mutate_manifest_json(rng, manifest)
            raw.update(more)
            touched |= t
        text_mutation = rng.random() < 0.25
        if rng.random() < 0.15:
            # An id changed along with its file name: the bundle stays whole.
            listed = manifest.get("variants") if isinstance(manifest, dict) else None
            variants = [v for v in listed if isinstance(v, dict)
                        and isinstance(v.get("ptx"), str) and v["ptx"] in spec.entries] \
                if isinstance(listed, list) else []
            if variants:
                v = rng.choice(variants)
                new = rng.choice(NEW_IDS)
                spec.entries[new + ".ptx"] = spec.entries.pop(v["ptx"])
                v["id"], v["ptx"] = new, new + ".ptx"
                touched.add(new)
        label = "bundle manifest"
    elif kind == "files":
        target = "manifest.json" if rng.random() < 0.3 else rng.choice(ptx_names)
        mutate_file_entry(rng, spec, target, spec.entries[target][1])
        if rng.random() < 0.2:
            spec.entries = {} if rng.random() < 0.5 else {"manifest.json": ("dir",)}
        touched.add(base.by_file[target]["id"] if target in base.by_file else None)
        resum = rng.random() < 0.5
        label = "bundle files"
    elif kind == "ptx":
        for target in rng.sample(ptx_names, rng.choice((1, 1, 1, 2))):
            text, names = mutate_ptx(rng, spec.entries[target][1].decode("latin-1"))
            spec.entries[target] = ("bytes", text.encode("latin-1"))
            touched.add(base.by_file[target]["id"])
            notes += names
        resum = rng.random() < 0.75
        label = "bundle ptx" if resum else "bundle ptx, old checksum"
    else:
        # A field changed alike in the manifest and in the PTX's descriptor,
        # so that the bundle loads: the runtime must cope with what it says.
        v = rng.choice(manifest["variants"])
        target = v["ptx"]
        text = spec.entries[target][1].decode("latin-1")
        touched.add(v["id"])
        if rng.random() < 0.5:
            key = rng.choice(sorted(v["kernels"]))
            k = v["kernels"][key]
            field = rng.choice(("block", "shared_bytes", "grid", "name"))
            old = k[field]
            new = {"block": lambda: rng.choice((0, 1, 32, 64, 127, 129, 256, 1024,
                                                1025, 2**31, 2**32)),
                   "shared_bytes": lambda: rng.choice((0, 1, 16, old - 1, old + 16,
                                                       163840, 232448, 232449, 2**31)),
                   "grid": lambda: rng.choice(GRID_EDGES[:2] + GRID_EDGES[3:]),
                   "name": lambda: rng.choice(("f", "flash_attention_combine",
                                               "flash_attention_fwd", "x" * 300,
                                               "$f", "f.g"))}[field]()
            k[field] = new
            desc = re.compile(r"^(// flashc-kernel name=" + re.escape(k["name"] if field != "name" else old)
                              + r" [^\n]*)", re.M)
            m = desc.search(text)
            if m:
                shown = grid_text(new) if field == "grid" else new
                line = re.sub(r"\b" + field + r"=\S*", lambda _: f"{field}={shown}",
                              m.group(1))
                text = text[:m.start(1)] + line + text[m.end(1):]
                if field == "name":
                    text = re.sub(r"\b" + re.escape(old) + r"\b", lambda _: new, text)
            notes.append(f"{key}.{field}")
        else:
            field = rng.choice(("block_q", "block_kv", "group", "head_dim",
                                "head_dim_v", "mask", "lse", "decode",
                                "target", "dtype"))
            old = v[field]
            if field == "mask":
                # The manifest names the mask; the descriptor line still
                # says causal=0|1.
                new = "none" if old == "causal" else "causal"
                shown = str(int(new == "causal"))
                field = "causal"
                v["mask"] = new
            elif isinstance(old, bool):
                new, shown = not old, str(int(not old))
            elif field == "target":
                new = shown = "sm_90a"
            elif field == "dtype":
                new = shown = rng.choice(("bf16", "f32"))
            else:
                new = rng.choice((1, 2, 3, 8, 16, 32, 64, 128, 256, 4096, 65536))
                shown = str(new)
            if field != "causal":
                v[field] = new
            text = re.sub(r"^(// flashc-variant [^\n]*\b" + field + r"=)\S*",
                          lambda m: m.group(1) + shown, text, flags=re.M)
            notes.append(field)
        spec.entries[target] = ("bytes", text.encode("latin-1"))
        resum = True
        label = "bundle descriptor"
    # Checksums of the files as they now are, for a share of the inputs.
    listed = manifest.get("variants") if isinstance(manifest, dict) else None
    if resum and isinstance(listed, list):
        for v in listed:
            if isinstance(v, dict) and isinstance(v.get("ptx"), str) and \
                    spec.entries.get(v["ptx"]) != ("bytes", base.ptx.get(v["ptx"])):
                h = spec.checksum(v["ptx"])
                if h is not None and "ptx_fnv1a" in v:
                    v["ptx_fnv1a"] = h
    if "manifest.json" in spec.entries and spec.entries["manifest.json"][0] == "bytes" \
            and kind != "files":
        text = json.dumps(manifest, indent=2)
        for key, value in raw.items():
            text = text.replace(key, value)
        data = text.encode("utf-8", "surrogatepass")
        if text_mutation:
            data = mutate_manifest_text(rng, data)
            label = "bundle manifest text"
        spec.entries["manifest.json"] = ("bytes", data)
    elif kind == "files" and resum and spec.entries.get("manifest.json", ("",))[0] == "bytes" \
            and spec.entries["manifest.json"][1] == base.manifest_bytes:
        spec.entries["manifest.json"] = ("bytes", json.dumps(manifest, indent=2).encode())
    # The calls: those that run the variants changed, sometimes another or
    # all of them.
    calls = sorted({c for c in (call_name(t) for t in touched if isinstance(t, str)) if c})
    if rng.random() < 0.3 or not calls:
        calls.append(rng.choice(ALL_CALLS))
    if rng.random() < 0.2:
        calls = []  # all eight
    origin = kind + (": " + ", ".join(notes) if notes else "")
    return Case(index, "bundle", label, calls, spec, origin)


# --------------------------------------------------------------------------
# Cases.
# --------------------------------------------------------------------------

Case = collections.namedtuple("Case", "index tool label args ir origin")

# What can be fuzzed, and the tool of each.
# (opt: flashc-opt; driver: flashc's subcommands and flashc-bench; bundle:
# the C API's bundle loader; ptx: the PTX parser and interpreter, in
# flashc-ptxsim.)
TARGETS = ("opt", "driver", "bundle", "ptx")


def target_shares(ctx):
    """[(target, share)] in the order an input's first random number picks
    from: driver, bundle and ptx take their shares, opt the rest."""
    shares = [("driver", ctx.flashc_share), ("bundle", ctx.bundle_share),
              ("ptx", ctx.ptx_share)]
    shares = [(t, max(s, 0.0)) for t, s in shares if t in ctx.targets]
    if "opt" in ctx.targets:
        shares.append(("opt", max(1.0 - sum(s for _, s in shares), 0.0)))
    total = sum(s for _, s in shares)
    if total <= 0:
        return [(t, 1.0 / len(shares)) for t, _ in shares]
    return [(t, s / total) for t, s in shares]


def pick_target(ctx, r):
    for target, share in ctx.shares:
        if r < share:
            return target
        r -= share
    return ctx.shares[-1][0]


def make_case(ctx, index):
    """Case number `index`: a pure function of the seed and the index."""
    rng = random.Random(f"{ctx.seed}/{index}")
    target = pick_target(ctx, rng.random())
    if target == "driver":
        label, args = flashc_command(rng)
        tool = "flashc-bench" if label == "flashc-bench" else "flashc"
        return Case(index, tool, label, args, None, "flashc-args")
    if target == "bundle":
        return bundle_case(ctx, rng, index)
    if target == "ptx":
        return ptx_case(ctx, rng, index)
    if rng.random() < 0.5:
        name, text = rng.choice(ctx.corpus)
        ir, origin = mutate(rng, text), f"mutated {name}"
    else:
        ir, origin = generate_module(rng), "generated"
        if rng.random() < 0.25:
            ir, origin = mutate(rng, ir), "generated+mutated"
    label, args = opt_command(rng, ctx.passes)
    return Case(index, "flashc-opt", label, args, ir, origin)


def case_argv(ctx, case, input_path):
    if case.tool == "flashc":
        return [ctx.flashc] + case.args
    if case.tool == "flashc-bench":
        return [ctx.flashc_bench] + case.args
    if case.tool == "bundle":
        # The simulator's instruction budget per thread (FLASHC_SIM_MAX_
        # INSTRUCTIONS, which the harness passes to the C API): a runaway
        # kernel fails its call within the time limit.
        return ["env", f"FLASHC_SIM_MAX_INSTRUCTIONS={ctx.sim_max_instructions}",
                ctx.bundle_target, input_path] + case.args
    if case.tool == "flashc-ptxsim":
        return [ctx.flashc_ptxsim, input_path] + case.args
    return [ctx.flashc_opt, input_path] + case.args


def write_input(case, where):
    """Writes the case's input at `where` plus an extension (a directory for
    a bundle); returns the path its command takes."""
    if case.tool == "bundle":
        shutil.rmtree(where, ignore_errors=True)
        os.makedirs(where)
        return case.ir.materialize(where)
    if case.tool == "flashc-ptxsim":
        with open(where + ".ptx", "wb") as f:
            f.write(case.ir)
        return where + ".ptx"
    if case.ir is not None:
        with open(where + ".mlir", "w") as f:
            f.write(case.ir)
    return where + ".mlir"


def derive_corpus(ctx, scratch):
    """Tiled/online IR from a few fixed graphs, to mutate like lit inputs."""
    derived = []
    rng = random.Random("derive")
    for i in range(8):
        text = rng.choice((gen_attention, gen_naive_chain))(random.Random(f"d{i}"), "g")
        path = os.path.join(scratch, f"derive{i}.mlir")
        with open(path, "w") as f:
            f.write(text)
        for stage in (["--flash-online-softmax"], ["--flash-attention-pipeline"]):
            out = run_quick([ctx.flashc_opt, path] + stage)
            if out.strip():
                derived.append((f"derived{i}{stage[0]}", out))
    return derived


def write_npy_inputs(directory):
    """A few .npy files for flashc's --q/--k: a truncated one and garbage."""
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 4, 8), }"
    header += b" " * (118 - len(header)) + b"\n"
    with open(os.path.join(directory, "short.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + bytes([len(header), 0]) + header + bytes(20))
    with open(os.path.join(directory, "bad.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'")


# --------------------------------------------------------------------------
# Running a process with limits, and classifying it.
# --------------------------------------------------------------------------

Result = collections.namedtuple("Result", "cls rc stderr elapsed maxrss_kb")


def limit_resources(mem_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


class Proc:
    """One running process: stderr goes to a file, the rest to /dev/null."""

    def __init__(self, argv, cwd, timeout, mem_bytes):
        self.err_path = os.path.join(cwd, "stderr.txt")
        self.err = open(self.err_path, "w+b")
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        self.mem_bytes = mem_bytes
        self.timed_out = False
        for attempt in range(30):
            try:
                self.popen = subprocess.Popen(
                    argv, cwd=cwd, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=self.err,
                    preexec_fn=limit_resources(mem_bytes), start_new_session=True)
                break
            except FileNotFoundError:
                # The tool is being relinked: wait for it.
                if attempt == 29:
                    raise
                time.sleep(1)

    def poll(self):
        """Returns a Result once the process has ended, else None."""
        pid = self.popen.pid
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done == 0:
            self._check_deadline()
            return None
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        self._kill_group(signal.SIGKILL)
        self.err.seek(0)
        stderr = self.err.read(1 << 20).decode("utf-8", "replace")
        self.err.close()
        result = Result(None, self.popen.returncode, stderr,
                        time.monotonic() - self.start, usage.ru_maxrss)
        return result._replace(cls=classify(result, self.timed_out, self.mem_bytes))

    def _check_deadline(self):
        now = time.monotonic()
        if now < self.deadline:
            return
        if not self.timed_out:
            # SIGABRT first: LLVM's handler prints where the process was.
            self.timed_out = True
            self.deadline = now + 5
            self._signal(signal.SIGABRT)
        else:
            self._kill_group(signal.SIGKILL)
            self.deadline = now + 3600

    def _signal(self, sig):
        try:
            os.kill(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def _kill_group(self, sig):
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def classify(result, timed_out, mem_bytes):
    err = result.stderr
    if timed_out:
        return "hang"
    if any(m in err for m in OOM_MARKERS):
        return "oom"
    killed = result.rc < 0
    if killed and result.maxrss_kb * 1024 >= 0.75 * mem_bytes:
        return "oom"
    if killed and -result.rc == signal.SIGKILL:
        return "oom"  # not our kill: the kernel's OOM killer
    if killed or any(m in err for m in CRASH_MARKERS):
        return "crash"
    if result.rc == 1 and GUARDED_MARKER in err:
        return "guarded"
    return "ok" if result.rc == 0 else "error"


def run_once(argv, cwd, timeout, mem_bytes):
    """Runs one process to completion (used by the minimizer)."""
    proc = Proc(argv, cwd, timeout, mem_bytes)
    while True:
        result = proc.poll()
        if result is not None:
            return result
        time.sleep(0.003)


# --------------------------------------------------------------------------
# Signatures: what makes two failures the same bug.
# --------------------------------------------------------------------------

SKIP_FRAMES = ("llvm::sys::", "SignalHandler", "__restore_rt", "raise", "abort",
               "gsignal", "__pthread_kill", "pthread_kill", "__assert_fail",
               "__libc_", "llvm::report_fatal_error", "llvm::report_bad_alloc_error",
               "llvm::llvm_unreachable_internal", "std::terminate", "__cxa_",
               "__gnu_cxx::", "std::__throw", "operator new", "llvm::safe_malloc",
               "llvm::allocate_buffer", "_start", "__cxxabiv1", "std::__terminate",
               "killpg", "__GI_")
FRAME_RE = re.compile(r"^\s*#\d+\s+0x[0-9a-fA-F]+\s*(.*)$")


def frame_function(rest):
    """The function name of a stack-dump frame, or '' when unnamed."""
    rest = re.sub(r"\s*\([^()]*\+0x[0-9a-fA-F]+\)\s*$", "", rest)
    rest = re.sub(r"\s+\S+:\d+(:\d+)?\s*$", "", rest)
    rest = rest.replace("(anonymous namespace)", "{anon}")
    return rest.split("(", 1)[0].strip()


def stack_frames(stderr):
    frames = []
    for line in stderr.splitlines():
        m = FRAME_RE.match(line)
        if m:
            frames.append(frame_function(m.group(1)))
    return frames


def top_frames(stderr, n=3):
    frames = [f for f in stack_frames(stderr) if f and not f.startswith(SKIP_FRAMES)]
    return frames[:n]


def key_message(stderr):
    """The first crash-describing line, with numbers and paths normalised."""
    for line in stderr.splitlines():
        for pat in (r"LLVM ERROR: .*", r"Assertion `.*' failed", r"terminate called .*",
                    r"UNREACHABLE executed.*", r"OMP: Error.*", r"std::bad_alloc"):
            m = re.search(pat, line)
            if m:
                text = re.sub(r"0x[0-9a-fA-F]+", "X", m.group(0))
                text = re.sub(r"\d+", "N", text)
                return re.sub(r"(/[\w.+-]+)+", "<path>", text)[:160]
    return ""


def signature(result, label):
    msg = key_message(result.stderr)
    frames = top_frames(result.stderr)
    parts = [result.cls]
    if msg:
        parts.append(msg)
    if frames:
        parts.append(" < ".join(frames))
    if result.cls == "messy":
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        # BundleLoadTarget: the violation, or the line that is not an error.
        odd = [l for l in lines if l.startswith("violation: ")] or \
            [l for l in lines if not l.startswith("error: ")]
        first = next(iter(odd or lines), "(no output)")
        first = re.sub(r"'[^']*'", "'X'", re.sub(r"-?\d+", "N", first))
        parts.append(f"exit {result.rc}: {first[:120]}")
    elif not msg and not frames:
        how = f"signal {-result.rc}" if result.rc < 0 else f"exit {result.rc}"
        parts.append(f"{how} in {label}")
    return " | ".join(parts)


def signature_id(sig):
    cls = sig.split(" | ", 1)[0]
    return f"{cls}-{hashlib.sha1(sig.encode()).hexdigest()[:8]}"


# --------------------------------------------------------------------------
# The campaign.
# --------------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.by_class = collections.Counter()
        self.by_label = collections.defaultdict(collections.Counter)
        # sig -> [count, saved path of the lowest case index, that index]:
        # with several jobs, cases finish out of order, and the summary must
        # not depend on which finished first.
        self.signatures = {}
        self.silent_errors = 0
        self.done = 0
        self.reach = collections.Counter()

    def count_reach(self, case, result):
        """How far the bundle and ptx inputs went: bundles opened and calls
        that all succeeded, flashc-ptxsim's exit statuses."""
        if case.tool == "bundle" and result.cls in ("ok", "error"):
            self.reach["bundle inputs"] += 1
            if "error: open:" not in result.stderr:
                self.reach["bundle opened"] += 1
                if result.cls == "ok":
                    self.reach["bundle calls all ran"] += 1
        if case.tool == "flashc-ptxsim" and result.cls in ("ok", "error"):
            self.reach[f"ptxsim exit {result.rc}"] += 1

    def add(self, case, result, sig=None, saved=None):
        self.done += 1
        self.by_class[result.cls] += 1
        self.by_label[case.label][result.cls] += 1
        if result.cls == "error" and not result.stderr.strip():
            self.silent_errors += 1
        if sig is not None:
            entry = self.signatures.setdefault(sig, [0, saved, case.index])
            entry[0] += 1
            if case.index < entry[2]:
                entry[1:] = [saved, case.index]
            return entry[0] == 1
        return False


def save_finding(ctx, case, result, sig):
    """Writes the input, command line and stderr under OUT/<signature id>/."""
    directory = os.path.join(ctx.out, signature_id(sig))
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, f"case-{case.index:07d}")
    input_path = write_input(case, base + (".bundle" if case.tool == "bundle" else ""))
    argv = case_argv(ctx, case, input_path)
    with open(base + ".cmd", "w") as f:
        where = "" if case.ir is not None else "# run in an empty directory\n"
        f.write(where + shlex.join(argv) + "\n")
    with open(base + ".stderr", "w") as f:
        f.write(f"# class {result.cls}, exit {result.rc}, {result.elapsed:.1f}s, "
                f"maxrss {result.maxrss_kb} KiB, origin {case.origin}\n")
        f.write(f"# signature: {sig}\n")
        f.write(result.stderr)
    with open(os.path.join(directory, "signature.txt"), "w") as f:
        f.write(sig + "\n")
    return base + ".cmd"


# The progress lines flashc prints on stderr before the work they announce
# (a kernel's first compile, a benchmark's rows); they may precede an error.
FLASHC_PROGRESS_RE = re.compile(
    r"compiling attention kernel for .* \(first use\)$|\[\d+/\d+\] ")


def flashc_verdict(result, tool="flashc"):
    """flashc's (and flashc-bench's) contract for a failed run: exit 1 and
    exactly one line `TOOL: error: ...` (after any progress lines); exit 2
    only when the numerical check failed."""
    if result.cls != "error":
        return result
    if result.rc == 2:
        return result._replace(cls="wrong")
    lines = [l for l in result.stderr.splitlines()
             if l.strip() and not FLASHC_PROGRESS_RE.match(l)]
    if result.rc != 1 or len(lines) != 1 or not lines[0].startswith(f"{tool}: error: "):
        return result._replace(cls="messy")
    return result


# flashc-ptxsim's usage text, printed after the line of a usage error.
PTXSIM_USAGE = "usage: flashc-ptxsim"


def ptxsim_verdict(result):
    """flashc-ptxsim's contract: exit 0, or exit 1 (usage, parse and other
    errors) or 3 (a fault of the program: out of bounds, race, deadlock,
    trap, instruction budget) with exactly one `flashc-ptxsim: ...` line
    (a usage error's usage text after it aside)."""
    if result.cls != "error":
        return result
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.startswith(PTXSIM_USAGE):
            lines = lines[:i]
            break
    if result.rc in (1, 3) and len(lines) == 1 and lines[0].startswith("flashc-ptxsim: "):
        return result
    return result._replace(cls="messy")


def bundle_verdict(result):
    """BundleLoadTarget's: exit 0 with one `error: CALL: status N: MESSAGE`
    line per failed call and nothing else on stderr ("error" when there is
    one, "ok" when every call succeeded); a `violation:` line (exit 2), any
    other exit status or other output is "messy"."""
    if result.cls not in ("ok", "error"):
        return result
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    if result.rc != 0 or any(not l.startswith("error: ") for l in lines):
        return result._replace(cls="messy")
    return result._replace(cls="error" if lines else "ok")


VERDICTS = {"flashc": flashc_verdict,
            "flashc-bench": lambda r: flashc_verdict(r, "flashc-bench"),
            "flashc-ptxsim": ptxsim_verdict, "bundle": bundle_verdict}


def verdict(tool, result):
    return VERDICTS.get(tool, lambda r: r)(result)


def tool_of_argv(argv):
    """The tool a command line runs, for --minimize and --minimize-cmd."""
    name = os.path.basename(argv[0]) if argv else ""
    if "ptxsim" in name:
        return "flashc-ptxsim"
    if "BundleLoadTarget" in name:
        return "bundle"
    return name


def record(ctx, stats, case, result):
    result = verdict(case.tool, result)
    stats.count_reach(case, result)
    if result.cls not in FAILURES:
        stats.add(case, result)
        return
    sig = signature(result, case.label)
    saved = save_finding(ctx, case, result, sig)
    if stats.add(case, result, sig, saved) and not ctx.quiet:
        print(f"[{case.index}] new {result.cls}: {sig}\n    {saved}", file=sys.stderr,
              flush=True)


def case_timeout(ctx, case):
    if case.label == "flashc-bench":
        return ctx.timeout * BENCH_TIMEOUT_FACTOR
    return ctx.timeout


def start_case(ctx, case, slot_dir):
    input_path = write_input(case, os.path.join(slot_dir, "input"))
    return Proc(case_argv(ctx, case, input_path), slot_dir, case_timeout(ctx, case),
                ctx.mem_bytes)


def campaign(ctx):
    stats = Stats()
    slots = {}
    for j in range(ctx.jobs):
        slot_dir = os.path.join(ctx.scratch, f"job{j}")
        os.makedirs(slot_dir)
        write_npy_inputs(slot_dir)
        slots[slot_dir] = None
    start = time.monotonic()
    next_index, last_report = 0, start
    while True:
        out_of_time = ctx.seconds is not None and time.monotonic() - start >= ctx.seconds
        exhausted = ctx.max_inputs is not None and next_index >= ctx.max_inputs
        for slot_dir, running in slots.items():
            if running is None and not (out_of_time or exhausted):
                case = make_case(ctx, next_index)
                next_index += 1
                slots[slot_dir] = (case, start_case(ctx, case, slot_dir))
                exhausted = ctx.max_inputs is not None and next_index >= ctx.max_inputs
        busy = False
        for slot_dir, running in slots.items():
            if running is None:
                continue
            case, proc = running
            result = proc.poll()
            if result is None:
                busy = True
                continue
            record(ctx, stats, case, result)
            slots[slot_dir] = None
        if not busy and all(r is None for r in slots.values()) and (out_of_time or exhausted):
            break
        now = time.monotonic()
        if not ctx.quiet and now - last_report >= 30:
            last_report = now
            print(f"... {stats.done} inputs in {now - start:.0f}s: "
                  + ", ".join(f"{c} {stats.by_class[c]}" for c in CLASSES),
                  file=sys.stderr, flush=True)
        time.sleep(0.002)
    return stats, time.monotonic() - start


def summary_text(ctx, stats, elapsed):
    lines = [f"flashc fuzz: seed {ctx.seed}, {stats.done} inputs in {elapsed:.1f}s "
             f"({stats.done / max(elapsed, 1e-9):.1f}/s), jobs {ctx.jobs}"]
    header = f"{'pass / pipeline / command':32}" + "".join(f"{c:>8}" for c in CLASSES) + f"{'total':>8}"
    lines += ["", header, "-" * len(header)]
    for label in sorted(stats.by_label):
        counts = stats.by_label[label]
        lines.append(f"{label:32}" + "".join(f"{counts[c]:>8}" for c in CLASSES)
                     + f"{sum(counts.values()):>8}")
    lines.append("-" * len(header))
    lines.append(f"{'all':32}" + "".join(f"{stats.by_class[c]:>8}" for c in CLASSES)
                 + f"{stats.done:>8}")
    if stats.silent_errors:
        lines.append(f"({stats.silent_errors} errors exited non-zero without a diagnostic)")
    reach = stats.reach
    if reach["bundle inputs"]:
        lines.append(f"bundle: {reach['bundle opened']} of {reach['bundle inputs']} clean "
                     f"inputs opened, {reach['bundle calls all ran']} ran every call "
                     f"without an error")
    codes = sorted(k for k in reach if k.startswith("ptxsim exit "))
    if codes:
        lines.append("ptxsim: " + ", ".join(f"{k[len('ptxsim '):]}: {reach[k]}"
                                            for k in codes))
    lines.append("")
    if stats.signatures:
        lines.append(f"{len(stats.signatures)} distinct failure signatures "
                     f"(saved under {ctx.out}):")
        for sig, (count, path, _) in sorted(stats.signatures.items(),
                                            key=lambda kv: (-kv[1][0], kv[0])):
            lines.append(f"  {count:6}  {sig}\n          e.g. {path}")
    else:
        lines.append("no failures: no crash, hang, oom, messy or wrong")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Minimizing.
# --------------------------------------------------------------------------

def failure_key(result, label, match):
    if result.cls not in FAILURES:
        return None
    if match == "class" or result.cls in ("hang", "oom"):
        return result.cls
    return signature(result, label)


def ddmin(items, still_fails):
    """Removes chunks of `items`, halving the chunk size, while it fails."""
    chunk = max(len(items) // 2, 1)
    while True:
        i, progress = 0, False
        while i < len(items):
            candidate = items[:i] + items[i + chunk:]
            if candidate and still_fails(candidate):
                items, progress = candidate, True
            else:
                i += chunk
        if not progress:
            if chunk == 1:
                return items
            chunk //= 2


def substitute_input(argv, original, path):
    if any("{}" in a for a in argv):
        return [a.replace("{}", path) for a in argv]
    if original in argv:
        return [path if a == original else a for a in argv]
    return argv + [path]


def minimize_file(args):
    # Bytes as they are (latin-1 maps each to one character).
    with open(args.minimize, encoding="latin-1", newline="") as f:
        text = f.read()
    argv = shlex.split(args.cmd)
    tool = tool_of_argv(argv)
    ext = os.path.splitext(args.minimize)[1] or ".mlir"
    mem = args.mem_mb << 20
    scratch = tempfile.mkdtemp(prefix="flashc-fuzz-min-", dir="/tmp")
    trial = os.path.join(scratch, "input" + ext)
    tries = [0]

    def outcome(candidate):
        tries[0] += 1
        with open(trial, "w", encoding="latin-1", newline="") as f:
            f.write(candidate)
        result = run_once(substitute_input(argv, args.minimize, trial), scratch,
                          args.timeout, mem)
        result = verdict(tool, result)
        return failure_key(result, "minimize", args.match), result

    want, first = outcome(text)
    if want is None:
        shutil.rmtree(scratch, ignore_errors=True)
        sys.exit(f"fuzz.py: the input does not fail ({first.cls}, exit {first.rc})")
    print(f"failure: {want}", file=sys.stderr)
    fails = lambda t: outcome(t)[0] == want
    for _ in range(3):
        before = text
        text = "".join(ddmin(text.splitlines(True), lambda ls: fails("".join(ls))))
        text = "".join(ddmin(tokenize(text), lambda ts: fails("".join(ts))))
        if text == before:
            break
    out = args.min_out or args.minimize + ".min" + ext
    with open(out, "w", encoding="latin-1", newline="") as f:
        f.write(text)
    print(f"minimized to {len(text)} bytes in {tries[0]} runs: {out}", file=sys.stderr)
    sys.stdout.write(text)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def minimize_cmd(args):
    """Reduces a command line's arguments (after the tool and subcommand;
    flashc-bench's table has no subcommand)."""
    argv = shlex.split(args.minimize_cmd)
    tool = tool_of_argv(argv)
    head = 1 if tool == "flashc-bench" and argv[1:2] != ["one"] else 2
    keep, rest = argv[:head], argv[head:]
    mem = args.mem_mb << 20
    scratch = tempfile.mkdtemp(prefix="flashc-fuzz-min-", dir="/tmp")

    def key(tail):
        result = verdict(tool, run_once(keep + tail, scratch, args.timeout, mem))
        return failure_key(result, "minimize", args.match)

    want = key(rest)
    if want is None:
        shutil.rmtree(scratch, ignore_errors=True)
        sys.exit("fuzz.py: the command does not fail")
    print(f"failure: {want}", file=sys.stderr)
    rest = ddmin(rest, lambda t: key(t) == want)
    print(shlex.join(keep + rest))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


# --------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.path.join(REPO, "build", "bin")
    p.add_argument("--seconds", type=float, help="stop starting inputs after this long")
    p.add_argument("--max-inputs", type=int, help="stop after this many inputs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--flashc-opt", default=os.path.join(build, "flashc-opt"))
    p.add_argument("--flashc", default=os.path.join(build, "flashc"))
    p.add_argument("--flashc-bench", help="default: the flashc-bench beside --flashc")
    p.add_argument("--out", default="/tmp/flashc-fuzz", help="where findings go")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per process")
    p.add_argument("--mem-mb", type=int, default=4096, help="RLIMIT_AS per process")
    p.add_argument("--flashc-share", type=float, default=0.15,
                   help="fraction of inputs that are flashc command lines")
    p.add_argument("--targets", help="what to fuzz, a comma-separated list of "
                   + ", ".join(TARGETS) + " (default: all; bundle and ptx are "
                   "left out with a warning when their tools are not built)")
    p.add_argument("--bundle-target", help="the bundle target's C program "
                   "(default: build/unittests/Runtime/FlashcBundleLoadTarget)")
    p.add_argument("--test-bundle", help="the bundle to mutate for the bundle and "
                   "ptx targets (default: build/unittests/Runtime/test-bundle)")
    p.add_argument("--flashc-ptxsim", help="default: build/bin/flashc-ptxsim")
    p.add_argument("--sim-max-instructions", type=int, default=100000,
                   help="the bundle target's simulator budget per thread "
                   "(FLASHC_SIM_MAX_INSTRUCTIONS)")
    p.add_argument("--bundle-share", type=float, default=0.1,
                   help="fraction of inputs that are mutated bundles")
    p.add_argument("--ptx-share", type=float, default=0.1,
                   help="fraction of inputs that are mutated kernels for flashc-ptxsim")
    p.add_argument("--tests", default=REPO, help="repository whose test/ is the corpus")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--minimize", metavar="FILE", help="minimize a failing input")
    p.add_argument("--cmd", help="with --minimize: the command ({} is the input)")
    p.add_argument("--min-out", help="with --minimize: where the result goes")
    p.add_argument("--minimize-cmd", metavar="CMD", help="minimize a failing command line")
    p.add_argument("--match", choices=("signature", "class"), default="signature",
                   help="what must stay the same while minimizing")
    args = p.parse_args(argv)
    if args.minimize and not args.cmd:
        p.error("--minimize needs --cmd")
    if args.seconds is None and args.max_inputs is None:
        args.seconds = 60.0
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    args.explicit_targets = args.targets is not None
    args.targets = (args.targets or ",".join(TARGETS)).split(",")
    for t in args.targets:
        if t not in TARGETS:
            p.error(f"unknown target '{t}' (known: {', '.join(TARGETS)})")
    return args


def check_tools(args):
    """Resolves the tools' paths; a target whose tool is missing is an error,
    or, for bundle and ptx when neither --targets nor its path names it, left
    out with a warning."""
    runtime = os.path.join(REPO, "build", "unittests", "Runtime")
    optional = {}
    for target, attr, default in (
            ("bundle", "bundle_target", os.path.join(runtime, "FlashcBundleLoadTarget")),
            ("ptx", "flashc_ptxsim", os.path.join(REPO, "build", "bin", "flashc-ptxsim"))):
        optional[target] = not args.explicit_targets and getattr(args, attr) is None
        setattr(args, attr, os.path.abspath(getattr(args, attr) or default))
    bundle_given = args.test_bundle is not None
    args.test_bundle = os.path.abspath(args.test_bundle or os.path.join(runtime, "test-bundle"))
    args.flashc_opt = os.path.abspath(args.flashc_opt)
    args.flashc = os.path.abspath(args.flashc)
    args.flashc_bench = os.path.abspath(
        args.flashc_bench or os.path.join(os.path.dirname(args.flashc), "flashc-bench"))
    paths = {"opt": [args.flashc_opt], "driver": [args.flashc, args.flashc_bench],
             "bundle": [args.bundle_target], "ptx": [args.flashc_ptxsim]}
    for target in list(args.targets):
        missing = None
        absent = [p for p in paths[target] if not os.access(p, os.X_OK)]
        if absent:
            missing = f"{absent[0]} is not an executable"
        elif target in ("bundle", "ptx") and \
                not os.path.isfile(os.path.join(args.test_bundle, "manifest.json")):
            missing = f"{args.test_bundle} holds no manifest.json"
            optional[target] = optional[target] and not bundle_given
        if missing is None:
            continue
        if not optional.get(target):
            sys.exit(f"fuzz.py: {missing}")
        print(f"fuzz.py: {missing}: the {target} target is left out", file=sys.stderr)
        args.targets.remove(target)
    if not args.targets:
        sys.exit("fuzz.py: nothing to fuzz")


def main(argv):
    args = parse_args(argv)
    if args.minimize:
        return minimize_file(args)
    if args.minimize_cmd:
        return minimize_cmd(args)
    check_tools(args)
    ctx = args
    ctx.shares = target_shares(ctx)
    ctx.mem_bytes = args.mem_mb << 20
    ctx.out = os.path.abspath(args.out)
    os.makedirs(ctx.out, exist_ok=True)
    ctx.scratch = tempfile.mkdtemp(prefix="flashc-fuzz-", dir="/tmp")
    try:
        ctx.passes, ctx.corpus, ctx.bundle = {}, [], None
        if "opt" in ctx.targets:
            ctx.passes = discover_passes(args.flashc_opt)
            ctx.corpus = load_corpus(args.tests) + derive_corpus(ctx, ctx.scratch)
        if "bundle" in ctx.targets or "ptx" in ctx.targets:
            ctx.bundle = TestBundle(ctx.test_bundle)
            if "ptx" in ctx.targets and not ctx.bundle.launchable:
                sys.exit(f"fuzz: {ctx.test_bundle} has no kernel that the ptx "
                         "target can launch (every one takes tensor maps)")
        if not args.quiet:
            print(f"fuzz: targets {', '.join(t for t, _ in ctx.shares)}; "
                  f"{len(ctx.corpus)} corpus inputs, {len(ctx.passes)} flash "
                  f"passes and pipelines, seed {args.seed}", file=sys.stderr)
        stats, elapsed = campaign(ctx)
    finally:
        shutil.rmtree(ctx.scratch, ignore_errors=True)
    text = summary_text(ctx, stats, elapsed)
    with open(os.path.join(ctx.out, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 1 if any(stats.by_class[c] for c in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
