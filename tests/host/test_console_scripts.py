"""``nailgun-api`` and ``nailgun-syncdb`` as an operator runs them."""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import requests

from tests.commands import ctrl_c_reaches_it
from tests.conftest import free_port

#: the console commands these tests run: (module of nailgun_host.cmd, function)
COMMANDS = {"serve": ("api", "serve"), "syncdb": ("syncdb", "syncdb"), "users": ("users", "users"),
            "secrets_keys": ("secrets", "secrets_keys")}


def _environ(home):
    environ = {k: v for k, v in os.environ.items() if k != "NAILGUN_DB_URL"}
    environ["HOME"] = str(home)
    environ["NAILGUN_CONFIG"] = ""  # a new user's defaults, even where a package installed its settings file
    return environ


def _wait_until_it_answers(base, server):
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(base + "/api/v1/version", timeout=1)
            return
        except requests.ConnectionError:
            assert time.monotonic() < deadline and server.poll() is None, "nailgun-api did not start"
            time.sleep(0.2)


@contextlib.contextmanager
def nailgun_api(environ, cwd=None, args=()):
    """``nailgun-api`` on a free port, once it answers: yields its base URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()",
                               "--port", str(port)] + list(args), env=environ, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:{0}".format(port)
    try:
        _wait_until_it_answers(base, server)
        yield base
    finally:
        server.terminate()
        server.wait(10)


def test_nailgun_api_serves_on_the_embedded_sqlite_default(tmp_path):
    with nailgun_api(_environ(tmp_path)) as base:
        answer = requests.get(base + "/api/v1/version", timeout=5)
        assert answer.headers["Content-Type"] == "application/json"
        assert answer.json()["auth_required"] is False
        assert (tmp_path / ".nailgun" / "nailgun.db").exists()


def test_nailgun_api_serves_only_the_api_not_the_working_directory(tmp_path):
    """web.py's runsimple would serve ./static/ (files, listings, HTML 404s) next to the API."""
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "secret.txt").write_text("the file content")
    with nailgun_api(_environ(tmp_path), cwd=tmp_path) as base:
        for path in ("/static/secret.txt", "/static/", "/static/missing"):
            answer = requests.get(base + path, timeout=5)
            assert answer.status_code == 404, path
            assert answer.headers["Content-Type"] == "application/json", path
            assert "the file content" not in answer.text


def test_syncdb_is_idempotent(tmp_path):
    url = "sqlite:///" + str(tmp_path / "n.db")
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", "from nailgun_host.cmd.syncdb import syncdb; syncdb()",
                                 "--db-url", url], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as connection:
        admin = connection.execute(sa.text("SELECT count(*) FROM network_groups WHERE name='fuelweb_admin'"))
        assert admin.scalar() == 1
    engine.dispose()


def _run(script, args, environ):
    return subprocess.run([sys.executable, "-c", "from nailgun_host.cmd.{0} import {1}; {1}()".format(*COMMANDS[script])]
                          + list(args), env=environ, capture_output=True, text=True)


def test_config_option_is_read_instead_of_nailgun_config(tmp_path):
    """``--config`` overrides ``NAILGUN_CONFIG``: a file that variable names is not even opened."""
    config = tmp_path / "nailgun.yaml"
    config.write_text("DNS_DOMAIN: example.com\n")
    environ = dict(_environ(tmp_path), NAILGUN_CONFIG=str(tmp_path / "missing.yaml"))
    assert _run("serve", ["--help"], environ).returncode == 0
    result = _run("syncdb", ["--config", str(config), "--db-url", "sqlite:///" + str(tmp_path / "n.db")], environ)
    assert result.returncode == 0, result.stderr


def test_an_operators_mistake_is_one_line_not_a_traceback(tmp_path):
    environ = _environ(tmp_path)
    listed = tmp_path / "list.yaml"
    listed.write_text("- DNS_DOMAIN\n")
    db_url = "sqlite:///" + str(tmp_path / "n.db")
    for script, args, message in [
            ("syncdb", ["--config", str(tmp_path / "missing.yaml")], "cannot read the settings file: "),
            ("syncdb", ["--config", str(listed)], "is not a YAML mapping of setting names"),
            ("syncdb", ["--db-url", "nosuchdialect://x"], "the database URL nosuchdialect://x is not valid"),
            ("syncdb", ["--db-url", "sqlite:///" + str(listed / "n.db")], "cannot use the database "),
    ]:
        result = _run(script, args + ([] if "--db-url" in args else ["--db-url", db_url]), environ)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr and message in result.stderr, (args, result.stderr)
    with nailgun_api(environ, args=["--db-url", db_url]) as base:
        result = _run("serve", ["--db-url", db_url, "--port", base.rsplit(":", 1)[1]], environ)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "nailgun-api: error: cannot listen on 127.0.0.1:" in result.stderr


