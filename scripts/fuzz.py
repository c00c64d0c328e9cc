#!/usr/bin/python3
"""A seeded, time-bounded fuzzer for flashc-opt and flashc.

Usage:
  scripts/fuzz.py [--seconds N] [--seed S] [--flashc-opt PATH] [--flashc PATH]
                  [--out DIR] [--jobs J] [--max-inputs N]
                  [--timeout SECONDS] [--mem-mb MB] [--quiet]
  scripts/fuzz.py --minimize FILE --cmd 'flashc-opt {} --flash-tile' [--min-out PATH]
  scripts/fuzz.py --minimize-cmd 'flashc run --seq-q 4 ... --iters -1'

Each input is one process: an IR file run through flashc-opt with a flash
pass, a chain of flash passes or a flash pipeline (random options, often
invalid), or a flashc command line with random flag values. The IR comes
from two generators:
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
  messy   (flashc) an error that is not one `flashc: error: ...` line
          with exit status 1
  wrong   (flashc run) exit status 2: the kernel's output failed the
          check against the float64 reference.
The same seed gives the same inputs in the same order; --seconds and
--max-inputs bound the run (whichever comes first). Each crash, hang or
OOM is saved under --out with its exact command line, and a summary table
is printed. The exit status is 1 when a crash, hang or OOM was found.

--minimize reduces a failing IR file by deleting lines, then tokens, while
the failure (class and signature) stays the same. In --cmd, `{}` stands
for the input file (if absent, the file's path itself or an appended path
is used). --minimize-cmd reduces a flashc command line the same way.

Python 3 standard library only.
"""

import argparse
import collections
import hashlib
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
# `flashc bench` measures for seconds by design: its time limit is this
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
GPU_TAIL = ("flash-to-nvgpu",)
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
    "--threads": (("0", "1", "2"), ("-1", "1024", "1025", "4294967296", "x")),
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
            "--block-kv 32", "--scalef off", "--threads 1", "--splits 2",
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
    """`flashc bench` on one small problem, one iteration. A benchmark
    measures each of its 4 rows (flashc and BLAS, causal or not) for about
    a second, so it gets BENCH_TIMEOUT_FACTOR times the time limit."""
    args = ["bench", "--sizes", list_value(rng, ("16", "64", "100"),
                                           ("0", "-1", "x", "", "9223372036854775807")),
            "--head-dims", list_value(rng, ("16", "64"), ("0", "513", "x", ""))]
    args += ["--iters", pick(rng, ("1",), ("0", "-1", "x"), 0.1)]
    if rng.random() < 0.5:
        args += ["--heads", pick(rng, ("1", "2"), ("0", "-1", "x", "4294967296"), 0.15)]
    if rng.random() < 0.3:
        args += ["--json", pick(rng, ("bench.json",), ("/dev/full", "nodir/x.json"), 0.3)]
    return "flashc bench", args


def flashc_command(rng):
    """Returns (label, argv tail) for a flashc command line."""
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
# Cases.
# --------------------------------------------------------------------------

Case = collections.namedtuple("Case", "index tool label args ir origin")


def make_case(ctx, index):
    """Case number `index`: a pure function of the seed and the index."""
    rng = random.Random(f"{ctx.seed}/{index}")
    if rng.random() < ctx.flashc_share:
        label, args = flashc_command(rng)
        return Case(index, "flashc", label, args, None, "flashc-args")
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
    return [ctx.flashc_opt, input_path] + case.args


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
        first = next((l for l in result.stderr.splitlines() if l.strip()), "(no output)")
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
        self.signatures = {}  # sig -> [count, first saved path]
        self.silent_errors = 0
        self.done = 0

    def add(self, case, result, sig=None, saved=None):
        self.done += 1
        self.by_class[result.cls] += 1
        self.by_label[case.label][result.cls] += 1
        if result.cls == "error" and not result.stderr.strip():
            self.silent_errors += 1
        if sig is not None:
            entry = self.signatures.setdefault(sig, [0, saved])
            entry[0] += 1
            return entry[0] == 1
        return False


def save_finding(ctx, case, result, sig):
    """Writes the input, command line and stderr under OUT/<signature id>/."""
    directory = os.path.join(ctx.out, signature_id(sig))
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, f"case-{case.index:07d}")
    input_path = base + ".mlir"
    if case.ir is not None:
        with open(input_path, "w") as f:
            f.write(case.ir)
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


