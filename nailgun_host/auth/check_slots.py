"""A few password checks at once per process: password guessing cannot take every thread of the server.

A bcrypt check costs a quarter of a second of a core by design, a Keystone password authentication up to
``AUTH.keystone.timeout``. Without a bound, wrong passwords sent in parallel held every thread of the
server, and a logged-in user's request queued behind them for seconds. A check waits at most ``wait_ms``
for a free slot, then gives up (``Busy``: 503 with ``Retry-After``) rather than queue and hold its
thread; and no more checks wait than there are slots (the others give up at once), or waiting guesses
would hold the threads instead. Remembered credentials and tokens never take a slot.
"""
import contextlib
import os
import threading

from nailgun_host.auth import TryLater


class Busy(TryLater):
    status = "503 Service Unavailable"

    def __init__(self):
        super().__init__("Too many passwords are being checked now; try again shortly (a token, or "
                         "credentials checked lately, are served meanwhile)", 1)


def cores():
    """The CPU cores this process may run on: bcrypt keeps one busy per check."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class CheckSlots:
    def __init__(self, size, wait_ms):
        self.size = size
        self.wait = wait_ms / 1000
        self._free = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        #: checks running now, and waiting for a slot
        self.in_use = self.waiting = 0

    def _acquire(self):
        if self._free.acquire(blocking=False):
            return True
        with self._lock:
            if self.waiting >= self.size:
                return False
            self.waiting += 1
        try:
            return self._free.acquire(timeout=self.wait)
        finally:
            with self._lock:
                self.waiting -= 1

    @contextlib.contextmanager
    def slot(self):
        """Holds a slot while the block checks a password; ``Busy`` if none is free within ``wait_ms``."""
        if not self._acquire():
            raise Busy()
        with self._lock:
            self.in_use += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_use -= 1
            self._free.release()
