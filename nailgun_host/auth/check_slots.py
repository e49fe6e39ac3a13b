"""A few password checks at once per process: password guessing cannot take every thread of the server.

A bcrypt check costs a quarter of a second of a core by design, a Keystone password authentication up to
``AUTH.keystone.timeout``. Without a bound, wrong passwords sent in parallel held every thread of the
server, and a logged-in user's request queued behind them for seconds. A check waits at most ``wait_ms``
for a free slot, then gives up (``Busy``: 503 with ``Retry-After``) rather than queue and hold its
thread. Remembered credentials and tokens never take a slot.
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
        #: checks running now
        self.in_use = 0

    @contextlib.contextmanager
    def slot(self):
        """Holds a slot while the block checks a password; ``Busy`` if none is free within ``wait_ms``."""
        if not self._free.acquire(timeout=self.wait):
            raise Busy()
        with self._lock:
            self.in_use += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_use -= 1
            self._free.release()