def flashc_verdict(result):
    """flashc's contract for a failed run: exit 1 and exactly one line
    `flashc: error: ...`; exit 2 only when the numerical check failed."""
    if result.cls != "error":
        return result
    if result.rc == 2:
        return result._replace(cls="wrong")
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    if result.rc != 1 or len(lines) != 1 or not lines[0].startswith("flashc: error: "):
        return result._replace(cls="messy")
    return result


def record(ctx, stats, case, result):
    if case.tool == "flashc":
        result = flashc_verdict(result)
    if result.cls not in FAILURES:
        stats.add(case, result)
        return
    sig = signature(result, case.label)
    saved = save_finding(ctx, case, result, sig)
    if stats.add(case, result, sig, saved) and not ctx.quiet:
        print(f"[{case.index}] new {result.cls}: {sig}\n    {saved}", file=sys.stderr,
              flush=True)


def case_timeout(ctx, case):
    if case.label == "flashc bench":
        return ctx.timeout * BENCH_TIMEOUT_FACTOR
    return ctx.timeout


def start_case(ctx, case, slot_dir):
    input_path = os.path.join(slot_dir, "input.mlir")
    if case.ir is not None:
        with open(input_path, "w") as f:
            f.write(case.ir)
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
    lines.append("")
    if stats.signatures:
        lines.append(f"{len(stats.signatures)} distinct failure signatures "
                     f"(saved under {ctx.out}):")
        for sig, (count, path) in sorted(stats.signatures.items(), key=lambda kv: -kv[1][0]):
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
    with open(args.minimize, encoding="utf-8", errors="replace") as f:
        text = f.read()
    argv = shlex.split(args.cmd)
    mem = args.mem_mb << 20
    scratch = tempfile.mkdtemp(prefix="flashc-fuzz-min-", dir="/tmp")
    trial = os.path.join(scratch, "input.mlir")
    tries = [0]

    def outcome(candidate):
        tries[0] += 1
        with open(trial, "w") as f:
            f.write(candidate)
        result = run_once(substitute_input(argv, args.minimize, trial), scratch,
                          args.timeout, mem)
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
    out = args.min_out or args.minimize + ".min.mlir"
    with open(out, "w") as f:
        f.write(text)
    print(f"minimized to {len(text)} bytes in {tries[0]} runs: {out}", file=sys.stderr)
    sys.stdout.write(text)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def minimize_cmd(args):
    """Reduces a command line's arguments (after the tool and subcommand)."""
    argv = shlex.split(args.minimize_cmd)
    keep, rest = argv[:2], argv[2:]
    mem = args.mem_mb << 20
    scratch = tempfile.mkdtemp(prefix="flashc-fuzz-min-", dir="/tmp")

    is_flashc = os.path.basename(keep[0]) == "flashc"

    def key(tail):
        result = run_once(keep + tail, scratch, args.timeout, mem)
        if is_flashc:
            result = flashc_verdict(result)
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
    p.add_argument("--out", default="/tmp/flashc-fuzz", help="where findings go")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per process")
    p.add_argument("--mem-mb", type=int, default=4096, help="RLIMIT_AS per process")
    p.add_argument("--flashc-share", type=float, default=0.15,
                   help="fraction of inputs that are flashc command lines")
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
    return args


def main(argv):
    args = parse_args(argv)
    if args.minimize:
        return minimize_file(args)
    if args.minimize_cmd:
        return minimize_cmd(args)
    args.flashc_opt = os.path.abspath(args.flashc_opt)
    args.flashc = os.path.abspath(args.flashc)
    for tool in (args.flashc_opt, args.flashc):
        if not os.access(tool, os.X_OK):
            sys.exit(f"fuzz.py: {tool} is not an executable")
    ctx = args
    ctx.mem_bytes = args.mem_mb << 20
    ctx.out = os.path.abspath(args.out)
    os.makedirs(ctx.out, exist_ok=True)
    ctx.scratch = tempfile.mkdtemp(prefix="flashc-fuzz-", dir="/tmp")
    try:
        ctx.passes = discover_passes(args.flashc_opt)
        ctx.corpus = load_corpus(args.tests) + derive_corpus(ctx, ctx.scratch)
        if not args.quiet:
            print(f"fuzz: {len(ctx.corpus)} corpus inputs, {len(ctx.passes)} flash "
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
