"""examples/ring_attention.py: attention over a sequence split across
processes (torch.distributed with gloo on the CPU), checked by its rank 0
against float64 numpy. Skipped without torch (scripts/torch-venv.sh makes
an environment with it), unless FLASHC_REQUIRE_TORCH is set."""

import os
import re
import socket
import subprocess
import sys

import pytest

import flashc

from conftest import import_torch

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "ring_attention.py")
TIMEOUT = 300


@pytest.fixture(autouse=True)
def need_torch():
    dist = import_torch("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.fail("torch.distributed with gloo is not available")


def environment(**extra):
    """The environment of the example's processes: flashc importable as
    here."""
    env = dict(os.environ)
    package = os.path.dirname(os.path.dirname(os.path.abspath(
        flashc.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [package] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def check_output(out, tolerance):
    """Rank 0's report says ok, with an error within ``tolerance``."""
    match = re.search(r"max \|error\| against float64: (\S+)", out)
    assert match, out
    assert float(match.group(1)) <= tolerance, out
    assert out.rstrip().endswith("ok"), out


@pytest.mark.parametrize("args, tolerance", [
    (["--world-size", "2"], 2e-4),
    # Uneven chunks (17, 17, 16), chunks in the future skipped.
    (["--world-size", "3", "--seq-len", "50", "--causal", "--dtype", "f16"],
     4e-3),
])
def test_spawned_ranks(args, tolerance):
    result = subprocess.run([sys.executable, EXAMPLE, *args],
                            capture_output=True, text=True, check=False,
                            timeout=TIMEOUT, env=environment())
    assert result.returncode == 0, result.stdout + result.stderr
    check_output(result.stdout, tolerance)


def test_ranks_started_as_torchrun_does():
    # One process per rank, told its rank by the environment (env://), as
    # torchrun starts them.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    world = 2
    ranks = [subprocess.Popen(
        [sys.executable, EXAMPLE, "--causal", "--seq-len", "33"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=environment(RANK=rank, LOCAL_RANK=rank, WORLD_SIZE=world,
                        MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for rank in range(world)]
    outputs = []
    try:
        for process in ranks:
            out, _ = process.communicate(timeout=TIMEOUT)
            outputs.append(out)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    for process, out in zip(ranks, outputs):
        assert process.returncode == 0, "\n".join(outputs)
    check_output(outputs[0], 2e-4)


def test_bad_arguments_exit_nonzero():
    # Bad arguments are refused before any rank starts.
    result = subprocess.run(
        [sys.executable, EXAMPLE, "--world-size", "3", "--seq-len", "2"],
        capture_output=True, text=True, check=False, timeout=TIMEOUT,
        env=environment())
    assert result.returncode == 2, result.stdout + result.stderr
    assert "leaves a rank of the 3 without a chunk" in result.stderr
