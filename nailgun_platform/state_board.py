"""The read cache's states, read by a process of their own and handed to the server's threads in shared memory.

The read cache (``read_cache``) trusts a state read that started less than a lease before a request
arrived. Read in a request thread, that statement hands the interpreter's lock over several times per lease
while the other threads wait for it (``benchmarks/README.md``, goal 1). With ``READ_CACHE.state_reader:
process`` a child process reads every fingerprint's state once per lease while requests come often (``DENSE``),
and publishes each read with the monotonic time it was sent (a host's monotonic clock is one for all its
processes). A request thread takes the published read when it meets the read cache's condition; the lease's
argument is unchanged, since it is the same comparison of the same times. When no such read is published (the
reader is starting, resting, slow or gone), the thread waits for the reader's read in flight if that read
qualifies, and otherwise reads itself as before.

The board is a little memory shared by one server process and its reader (``memfd``, handed to the child as a
file descriptor): a sequence number (odd while the reader writes), the last time a request wanted a state, the
start of the read in flight, and the published read: its length, its keyed digest and its bytes (a pickle of
``(sent_at, states)``). A thread takes a read only when the sequence number is even and unchanged around its
copy and the digest holds under the board's key, which only the server and its reader know (the memory itself
can be opened by any process of the same user, through ``/proc``).
"""
import hashlib
import hmac
import logging
import mmap
import os
import pickle
import struct
import time

LOG = logging.getLogger(__name__)

SIZE = 1 << 20
#: sequence (Q), wanted at (d), reading since (d), length (I), padding, wants (Q), next read due (d); then the
#: digest (DIGEST bytes) and the read's bytes
_HEAD = struct.Struct("<QddIxxxxQd")
_SEQUENCE = struct.Struct("<Q")
_COUNT = struct.Struct("<Q")
_TIME = struct.Struct("<d")
_LENGTH = struct.Struct("<I")
WANTED_AT, READING_SINCE, LENGTH, WANTS, NEXT_DUE = 8, 16, 24, 32, 40
DIGEST = 32
BODY = _HEAD.size + DIGEST
assert _HEAD.size == NEXT_DUE + _TIME.size
#: A read ahead is worth its statement when a request takes it. Requests count at most one want per WANT_EVERY and
#: process; the reader starts reading once at least DENSE of the WANT_EVERY slots of the last SAMPLE seconds had one
#: (about 350 requests a second, whatever the lease), reads once per lease while they keep coming, and rests when
#: none came for REST_AFTER seconds (or two leases, if longer). Fewer requests are served by the threads' own reads,
#: a statement per lease at most, as in ``thread`` mode.
WANT_EVERY, SAMPLE, DENSE, REST_AFTER = 0.001, 0.1, 0.3, 0.1
#: how often a thread waiting for the reader's read in flight looks at the board
WAIT_PAUSE = 0.0002


