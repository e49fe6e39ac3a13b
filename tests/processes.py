"""Server processes seen through ``/proc``: the state readers a server started, and whether a process still runs."""
import time


def state_readers(pid):
    """The ``nailgun_host.state_reader`` processes ``pid`` started (``READ_CACHE.state_reader: process``)."""
    with open("/proc/{0}/task/{0}/children".format(pid)) as children:
        found = []
        for child in children.read().split():
            try:
                with open("/proc/{0}/cmdline".format(child), "rb") as cmdline:
                    if b"nailgun_host.state_reader" in cmdline.read().split(b"\0"):
                        found.append(int(child))
            except FileNotFoundError:  # gone meanwhile
                pass
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
