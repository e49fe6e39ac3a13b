"""Server processes seen through ``/proc``: the state readers a server started, and whether a process still runs."""
import contextlib
import glob
import time


def children(pid):
    """The processes ``pid``'s threads started (a request thread starts the state reader)."""
    found = []
    for task in glob.glob("/proc/{0}/task/*/children".format(pid)):
        with contextlib.suppress(FileNotFoundError), open(task) as listed:
            found.extend(int(child) for child in listed.read().split())
    return found


def state_readers(pid):
    """The ``nailgun_host.state_reader`` processes ``pid`` started (``READ_CACHE.state_reader: process``)."""
    found = []
    for child in children(pid):
        with contextlib.suppress(FileNotFoundError), open("/proc/{0}/cmdline".format(child), "rb") as cmdline:
            if b"nailgun_host.state_reader" in cmdline.read().split(b"\0"):
                found.append(child)
    return found


def running(pid):
    """Whether ``pid`` runs: an orphan that exited stays a zombie until its new parent (init) reaps it."""
    try:
        with open("/proc/{0}/stat".format(pid)) as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone_within(pids, seconds):
    """Whether every process of ``pids`` stops running within ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(running(pid) for pid in pids)
