"""What the benchmark scripts start: a free loopback port, a server process waited for, a scratch database."""
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served(command, port, env=None, cwd=None):
    """``command`` running until the block ends, once it listens on ``port``; its base URL."""
    process = subprocess.Popen(command, env=dict(os.environ, **(env or {})), cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("{0} did not start".format(command[0]))
            time.sleep(0.1)
        yield "http://127.0.0.1:{0}".format(port)
    finally:
        process.terminate()
        process.wait(10)


def gunicorn(app, env=None, cwd=ROOT, workers=2):
    """``gunicorn -w workers app`` (a ``module:callable`` importable from ``cwd``) on a free port."""
    port = free_port()
    binary = shutil.which("gunicorn", path=os.path.dirname(sys.executable)) or shutil.which("gunicorn")
    return served([binary, "-w", str(workers), "-b", "127.0.0.1:{0}".format(port), app], port, env, cwd)


def nailgun_api(db_url, env=None):
    """``nailgun-api`` (cheroot, one process; it migrates the database) on a free port."""
    port = free_port()
    return served([sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()", "--db-url", db_url,
                   "--port", str(port)], port, env)


@contextlib.contextmanager
def database(pg_url, name, directory):
    """A SQLite file in ``directory``, or (``pg_url``) a scratch PostgreSQL database ``name`` next to it, with a
    key repository of its own (``NAILGUN_KEY_REPOSITORY``, unless set), dropped afterwards; its URL."""
    if not pg_url:
        yield "sqlite:///" + os.path.join(directory, "{0}.db".format(name))
        return
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text("DROP DATABASE IF EXISTS {0} WITH (FORCE)".format(name)))
        connection.execute(sa.text("CREATE DATABASE " + name))
    keys = tempfile.mkdtemp(prefix=name + "-")
    named = "NAILGUN_KEY_REPOSITORY" in os.environ
    os.environ.setdefault("NAILGUN_KEY_REPOSITORY", os.path.join(keys, "fernet-keys"))
    try:
        yield sa.make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text("DROP DATABASE IF EXISTS {0} WITH (FORCE)".format(name)))
        admin.dispose()
        if not named:
            del os.environ["NAILGUN_KEY_REPOSITORY"]
        shutil.rmtree(keys)
