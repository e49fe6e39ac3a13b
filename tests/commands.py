"""Running ``fuel-ext``/``fuel2`` command lines: as a subprocess, or fuel-ext's ``main(argv)`` in this process.

A subprocess costs a Python start-up and cliff's entry-point scan for every command
(about 0.3 s for fuel-ext, 0.6 s for fuel2). Most CLI tests only need what the command
does, so they call the function the ``fuel-ext`` script calls, with the same arguments,
environment and stdin, and get the same ``CompletedProcess`` back. A few tests keep
running the real executables end to end.
"""
import functools
import importlib.metadata
import io
import locale
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

#: the ``fuel-ext`` script next to this interpreter
FUEL_EXT = str(Path(sys.executable).parent / "fuel-ext")
#: run the command line through fuel-ext's ``main(argv)`` in the test process
IN_PROCESS = "in-process"


def ctrl_c_reaches_it():
    """``preexec_fn`` for a command a test stops with SIGINT, as a terminal's Ctrl-C: a test run started in the
    background (``bash .ci/run &``) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@functools.lru_cache(maxsize=None)
def fuel_ext_main():
    """The function the ``fuel-ext`` script runs, found through its console_scripts entry point
    (so it follows the module wherever setup.cfg points)."""
    (entry_point,) = importlib.metadata.entry_points(group="console_scripts", name="fuel-ext")
    return entry_point.load()


def run_command(command, args, environ, stdin=None, timeout=120):
    """Run ``command args...`` with exactly ``environ`` and ``stdin``; answer with a CompletedProcess.

    ``command`` is an executable, run as a subprocess, or ``IN_PROCESS``. ``timeout`` bounds a
    subprocess; in process, the client's own HTTP timeout (``HTTP_TIMEOUT``) bounds each request.
    """
    args = [str(a) for a in args]
    if command != IN_PROCESS:
        return subprocess.run([command, *args], input=stdin, capture_output=True, text=True, env=environ,
                              timeout=timeout)
    return _run_in_process(args, environ, stdin)


def _exit_status(code):
    """What a process exiting with ``sys.exit(code)`` returns to its parent."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_in_process(args, environ, stdin):
    """fuel-ext's ``main(args)`` with the process's environment, streams and argv swapped for the call.

    cliff's App adds a handler to the root logger, sets its level and the locale on every run;
    they are put back, so one command does not change the next one or the other tests.
    """
    stdout, stderr = io.StringIO(), io.StringIO()
    saved_environ = dict(os.environ)
    saved_streams = sys.stdin, sys.stdout, sys.stderr, sys.argv
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_locale = locale.setlocale(locale.LC_ALL)
    os.environ.clear()
    os.environ.update(environ)
    sys.stdin, sys.stdout, sys.stderr, sys.argv = io.StringIO(stdin or ""), stdout, stderr, [FUEL_EXT, *args]
    try:
        try:
            returncode = _exit_status(fuel_ext_main()(args))
        except SystemExit as exc:  # argparse's usage errors, --help
            returncode = _exit_status(exc.code)
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved_streams
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        locale.setlocale(locale.LC_ALL, saved_locale)
        os.environ.clear()
        os.environ.update(saved_environ)
    return subprocess.CompletedProcess([FUEL_EXT, *args], returncode, stdout.getvalue(), stderr.getvalue())
