"""test_gpu.py's bounded wait, on a stand-in for torch whose stream
finishes after a given time (or never): the GPU tests end the session
(exit 3) on a kernel that hangs, rather than wait for the step's
timeout; work that finishes returns through torch's own wait."""

import time

import pytest

import test_gpu


class Stream:
    def __init__(self, finish):
        self.done_at = time.monotonic() + finish
        self.waits = 0

    def query(self):
        return time.monotonic() >= self.done_at


class Torch:
    def __init__(self, finish):
        stream = Stream(finish)

        class Cuda:
            @staticmethod
            def current_stream():
                return stream

            @staticmethod
            def synchronize():
                stream.waits += 1

        self.cuda = Cuda
        self.stream = stream


def test_finished_work_returns_through_torch(monkeypatch):
    torch = Torch(0.05)
    monkeypatch.setattr(test_gpu, "torch", torch)
    monkeypatch.setenv("FLASHC_CUDA_SYNC_TIMEOUT_S", "5")
    start = time.monotonic()
    test_gpu.synchronize()
    assert time.monotonic() - start >= 0.05
    assert torch.stream.waits == 1


def test_work_that_never_finishes_ends_the_session(monkeypatch):
    torch = Torch(float("inf"))
    monkeypatch.setattr(test_gpu, "torch", torch)
    monkeypatch.setenv("FLASHC_CUDA_SYNC_TIMEOUT_S", "0.2")
    with pytest.raises(pytest.exit.Exception) as stop:
        test_gpu.synchronize()
    assert stop.value.returncode == 3
    assert "did not finish within 0.2 s" in str(stop.value)
    assert torch.stream.waits == 0


def test_without_the_variable_torch_waits_alone(monkeypatch):
    torch = Torch(float("inf"))
    monkeypatch.setattr(test_gpu, "torch", torch)
    monkeypatch.delenv("FLASHC_CUDA_SYNC_TIMEOUT_S", raising=False)
    test_gpu.synchronize()
    assert torch.stream.waits == 1


def test_a_timeout_that_is_not_seconds_is_refused(monkeypatch):
    monkeypatch.setattr(test_gpu, "torch", Torch(0))
    monkeypatch.setenv("FLASHC_CUDA_SYNC_TIMEOUT_S", "soon")
    with pytest.raises(pytest.exit.Exception) as stop:
        test_gpu.synchronize()
    assert stop.value.returncode == 2
    assert "'soon': give seconds" in str(stop.value)
