"""``READ_CACHE.state_reader: process``: the child process that reads the read cache's states
(``nailgun_platform.state_board``), so that the server's request threads send no state statement while it reads.

``start`` runs it as ``python -m nailgun_host.state_reader FD``: the board's shared memory is the file descriptor,
and what it reads (the database URL, the routes' fingerprints, the lease) comes on its standard input, so that
the database's password is in no command line or environment. It reads through the host's ``statement_reader``
on the same database, stops when the server process that started it is gone, and is stopped when that process
exits. Under gunicorn with ``preload_app``, the workers forked from the process that built the application share
its board and its one reader.
"""
import atexit
import logging
import os
import pickle
import signal
import subprocess
import sys

from nailgun_host import db
from nailgun_platform import state_board

LOG = logging.getLogger(__name__)
#: how long a stopped reader has to exit before it is killed
STOP_WAIT = 5


def start(fingerprints, lease_seconds):
    """A ``StateBoard`` that a new reader process of this database fills with ``fingerprints``' states (each
    object's ``read(rows)``; they are pickled, so each must be importable by reference); the process is its
    ``process``."""
    board = state_board.StateBoard.create()
    given = pickle.dumps({
        "url": db.get_engine().url.render_as_string(hide_password=False), "fingerprints": tuple(fingerprints),
        "lease_seconds": lease_seconds, "server": os.getpid()})
    child = subprocess.Popen([sys.executable, "-m", __name__, str(board.fd)], stdin=subprocess.PIPE,
                             pass_fds=(board.fd,), close_fds=True)
    try:
        child.stdin.write(given)
        child.stdin.close()
    except OSError:
        LOG.warning("The state reader did not start; the server's threads read the states")
    atexit.register(_stop, child)
    board.process = child
    return board


def _stop(child):
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main(argv=None):
    """The reader process (``start``)."""
    fd = int((argv or sys.argv[1:])[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C stops the server, which stops this
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s [state reader] %(message)s")
    given = pickle.load(sys.stdin.buffer)
    db.configure(given["url"])
    fingerprints = given["fingerprints"]
    server = given["server"]
    state_board.serve(state_board.StateBoard(fd),
                      lambda: tuple(fingerprint.read(db.statement_reader.rows) for fingerprint in fingerprints),
                      given["lease_seconds"], lambda: os.getppid() == server)


if __name__ == "__main__":
    main()
