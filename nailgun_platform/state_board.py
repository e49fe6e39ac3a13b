"""The read cache's states, read by a process of their own and handed to the server's threads in shared memory.

The read cache (``read_cache``) trusts a state read that started less than a lease before a request
arrived. Read in a request thread, that statement hands the interpreter's lock over several times per lease
while the other threads wait for it, which under load cost a replayed read about a tenth of its throughput
(``benchmarks/README.md``, goal 1). With ``READ_CACHE.state_reader: process`` a child process reads every
fingerprint's state once per lease while requests come, and publishes each read with the monotonic time it
was sent (a host's monotonic clock is one for all its processes). A request thread takes the published read
when it meets the read cache's condition; the lease's argument is unchanged, since it is the same comparison
of the same times. When no such read is published (the child is starting, idle, slow or gone), the thread
waits for the child's read in flight if that read qualifies, and otherwise reads itself as before.

The board is a few bytes of memory shared by the server process and its reader (``memfd``, handed to the
child as a file descriptor): a sequence number (odd while the reader writes), the last time a request wanted a
state, the start of the read in flight, and the published read's length, checksum and bytes (a pickle of
``(sent_at, states)``, made and read only by this package's own two processes). A reader of the board takes a
read only when the sequence number is even and unchanged around its copy and the checksum holds.
"""
import logging
import mmap
import os
import pickle
import struct
import time
import zlib

LOG = logging.getLogger(__name__)

SIZE = 1 << 20
#: sequence (Q), wanted at (d), reading since (d), length (I), checksum (I); the published bytes follow
_HEAD = struct.Struct("<QddII")
_SEQUENCE = struct.Struct("<Q")
_TIME = struct.Struct("<d")
WANTED_AT, READING_SINCE, LENGTH = 8, 16, 24
BODY = _HEAD.size
#: how often a request thread tells the reader that states are wanted (a write to shared memory)
WANT_EVERY = 0.1
#: the reader stops reading once no request wanted a state for this long, and then looks this often
IDLE_AFTER, IDLE_PAUSE = 2.0, 0.05
#: how often a thread waiting for the reader's read in flight looks at the board
WAIT_PAUSE = 0.0002


class StateBoard:
    """Both sides of the board: ``lease`` for the server's threads, ``reading`` and ``publish`` for the reader."""

    def __init__(self, fd):
        self.fd = fd
        self._memory = mmap.mmap(fd, SIZE)
        #: (sequence, sent_at, states) of the last read taken from the board
        self._known = (0, None, None)
        self._wanted = 0.0

    @classmethod
    def create(cls):
        fd = os.memfd_create("nailgun-state-board")
        os.ftruncate(fd, SIZE)
        return cls(fd)

    # --- the server's threads ---------------------------------------------------------------------------

    def lease(self, asked_at, lease_seconds):
        """``(states, sent_at)`` of a published read sent less than ``lease_seconds`` before ``asked_at`` (or
        after it). While the reader is at work (its last read is less than two leases old, or its read in
        flight would do), waits for its next read, at most a lease; None when there is none to wait for."""
        memory = self._memory
        if asked_at - self._wanted >= WANT_EVERY:
            self._wanted = asked_at
            _TIME.pack_into(memory, WANTED_AT, asked_at)
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
            coming = asked_at - reading < lease_seconds if reading else \
                known[1] is not None and asked_at - known[1] < 2 * lease_seconds
            if not coming or now >= deadline:
                return None
            time.sleep(WAIT_PAUSE)

    def _take(self, sequence):
        memory = self._memory
        _, _, _, length, checksum = _HEAD.unpack_from(memory)
        if BODY + length > SIZE:
            return None
        body = memory[BODY:BODY + length]
        if _SEQUENCE.unpack_from(memory)[0] != sequence or zlib.crc32(body) != checksum:
            return None  # the reader wrote meanwhile: the next look takes its read
        sent_at, states = pickle.loads(body)
        known = self._known = (sequence, sent_at, states)
        return known

    # --- the reader ---------------------------------------------------------------------------------------

    def wanted_at(self):
        return _TIME.unpack_from(self._memory, WANTED_AT)[0]

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
        struct.pack_into("<II", memory, LENGTH, len(body), zlib.crc32(body))
        _SEQUENCE.pack_into(memory, 0, sequence + 1)
        self.reading(0.0)


def serve(board, read_states, lease_seconds, keep_going):
    """The reader's loop: while ``keep_going()`` and requests want states, read them (``read_states()``, a tuple)
    once per lease and publish each read with the time it was sent. A failed read is not published: the
    server's threads then read themselves, and the application says how the database fails."""
    next_at, failing = 0.0, False
    while keep_going():
        now = time.monotonic()
        if now - board.wanted_at() > IDLE_AFTER:
            time.sleep(IDLE_PAUSE)
            continue
        if now < next_at:
            time.sleep(next_at - now)
            continue
        board.reading(now)
        try:
            states = read_states()
        except Exception as exc:
            board.reading(0.0)
            if not failing:
                LOG.warning("The state reader cannot read the states (the server's threads read them): %s",
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            failing = True
        else:
            board.publish(states, now)
            failing = False
        next_at = now + lease_seconds
