"""Calls scripts/gpu_check.py's synchronize on a stand-in for torch whose
stream (or event) finishes after argv[2] seconds ("never": not at all),
and says how it returned."""
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import gpu_check  # noqa: E402  pylint: disable=wrong-import-position

finish = float("inf") if sys.argv[2] == "never" else float(sys.argv[2])
done_at = time.monotonic() + finish


class Work:
    """A stream or an event: query() is True once the work has finished."""
    synchronized = 0

    def query(self):
        return time.monotonic() >= done_at

    def synchronize(self):
        Work.synchronized += 1


class Cuda:
    stream = Work()

    def current_stream(self):
        return self.stream

    def synchronize(self):
        Work.synchronized += 1


class Torch:
    cuda = Cuda()


start = time.monotonic()
event = Work() if len(sys.argv) > 3 and sys.argv[3] == "event" else None
gpu_check.synchronize(Torch(), event)
print(f"returned after the torch wait ({Work.synchronized} call), "
      f"polled {'long enough' if time.monotonic() - start >= min(finish, 1) else 'briefly'}")
sys.stdout.flush()
os._exit(0)
