"""``READ_CACHE.state_reader: process``: the child process that reads the read cache's states
(``nailgun_platform.state_board``), so that the server's request threads send no state statement while it reads.

``StateReader`` starts it at the first request that wants a state (a process that never serves a document read,
``nailgun-feed``, starts none; under gunicorn each worker starts its own) as ``python -m nailgun_host.state_reader
FD``: the board's shared memory is the file descriptor, and what the reader needs (the database URL, the routes'
fingerprints, the lease, the board's key, the LOG settings) comes on its standard input, so that the database's
password is in no command line or environment. It reads through the host's ``statement_reader`` on the same
database, logs where the server logs, and stops when the server process that started it is gone. One found gone
is started again, at most once per ``RESTART_SECONDS``.
"""
import atexit
import logging
import os
import pickle
import subprocess
import sys
import threading

from nailgun_host import db, request_log
from nailgun_host.settings import settings
from nailgun_platform import state_board

LOG = logging.getLogger(__name__)
#: how long a stopped reader has to exit before it is killed
STOP_WAIT = 5
#: a reader found gone is started again at most this often
RESTART_SECONDS = 10.0


class StateReader:
    """What the read cache asks (``lease``) in front of a board and the reader process filling it."""

    def __init__(self, fingerprints, lease_seconds):
        self.fingerprints = tuple(fingerprints)
        self.lease_seconds = lease_seconds
        self.board = self.process = None
        self._owner = None  # the process whose reader and board these are (a forked worker starts its own)
        self._started_at = -RESTART_SECONDS
        self._stopped = False
        self._lock = threading.Lock()
        atexit.register(self.stop)
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        """A forked child starts its own reader when it reads: the parent's board and process are not its own (its
        copy of the board is closed; the parent's stays open)."""
        if self.board is not None:
            self.board.close()
        self.board = self.process = self._owner = None
        self._started_at = -RESTART_SECONDS
        self._lock = threading.Lock()

    def lease(self, asked_at, lease_seconds):
        """The board's ``lease``; without a published read, the reader is started (again) if it is not running."""
        board = self.board
        if board is not None:
            found = board.lease(asked_at, lease_seconds)
            if found is not None:
                return found
        if asked_at - self._started_at >= RESTART_SECONDS and self._lock.acquire(blocking=False):
            try:
                self._look_after(asked_at)
            finally:
                self._lock.release()
        return None

    def _look_after(self, now):
        if self._stopped:
            return
        if self.process is not None:
            code = self.process.poll()
            if code is None:
                return
            LOG.warning("The state reader exited (%s); it is started again", code)
        self._started_at = now
        if self.board is None:
            self.board = state_board.StateBoard.create()
            self._owner = os.getpid()
        try:
            given = pickle.dumps({
                "url": db.get_engine().url.render_as_string(hide_password=False), "log": settings["LOG"],
                "fingerprints": self.fingerprints, "lease_seconds": self.lease_seconds, "key": self.board.key,
                "server": os.getpid()})
            self.process = subprocess.Popen(
                [_python(), "-m", __name__, str(self.board.fd)], stdin=subprocess.PIPE, pass_fds=(self.board.fd,),
                close_fds=True, start_new_session=True, cwd="/",  # not the server's directory first on its path
                env=dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path)))
        except Exception as exc:
            LOG.warning("The state reader did not start (the server's threads read the states): %s", exc)
            return
        try:
            self.process.stdin.write(given)
            self.process.stdin.close()
        except OSError as exc:
            LOG.warning("The state reader did not start (the server's threads read the states): %s", exc)
            self.process.kill()

    def stop(self):
        with self._lock:
            self._stopped = True
        process = self.process
        if process is None or self._owner != os.getpid() or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _python():
    """This interpreter, also where the server is not ``python`` (uwsgi's binary): the environment's own."""
    if "python" in os.path.basename(sys.executable):
        return sys.executable
    return os.path.join(sys.prefix, "bin", "python3")


def main(argv=None):
    """The reader process (``StateReader``)."""
    fd = int((argv or sys.argv[1:])[0])
    given = pickle.load(sys.stdin.buffer)
    request_log.configure(given["log"])  # (with a log file, SIGTERM writes its last lines first)
    db.configure(given["url"])
    fingerprints, server = given["fingerprints"], given["server"]
    state_board.serve(state_board.StateBoard(fd, given["key"]),
                      lambda: tuple(fingerprint.read(db.statement_reader.rows) for fingerprint in fingerprints),
                      given["lease_seconds"], lambda: os.getppid() == server)


if __name__ == "__main__":
    main()
