"""Bundles of precompiled GPU kernels run through the LLVM-free runtime
module, without the compiler module."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flashc

from conftest import check, make_inputs, offset_copy, write_bundle



@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    return write_bundle(tmp_path_factory.mktemp("bundle"), "--groups", "2",
                        "--causal", "both", "--lse", "no", "--variants",
                        "prefill,decode")


def test_bundle_runs_in_the_simulator(bundle_dir, rng, seed):
    bundle = flashc.load_bundle(bundle_dir)
    assert len(bundle.variants) == 4
    assert {v["decode"] for v in bundle.variants} == {False, True}
    for nq, nk, causal in ((30, 50, True), (1, 90, False)):
        q, k, v = make_inputs(rng, 1, 4, 2, nq, nk, 64, dtype=np.float16)
        out = bundle.attention(q, k, v, causal=causal, simulate=True)
        check(out, None, q, k, v, causal, seed)


def test_python_host_time_script_runs(bundle_dir):
    # scripts/python_host_time.py (docs/PERFORMANCE.md) stubs the native
    # launch out: the stub must keep the launch's contract.
    script = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                          "scripts", "python_host_time.py")
    for entry, extra in (("bundle", []), ("attention", ["--no-out"]),
                         ("kernel", [])):
        result = subprocess.run(
            [sys.executable, script, "--bundle", str(bundle_dir), "--calls",
             "20", "--entry", entry] + extra,
            capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"{entry}, numpy inputs")
        assert "us per call" in result.stdout


def test_bundle_kernels_take_any_scale(bundle_dir, rng, seed):
    # The scale is a kernel argument: one variant serves every scale.
    bundle = flashc.load_bundle(bundle_dir)
    assert all("scale" not in v for v in bundle.variants)
    q, k, v = make_inputs(rng, 1, 4, 2, 20, 70, 64, dtype=np.float16)
    for scale in (0.03, 0.125, 0.4):
        out = bundle.attention(q, k, v, causal=True, scale=scale,
                               simulate=True)
        check(out, None, q, k, v, True, seed, scale=scale)


def test_bundle_masks_by_name_and_simulator_budget(bundle_dir, rng, seed):
    bundle = flashc.load_bundle(bundle_dir)
    assert {v["mask"] for v in bundle.variants} == {"none", "causal"}
    q, k, v = make_inputs(rng, 1, 4, 2, 12, 40, 64, dtype=np.float16)
    out = bundle.attention(q, k, v, mask="causal", simulate=True)
    check(out, None, q, k, v, True, seed)
    # The simulator's per-thread instruction budget, set by call.
    runtime = flashc._runtime  # pylint: disable=protected-access
    runtime.set_simulator_max_instructions(50)
    try:
        with pytest.raises(flashc.FlashcError,
                           match="the thread exceeded 50 instructions"):
            bundle.attention(q, k, v, mask="causal", simulate=True)
    finally:
        runtime.set_simulator_max_instructions(100000000)
    out = bundle.attention(q, k, v, mask="none", simulate=True)
    check(out, None, q, k, v, False, seed)


def test_bundle_without_the_variant(bundle_dir, rng):
    bundle = flashc.load_bundle(bundle_dir)
    q, k, v = make_inputs(rng, 1, 2, 2, 8, 8, 64, dtype=np.float16)
    # The error names the closest variant and the field that differs.
    with pytest.raises(flashc.FlashcError,
                       match="no kernel for sm_80, f16, group 1.*differs in "
                       r"group \(2; the call needs 1\)"):
        bundle.attention(q, k, v, simulate=True)
    with pytest.raises(flashc.FlashcError, match="pass simulate=True"):
        bundle.attention(q, k, v)


def test_runtime_only(bundle_dir, seed):
    # A process in which the compiler module cannot be imported.
    script = textwrap.dedent(f"""
        import sys
        sys.modules["flashc._compiler"] = None
        import numpy as np
        import flashc
        rng = np.random.default_rng({seed})
        q = rng.standard_normal((1, 4, 3, 64)).astype(np.float16)
        k = rng.standard_normal((1, 2, 40, 64)).astype(np.float16)
        v = rng.standard_normal((1, 2, 40, 64)).astype(np.float16)
        out = flashc.load_bundle({str(bundle_dir)!r}).attention(
            q, k, v, simulate=True)
        assert np.isfinite(out.astype(np.float32)).all()
        try:
            flashc.attention(q, k, v)
        except flashc.FlashcError as e:
            assert "compiler module is not available" in str(e), e
        else:
            raise AssertionError("compiled without the compiler")
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (
        result.stdout + result.stderr)


def test_runtime_module_links_no_llvm():
    from flashc import _runtime  # pylint: disable=import-outside-toplevel
    result = subprocess.run(["ldd", _runtime.__file__], capture_output=True,
                            text=True, check=True)
    assert "LLVM" not in result.stdout and "MLIR" not in result.stdout, (
        result.stdout)


def test_bundle_falls_back_for_unaligned_tensors(tmp_path, rng, seed):
    # A bundle built with --alignments 16,4 holds each variant twice; a
    # call whose tensors start 2 elements (4 bytes) into their buffers runs
    # the 4-byte one, and the bundle lists the fallback. A bundle without
    # it refuses such a call, naming what is missing.
    built = {}
    for alignments in ("16,4", "16"):
        path = write_bundle(
            tmp_path / alignments.replace(",", "-"), "--groups", "1",
            "--masks", "causal", "--lse", "no", "--variants", "prefill",
            "--alignments", alignments)
        built[alignments] = flashc.load_bundle(path)
    bundle = built["16,4"]
    assert sorted(v["alignment"] for v in bundle.variants) == [4, 16]

    q, k, v = make_inputs(rng, 1, 2, 2, 30, 50, 64, dtype=np.float16)
    out = bundle.attention(q, k, v, causal=True, simulate=True)
    check(out, None, q, k, v, True, seed)
    assert bundle.fallbacks == []

    qu, ku, vu = (offset_copy(x, 2) for x in (q, k, v))
    out = bundle.attention(qu, ku, vu, causal=True, simulate=True)
    check(out, None, q, k, v, True, seed)
    assert bundle.fallbacks == [{
        "variant": "sm_80-f16-g1-d64-causal-prefill-a4", "alignment": 4,
        "replaced": "sm_80-f16-g1-d64-causal-prefill"}]
    with pytest.raises(flashc.FlashcError,
                       match="query is at an address that is not 16-byte "
                             "aligned.*--alignment 4"):
        built["16"].attention(qu, ku, vu, causal=True, simulate=True)
