"""Who keeps failing to log in: user names and client addresses slowed down, then locked out for a while.

As Keystone's ``lockout_failure_attempts`` and ``lockout_duration``: after ``attempts`` failed password
checks in a row, a user name is locked for ``duration`` seconds, and every password sent for it, the
right one included, is refused at once without a check (429 with ``Retry-After``). A client address is
locked the same way after ``address_attempts`` failures, whatever names they tried (random names must
not escape the count). Before that, a name or address that failed gets one check at a time: guesses
sent in parallel are refused until the one being checked is decided, so a burst cannot run more checks
than the count allows. Attempts refused while locked are not counted, so a lock ends ``duration`` after
it began: keeping a name locked costs an attacker ``attempts`` checked failures every ``duration``.
Failures are forgotten ``duration`` after the last, and a right password forgets its name's.

The counts live in this process's memory (waitress serves a host with one process): ``MAX_ENTRIES``
names and addresses at most, the least recently failed dropped first, so a flood of random names costs
memory only up to that bound, and drops a lock only after as many newer checked failures.
"""
import collections
import contextlib
import dataclasses
import logging
import threading
import time

from nailgun_host.auth import AuthenticationFailed, TryLater

LOG = logging.getLogger(__name__)
MAX_ENTRIES = 10000


class LockedOut(TryLater):
    status = "429 Too Many Requests"


@dataclasses.dataclass
class _Record:
    failures: int = 0
    last_failure: float = 0.0
    locked_until: float = 0.0
    checking: bool = False


class FailedLogins:
    """The failure counts of user names and client addresses (``attempts`` 0: names are never locked,
    ``address_attempts`` 0: addresses are never locked)."""

    def __init__(self, attempts, duration, address_attempts, clock=time.monotonic):
        self.limits = {"user name": attempts, "address": address_attempts}
        self.duration = duration
        self.clock = clock
        self._records = collections.OrderedDict()  # (kind, value) -> _Record, least recently failed first
        self._lock = threading.Lock()

    def __len__(self):
        """The names and addresses whose failures or lock are held."""
        return len(self._records)

    def _keys(self, name, address):
        return [(kind, value) for kind, value in (("user name", name), ("address", address))
                if value and self.limits[kind]]

    def _record(self, key, now):
        """The record of ``key``, None once its lock and failures are over."""
        record = self._records.get(key)
        if record and not record.checking and record.locked_until <= now \
                and record.last_failure + self.duration <= now:
            del self._records[key]
            return None
        return record

    def _refuse_if_locked(self, keys, now):
        for key in keys:
            record = self._record(key, now)
            if record and record.locked_until > now:
                raise LockedOut("Too many failed logins for this {0}: locked for {1} s after {2} failures; "
                                "try again later".format(key[0], self.duration, self.limits[key[0]]),
                                record.locked_until - now)

    def refuse_if_locked(self, name, address):
        """``LockedOut`` while ``name`` or ``address`` is locked."""
        if not self._records:  # nobody failed lately (every right password asks): no lock to take
            return
        with self._lock:
            self._refuse_if_locked(self._keys(name, address), self.clock())

    @contextlib.contextmanager
    def attempt(self, name, address):
        """A password check of ``name`` from ``address`` runs in the block: ``LockedOut`` if either is locked
        or already has a check running after a failure. An ``AuthenticationFailed`` leaving the block is a
        failure of both; leaving it normally forgets the name's failures."""
        keys = self._keys(name, address)
        with self._lock:
            now = self.clock()
            self._refuse_if_locked(keys, now)
            records = [self._record(key, now) for key in keys]
            if any(record and record.checking for record in records):
                raise LockedOut("A login of this user name or address failed and another is being checked; "
                                "try again in a second", 1)
            for record in records:
                if record:
                    record.checking = True
        outcome = None
        try:
            yield
            outcome = "right"
        except AuthenticationFailed:
            outcome = "wrong"
            raise
        finally:
            with self._lock:
                for key in keys:
                    self._settle(key, outcome)

    def _settle(self, key, outcome):
        record = self._records.get(key)
        if record:
            record.checking = False
        if outcome == "right" and key[0] == "user name":
            self._records.pop(key, None)
        if outcome != "wrong":
            return
        now = self.clock()
        if record is None:
            while len(self._records) >= MAX_ENTRIES:
                self._records.popitem(last=False)
            record = self._records[key] = _Record()
        self._records.move_to_end(key)
        record.failures += 1
        record.last_failure = now
        if record.failures >= self.limits[key[0]]:
            LOG.warning("Login locked for %s s: %s %r after %s failed passwords", self.duration, key[0], key[1],
                        record.failures)
            record.failures, record.locked_until = 0, now + self.duration
