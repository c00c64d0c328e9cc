"""The Python runtime module's CUDA path without a GPU: bundled kernels
launched on CUDA array interface tensors through the stand-in driver
(fake_cuda_calls.py, in a process whose LD_LIBRARY_PATH finds it), as an
sm_80 and an sm_90a device."""

import os
import subprocess
import sys

import pytest

from conftest import write_bundle

FAKE_CUDA = os.environ.get("FLASHC_FAKE_CUDA_DIR")


@pytest.mark.parametrize("target, cc, variants", [
    ("sm_80", "8.0", "prefill,decode"), ("sm_90a", "9.0", "prefill"),
    ("sm_90a", "9.0", "decode")])
def test_bundle_on_the_stand_in_driver(tmp_path, seed, target, cc,
                                       variants):
    if not FAKE_CUDA or not os.path.exists(
            os.path.join(FAKE_CUDA, "libcuda.so.1")):
        pytest.skip("FLASHC_FAKE_CUDA_DIR (the stand-in libcuda.so.1's "
                    "folder) unset or empty")
    bundle = write_bundle(tmp_path, "--groups", "2", "--causal", "both",
                          "--lse", "no", "--variants", variants,
                          target=target)
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_CUDA,
               FLASHC_FAKE_CUDA_CC=cc)
    script = os.path.join(os.path.dirname(__file__), "fake_cuda_calls.py")
    result = subprocess.run([sys.executable, script, str(bundle), str(seed)],
                            env=env, capture_output=True, text=True,
                            check=False, timeout=600)
    assert result.returncode == 0, (
        f"seed {seed}\n{result.stdout}\n{result.stderr}")
    assert f"chip {target}," in result.stdout
    assert "calls on the stand-in driver matched float64" in result.stdout


def test_native_launch_time_script(tmp_path):
    # scripts/python_host_time.py --entry native (docs/PERFORMANCE.md):
    # the runtime module's launch on the stand-in driver, launches skipped.
    if not FAKE_CUDA or not os.path.exists(
            os.path.join(FAKE_CUDA, "libcuda.so.1")):
        pytest.skip("FLASHC_FAKE_CUDA_DIR (the stand-in libcuda.so.1's "
                    "folder) unset or empty")
    bundle = write_bundle(tmp_path, "--groups", "2", "--causal", "no",
                          "--lse", "no", "--variants", "decode",
                          target="sm_90a")
    script = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                          "scripts", "python_host_time.py")
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_CUDA,
               FLASHC_FAKE_CUDA_SKIP_LAUNCHES="1")
    result = subprocess.run([sys.executable, script, "--bundle", str(bundle),
                             "--entry", "native", "--calls", "20"], env=env,
                            capture_output=True, text=True, check=False,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "native launch (sm_90a-f16-g2-d64-decode, 32768 keys")