class StateBoard:
    """Both sides of the board: ``lease`` for the server's threads, ``reading`` and ``publish`` for the reader."""

    def __init__(self, fd, key):
        self.fd = fd
        self.key = key
        self._memory = mmap.mmap(fd, SIZE)
        #: (sequence, sent_at, states) of the last read taken from the board
        self._known = (0, None, None)
        self._wanted = 0.0

    @classmethod
    def create(cls):
        fd = os.memfd_create("nailgun-state-board")
        os.ftruncate(fd, SIZE)
        return cls(fd, os.urandom(32))

    def close(self):
        self._memory.close()
        os.close(self.fd)

    def _digest(self, body):
        return hashlib.blake2b(body, key=self.key, digest_size=DIGEST).digest()

    # --- the server's threads ---------------------------------------------------------------------------

    def lease(self, asked_at, lease_seconds):
        """``(states, sent_at)`` of a published read sent less than ``lease_seconds`` before ``asked_at`` (or
        after it). Waits, at most a lease, for the reader's read in flight when it would do, or for its next read
        when it is due within that time; None when there is none to wait for (the reader rests or fails)."""
        memory = self._memory
        if asked_at - self._wanted >= WANT_EVERY:
            self._wanted = asked_at
            _TIME.pack_into(memory, WANTED_AT, asked_at)
            _COUNT.pack_into(memory, WANTS, _COUNT.unpack_from(memory, WANTS)[0] + 1)  # (a lost count is no harm)
        deadline = None
        while True:
            known = self._known
            sequence = _SEQUENCE.unpack_from(memory)[0]
            if sequence != known[0] and not sequence & 1:
                known = self._take(sequence) or known
            if known[1] is not None and asked_at - known[1] < lease_seconds:
                return known[2], known[1]
            reading = _TIME.unpack_from(memory, READING_SINCE)[0]
            now = time.monotonic()
            if deadline is None:
                deadline = now + lease_seconds
            due = _TIME.unpack_from(memory, NEXT_DUE)[0]
            # a promise the reader missed by a lease (stopped, or gone) is not waited for
            coming = asked_at - reading < lease_seconds if reading else now - lease_seconds < due < deadline
            if not coming or now >= deadline:
                return None
            time.sleep(WAIT_PAUSE)

    def _take(self, sequence):
        memory = self._memory
        length = _LENGTH.unpack_from(memory, LENGTH)[0]
        if BODY + length > SIZE:
            return None
        digest, body = memory[_HEAD.size:BODY], memory[BODY:BODY + length]
        if _SEQUENCE.unpack_from(memory)[0] != sequence or not hmac.compare_digest(digest, self._digest(body)):
            return None  # the reader wrote meanwhile (the next look takes its read), or not the reader
        sent_at, states = pickle.loads(body)
        known = self._known = (sequence, sent_at, states)
        return known

    # --- the reader ---------------------------------------------------------------------------------------

    def wanted_at(self):
        return _TIME.unpack_from(self._memory, WANTED_AT)[0]

    def due(self, at):
        """The reader's next read starts at ``at`` (monotonic); 0: none is promised (resting, or failing)."""
        _TIME.pack_into(self._memory, NEXT_DUE, at)

    def wants(self):
        """How many times requests told that they wanted a state (at most once per half lease and process)."""
        return _COUNT.unpack_from(self._memory, WANTS)[0]

    def reading(self, since):
        """The read sent at ``since`` (monotonic) is in flight; 0: none is."""
        _TIME.pack_into(self._memory, READING_SINCE, since)

    def publish(self, states, sent_at):
        body = pickle.dumps((sent_at, states), protocol=pickle.HIGHEST_PROTOCOL)
        if BODY + len(body) > SIZE:
            raise ValueError("the states take {0} bytes, more than the board's {1}".format(len(body), SIZE - BODY))
        memory = self._memory
        sequence = _SEQUENCE.unpack_from(memory)[0] | 1
        _SEQUENCE.pack_into(memory, 0, sequence)
        memory[BODY:BODY + len(body)] = body
        memory[_HEAD.size:BODY] = self._digest(body)
        _LENGTH.pack_into(memory, LENGTH, len(body))
        _SEQUENCE.pack_into(memory, 0, sequence + 1)
        self.reading(0.0)


def serve(board, read_states, lease_seconds, keep_going):
    """The reader's loop: while ``keep_going()`` and requests want states often enough (``DENSE``), read them
    (``read_states()``, a tuple) once per lease and publish each read with the time it was sent. A failed read
    is not published: the server's threads then read themselves, and the application says how the database
    fails."""
    next_at, failing, active, wants = 0.0, False, False, board.wants()
    board.due(0.0)  # (a reader before this one may have promised a read)
    slots = SAMPLE / WANT_EVERY
    rest_after = max(REST_AFTER, 2 * lease_seconds)
    while keep_going():
        now = time.monotonic()
        if not active:
            time.sleep(SAMPLE)
            wants, before = board.wants(), wants
            active = (wants - before) >= DENSE * slots
            continue
        if now - board.wanted_at() >= rest_after:
            board.due(0.0)
            active, wants = False, board.wants()
            continue
        if now < next_at:
            time.sleep(next_at - now)
            continue
        board.reading(now)
        try:
            board.publish(read_states(), now)
        except Exception as exc:
            board.reading(0.0)
            board.due(0.0)  # the threads read themselves meanwhile rather than wait for a read that may fail
            if not failing:
                LOG.warning("The state reader cannot read the states (the server's threads read them): %s",
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            failing = True
        else:
            if failing:
                LOG.warning("The state reader reads the states again")
            failing = False
        next_at = now + lease_seconds
        if not failing:
            board.due(next_at)