def test_ctrl_c_stops_nailgun_api_without_waiting_for_a_waiting_feed_request(tmp_path):
    """A change-feed request waiting in a thread answers at once when the server is stopped (SIGINT),
    instead of holding the stop up for its whole ``wait``."""
    port = free_port()
    root = "http://127.0.0.1:{0}".format(port)
    base = root + "/api/v1"
    server = subprocess.Popen([sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()",
                               "--port", str(port)], env=_environ(tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=ctrl_c_reaches_it)
    try:
        _wait_until_it_answers(root, server)
        assert requests.post(base + "/config/components", json={"name": "c", "resource_definitions": []}).ok
        assert requests.post(base + "/config/environments", json={"components": ["c"], "hierarchy_levels": []}).ok
        answers = []
        waiter = threading.Thread(target=lambda: answers.append(
            requests.get(base + "/config/environments/1/changes?since=0&wait=60", timeout=90)))
        waiter.start()
        time.sleep(1)  # it is waiting now (nothing was written)
        assert waiter.is_alive()
        server.send_signal(signal.SIGINT)
        server.wait(20)  # far less than the 60 s it waits for
        waiter.join(5)
        assert [(a.status_code, a.json()["changes"]) for a in answers] == [(200, [])]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def test_a_misspelt_top_level_setting_is_refused_in_one_line(tmp_path):
    """``DATABSE_URL:`` ignored would mean the SQLite file in $HOME instead of the PostgreSQL meant."""
    config = tmp_path / "m.yaml"
    config.write_text("DATABSE_URL: postgresql+psycopg://nailgun:pw@db.example/nailgun\nDNS_DOMAIN: example.com\n")
    for script, prog in (("syncdb", "nailgun-syncdb"), ("serve", "nailgun-api")):
        result = _run(script, ["--config", str(config)], _environ(tmp_path))
        assert result.returncode == 1, result.stderr
        assert result.stderr.splitlines() == [
            "{0}: error: cannot read the settings file: unknown settings DATABSE_URL in {1}: a typo here could "
            "leave the API open".format(prog, config)], result.stderr
    assert not (tmp_path / ".nailgun").exists()


def test_a_metrics_dir_that_cannot_be_made_is_one_line(tmp_path):
    config = tmp_path / "m.yaml"
    config.write_text("STATS: {metrics_dir: /proc/nope}\n")
    result = _run("serve", ["--config", str(config), "--db-url", "sqlite:///" + str(tmp_path / "n.db"),
                            "--port", str(free_port())], _environ(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == \
        "nailgun-api: error: cannot use STATS.metrics_dir /proc/nope: No such file or directory", result.stderr


def test_help_says_where_the_settings_and_the_database_come_from(tmp_path):
    """The real order: --config, NAILGUN_CONFIG, the packaged file; --db-url, NAILGUN_DB_URL, DATABASE_URL of the
    settings file, the embedded SQLite file."""
    config = "--config CONFIG YAML settings file (default: $NAILGUN_CONFIG, else " \
             "/etc/fuel-nailgun-extensions/settings.yaml when it exists; NAILGUN_CONFIG= reads no file)"
    db_url = "--db-url DB_URL SQLAlchemy URL (default: $NAILGUN_DB_URL, else DATABASE_URL of the settings file, " \
             "else the embedded SQLite file)"
    for script, has_db_url in (("syncdb", True), ("serve", True), ("users", True), ("secrets_keys", True)):
        result = _run(script, ["--help"], _environ(tmp_path))
        assert result.returncode == 0, result.stderr
        text = " ".join(result.stdout.split())
        assert config in text, (script, text)
        assert (db_url in text) == has_db_url, (script, text)
