"""The examples in python/examples run and print what they promise."""

import os
import re
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def run(name, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name),
                             *args], capture_output=True, text=True,
                            check=False, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_minimal():
    out = run("minimal.py")
    error = float(re.search(r"max \|error\| against float64: (\S+)",
                            out).group(1))
    assert error < 1e-4, out


def test_decode_loop_compiles_once():
    out = run("decode_loop.py", "--steps", "12", "--start", "300")
    assert "kernels compiled: 1\n" in out, out


def test_io_cost_table():
    out = run("io_cost.py", "--head-dim", "128")
    lines = out.strip().splitlines()
    assert len(lines) == 8, out
    # Each row is the cost model's report for its length.
    import flashc  # pylint: disable=import-outside-toplevel
    for line in lines[2:]:
        n, standard, algorithm1, fa2, _ = line.split()
        spec = flashc.AttentionSpec(heads=16, seq_q=int(n), seq_kv=int(n),
                                    head_dim=128, dtype="f16")
        hbm = flashc.cost(spec, target="sm_80")["hbmElements"]
        assert [int(standard), int(algorithm1), int(fa2)] == [
            hbm[o]["total"] for o in ("standard", "algorithm1", "fa2")]
