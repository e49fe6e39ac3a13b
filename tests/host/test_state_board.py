"""The board between the read cache's state reader and the server's threads (``nailgun_platform.state_board``): a
thread takes a published read only when it meets the lease's condition, waits for one in flight that will, and
never takes a read the reader is still writing."""
import functools
import threading
import time

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from nailgun_platform import state_board
from nailgun_platform.state_board import StateBoard

LEASE = 0.005


@functools.lru_cache(maxsize=None)
def _one_board():
    return StateBoard.create()


@pytest.fixture
def board():
    return StateBoard.create()


def test_a_read_sent_less_than_a_lease_before_the_request_is_taken_and_an_older_one_is_not(board):
    sent = time.monotonic()
    board.publish(({1: 7},), sent)
    assert board.lease(sent + LEASE / 2, LEASE) == (({1: 7},), sent)
    assert board.lease(sent - 1, LEASE) == (({1: 7},), sent)  # sent after the request arrived
    started = time.monotonic()
    assert board.lease(sent + 3 * LEASE, LEASE) is None  # too old, and no read coming: at once
    assert time.monotonic() - started < LEASE


@hypothesis_settings(max_examples=300, deadline=None)
@given(sent=st.floats(0, 1e6), age=st.floats(-0.05, 0.05), lease=st.floats(0.0005, 0.01))
def test_no_read_is_taken_that_started_a_lease_or_more_before_the_request(sent, age, lease):
    board = _one_board()
    board.publish(("state",), sent)
    asked = sent + age
    taken = board.lease(asked, lease)
    assert (taken is not None) == (asked - sent < lease)
    if taken is not None:
        assert taken == (("state",), sent)


def test_a_thread_waits_for_the_read_in_flight_when_it_will_do(board):
    asked = time.monotonic()
    board.publish(("old",), asked - 10 * LEASE)
    board.reading(asked - LEASE / 2)  # started less than a lease before the request

    def reader():
        time.sleep(0.002)
        board.publish(("new",), asked - LEASE / 2)

    thread = threading.Thread(target=reader)
    thread.start()
    assert board.lease(asked, LEASE) == (("new",), asked - LEASE / 2)
    thread.join()


def test_a_read_in_flight_sent_a_lease_before_the_request_is_not_waited_for(board):
    asked = time.monotonic()
    board.reading(asked - 2 * LEASE)
    started = time.monotonic()
    assert board.lease(asked, LEASE) is None
    assert time.monotonic() - started < LEASE


def test_the_wait_for_a_reader_that_does_not_publish_ends_after_a_lease(board):
    asked = time.monotonic()
    board.reading(asked)
    started = time.monotonic()
    assert board.lease(asked, 0.05) is None
    assert 0.05 <= time.monotonic() - started < 1


def test_a_read_being_written_or_damaged_is_not_taken(board):
    sent = time.monotonic()
    board.publish(("first",), sent)
    memory = board._memory
    board.publish(("second",), sent + 0.001)
    sequence = state_board._SEQUENCE.unpack_from(memory)[0]
    state_board._SEQUENCE.pack_into(memory, 0, sequence + 1)  # odd: the reader is writing
    other = StateBoard(board.fd, board.key)
    assert other.lease(sent + 0.002, LEASE) is None
    state_board._SEQUENCE.pack_into(memory, 0, sequence + 2)
    memory[state_board.BODY] ^= 0xFF  # the bytes do not match their digest
    assert other.lease(sent + 0.002, LEASE) is None
    memory[state_board.BODY] ^= 0xFF
    assert other.lease(sent + 0.002, LEASE) == (("second",), sent + 0.001)


def test_a_read_published_without_the_boards_key_is_not_taken(board):
    """Any process of the server's user may open the board's memory (``/proc/PID/fd``): what it writes there
    without the key is never unpickled."""
    sent = time.monotonic()
    StateBoard(board.fd, b"another key").publish(("forged",), sent)
    assert board.lease(sent, LEASE) is None
    board.publish(("real",), sent)
    assert board.lease(sent, LEASE) == (("real",), sent)


def test_the_reader_reads_once_per_lease_while_states_are_wanted_and_not_at_all_when_none_are(board):
    reads = []
    stop = threading.Event()

    def read_states():
        reads.append(time.monotonic())
        return ("state",)

    thread = threading.Thread(target=state_board.serve, args=(board, read_states, 0.02, lambda: not stop.is_set()))
    thread.start()
    try:
        time.sleep(0.3)
        assert reads == []  # nobody asked
        started = time.monotonic()
        while time.monotonic() - started < 0.5:  # a request a millisecond
            taken = board.lease(time.monotonic(), 0.02)
            time.sleep(0.001)
        assert taken is not None and taken[0] == ("state",)
        assert 0.5 / 0.02 - 8 <= len(reads) <= 0.5 / 0.02 + 2
        assert all(b - a >= 0.02 for a, b in zip(reads, reads[1:]))
        time.sleep(state_board.REST_AFTER + 0.05)
        resting = len(reads)
        time.sleep(0.3)
        assert len(reads) == resting, "once requests stop, the reader rests"
    finally:
        stop.set()
        thread.join()


def test_a_failed_read_is_not_published_and_the_reader_goes_on(board):
    outcomes = iter([RuntimeError("database down"), ("back",)] + [("back",)] * 1000)
    stop = threading.Event()

    def read_states():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    board.lease(time.monotonic(), 0.02)
    thread = threading.Thread(target=state_board.serve, args=(board, read_states, 0.02, lambda: not stop.is_set()))
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while board.lease(time.monotonic(), 0.02) is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert board.lease(time.monotonic(), 0.02)[0] == ("back",)
    finally:
        stop.set()
        thread.join()


def test_a_thread_waits_for_a_read_only_while_the_reader_promises_one_soon(board):
    """A resting reader (nothing due), or one that missed its promise by a lease (stopped, gone), is not waited
    for; a read due within the lease is."""
    lease = 0.2
    asked = time.monotonic()
    board.publish(("old",), asked - 1.5 * lease)
    for due in (0.0, asked - 2 * lease):
        board.due(due)
        started = time.monotonic()
        assert board.lease(asked, lease) is None
        assert time.monotonic() - started < lease / 2
    board.due(asked + lease / 4)
    started = time.monotonic()
    assert board.lease(asked, lease) is None  # nobody publishes here: it waited for the promise, a lease at most
    assert lease <= time.monotonic() - started < 3 * lease
