"""The request log (``nailgun_host.request_log``): a line per request, whatever answers it, with its id; the
errors logged while it runs carry that id; no credential or secret query value at the default level."""
import base64
import concurrent.futures
import contextlib
import copy
import errno
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import requests
import webtest
import yaml

from nailgun_host import request_log
from nailgun_host.app import build_wsgi
from nailgun_host.settings import settings
from tests.auth import write_users_file
from tests.configdb.conftest import ConfigAPI, read_cache_of
from tests.conftest import LOOPBACK, LiveServer

USERS = {"admin": ("admin-pw", ["admin"])}
LINE = re.compile(r'(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>[A-Z]+) nailgun\.requests '
                  r'\[(?P<id>[^\]]+)\] (?P<remote>\S+) "(?P<method>\S+) (?P<target>\S*)" (?P<status>\d{3}) '
                  r'(?P<ms>\d+\.\d\d) ms (?P<user>\S+)$')


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


@pytest.fixture
def log_file(tmp_path):
    """The process's logging configured as ``LOG: {file: ...}`` says; the lines it wrote."""
    path = tmp_path / "nailgun.log"
    handler = request_log.configure({"file": str(path), "level": "INFO"})
    root = logging.getLogger()
    level = root.level

    def lines():
        handler.flush()
        return path.read_text().splitlines()

    lines.handler, lines.path = handler, path
    yield lines
    root.removeHandler(handler)
    handler.close()
    root.setLevel(level)


@pytest.fixture
def local_app(migrated_db, tmp_path):
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"DATABASE_URL": settings.database_url,
                               "AUTH": {"method": "local", "users_file": users_file}})
    yield webtest.TestApp(build_wsgi())
    settings.clear()
    settings.update(saved)


def request_lines(lines):
    return [LINE.match(line) for line in lines if " nailgun.requests " in line]


def test_every_request_has_a_line_and_an_id_it_is_answered_with(app, log_file):
    answer = app.get("/api/v1/clusters/")
    missing = app.get("/api/v1/nowhere", status=404)
    refused = app.request("/api/v1/clusters/", method="BREW", status=405)
    matched = request_lines(log_file())
    assert [(m["method"], m["target"], m["status"], m["user"]) for m in matched] == [
        ("GET", "/api/v1/clusters/", "200", "anonymous"), ("GET", "/api/v1/nowhere", "404", "anonymous"),
        ("BREW", "/api/v1/clusters/", "405", "-")]
    assert [m["id"] for m in matched] == [a.headers["X-Request-Id"] for a in (answer, missing, refused)]
    assert len(set(m["id"] for m in matched)) == 3
    assert all(re.fullmatch(r"req-[0-9a-f]{32}", m["id"]) for m in matched)
    assert matched[0]["level"] == "INFO" and float(matched[0]["ms"]) > 0


def test_a_sane_client_request_id_is_kept_and_any_other_replaced(app, log_file):
    kept = app.get("/api/v1/version", headers={"X-Request-Id": "lcm-run-42:step.7"})
    assert kept.headers["X-Request-Id"] == "lcm-run-42:step.7"
    for forged in ("a b", "x" * 129, '" 200 0.1 ms admin', "-leading-dash"):
        answer = app.get("/api/v1/version", headers={"X-Request-Id": forged})
        assert re.fullmatch(r"req-[0-9a-f]{32}", answer.headers["X-Request-Id"])
    assert [m["id"] for m in request_lines(log_file())][0] == "lcm-run-42:step.7"


def test_401s_and_replayed_answers_are_logged_without_credentials(local_app, log_file):
    admin = basic("admin", "admin-pw")
    local_app.get("/api/v1/clusters/", headers=basic("admin", "wrong-pw"), status=401)
    cdb = ConfigAPI(webtest.TestApp(local_app.app, extra_environ={"HTTP_AUTHORIZATION": admin["Authorization"]}))
    cdb.component("comp1", ["resource1"])
    environment = cdb.environment(["comp1"])
    cdb.put(environment["id"], 1, {"db_password": "hunter2"})
    store = read_cache_of(local_app).store
    hits = store.hits
    for _ in range(2):
        local_app.get(cdb.url(environment["id"], 1), headers=admin)
    assert store.hits == hits + 1  # the second answer was replayed from memory
    lines = log_file()
    matched = request_lines(lines)
    assert (matched[0]["status"], matched[0]["user"]) == ("401", "-")
    reads = [m for m in matched if m["method"] == "GET" and m["target"] == cdb.url(environment["id"], 1)]
    assert [(m["status"], m["user"]) for m in reads] == [("200", "admin")] * 2
    text = "\n".join(lines)
    assert "admin-pw" not in text and "wrong-pw" not in text and "hunter2" not in text
    assert admin["Authorization"].split()[1] not in text


def test_query_values_named_like_secrets_are_masked_and_control_characters_escaped(app, log_file):
    app.get("/api/v1/nodes/?cluster_id=1&password=hunter2&os_token=abc&key=mysql_password", status="*")
    app.get("/api/v1/clusters/%0A2026-01-01%2000:00:00,000%20ERROR%20forged", status=404)
    lines = log_file()
    matched = request_lines(lines)
    assert matched[0]["target"] == "/api/v1/nodes/?cluster_id=1&password=<secret>&os_token=<secret>&key=mysql_password"
    assert "hunter2" not in "\n".join(lines) and "abc" not in matched[0]["target"]
    assert len(lines) == 2 and matched[1]["target"] == "/api/v1/clusters/%0A2026-01-01%2000:00:00,000%20ERROR%20forged"


def test_an_error_logged_while_a_request_runs_carries_its_id(migrated_db, tmp_path, log_file):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:write": "role:admin"\n')
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "AUTH": {"policy_file": str(policy_file)}})
    try:
        app = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
        policy_file.write_text("not: [a, rule\n")  # the file breaks while the server runs: every request is a 503
        answer = app.get("/api/v1/clusters/", status=503)
    finally:
        settings.clear()
        settings.update(saved)
    rid = answer.headers["X-Request-Id"]
    errors = [line for line in log_file() if " ERROR nailgun_host.policy " in line]
    assert errors and all("[{0}]".format(rid) in line for line in errors)
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ERROR ", errors[0])
    line = request_lines(log_file())[-1]
    assert (line["id"], line["status"], line["level"]) == (rid, "503", "ERROR")


def test_nailgun_api_writes_its_log_file_at_the_level_of_its_settings(db_url, migrated_db, tmp_path):
    def serve(level):
        log = tmp_path / "{0}.log".format(level)
        config = tmp_path / "{0}.yaml".format(level)
        config.write_text(yaml.safe_dump({"LOG": {"file": str(log), "level": level}}))
        server = LiveServer(db_url, env={"NAILGUN_CONFIG": str(config)})
        try:
            rid = requests.get(server.url + "/api/v1/clusters/", timeout=10).headers["X-Request-Id"]
            requests.get(server.url + "/api/v1/nowhere", timeout=10)
        finally:
            server.stop()
        return rid, log.read_text().splitlines()

    rid, lines = serve("INFO")
    matched = request_lines(lines)
    assert [(m["id"], m["method"], m["target"], m["status"]) for m in matched][0] == (
        rid, "GET", "/api/v1/clusters/", "200")
    assert [m["status"] for m in matched] == ["200", "404"]
    _, lines = serve("WARNING")
    assert len(lines) == 1 and " WARNING nailgun_host.auth.middleware [-] AUTH.method is none: " in lines[0], lines


def test_a_log_setting_the_server_cannot_use_is_refused_at_start():
    with pytest.raises(ValueError, match="LOG.level must be one of"):
        settings.reload(overrides={"LOG": {"level": "LOUD"}})
    with pytest.raises(ValueError, match="unknown settings LOG.path"):
        settings.reload(overrides={"LOG": {"path": "/var/log/fuel-nailgun-extensions/api.log"}})


def test_health_checks_write_no_alembic_lines(app, log_file):
    """Each health check reads the revisions: alembic's "Context impl ..." lines are not for the request log."""
    for _ in range(2):
        app.get("/api/v1/health")
    lines = log_file()
    assert [m["target"] for m in request_lines(lines)] == ["/api/v1/health"] * 2
    assert not [line for line in lines if " alembic" in line], lines


# -- the log file's writer (request_log.LogFile) ------------------------------------------------------

@contextlib.contextmanager
def alone(log_file):
    """The log file as the only handler, as in a server: pytest's capture set aside, requests leave their fields
    to the file's writer rather than make records."""
    loggers = [logging.getLogger(), request_log.LOG]
    held = [(logger, handler) for logger in loggers for handler in logger.handlers if handler is not log_file.handler]
    for logger, handler in held:
        logger.removeHandler(handler)
    try:
        assert request_log._log_file(logging.INFO) is log_file.handler
        yield
    finally:
        for logger, handler in held:
            logger.addHandler(handler)


def test_the_writer_writes_the_line_a_record_would_be(app, log_file):
    """Both ways give the same line: masked secrets, escapes, the level of a 5xx, no identity."""
    targets = ["/api/v1/nodes/?cluster_id=1&password=hunter2&os_token=abc", "/api/v1/clusters/%0Aforged%20line",
               "/api/v1/nowhere"]
    for target in targets:
        app.get(target, status="*")
    with alone(log_file):
        for target in targets:
            app.get(target, status="*")
        app.request("/api/v1/clusters/", method="BREW", status=405)
    app.request("/api/v1/clusters/", method="BREW", status=405)
    recorded = [m.groupdict() for m in request_lines(log_file())]
    for fields in recorded:
        del fields["time"], fields["ms"], fields["id"]
    assert recorded[:3] == recorded[3:6] and recorded[6] == recorded[7]
    assert "hunter2" not in str(recorded)

def test_the_writer_masks_a_repeated_request_by_the_secret_patterns_in_force(app, log_file, monkeypatch):
    """The writer remembers a request's logged fields (the same few come over and over), under the patterns that
    masked them: a parameter named secret since is masked in the next line of the same request."""
    target = "/api/v1/version?flavour=vanilla"
    with alone(log_file):
        app.get(target, headers={"X-Request-Id": "before"})
        for handler in logging.getLogger().handlers:  # the line written under the patterns it was answered under
            if isinstance(handler, request_log.LogFile):
                handler.flush()
        monkeypatch.setitem(settings, "SECRETS", dict(settings["SECRETS"], patterns=["flavour"]))
        app.get(target, headers={"X-Request-Id": "after"})
    lines = {m["id"]: m.group(0) for m in request_lines(log_file())}
    assert "flavour=vanilla" in lines["before"]
    assert "vanilla" not in lines["after"] and "flavour=" in lines["after"]


def test_a_line_is_in_the_file_a_moment_after_its_answer_without_a_flush(app, log_file):
    with alone(log_file):
        answer = app.get("/api/v1/version")
    deadline = time.monotonic() + 5
    while answer.headers["X-Request-Id"] not in log_file.path.read_text():  # the writer, not the test, wrote it
        assert time.monotonic() < deadline, "the line was not written"
        time.sleep(0.01)


def test_no_line_is_lost_or_torn_when_many_threads_answer(app, log_file):
    def send(number):
        return [app.get("/api/v1/version", headers={"X-Request-Id": "t{0}-{1}".format(number, n)}).status_int
                for n in range(100)]

    with alone(log_file), concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(status == 200 for statuses in pool.map(send, range(8)) for status in statuses)
    matched = request_lines(log_file())
    assert all(matched) and sorted(m["id"] for m in matched) == sorted(
        "t{0}-{1}".format(t, n) for t in range(8) for n in range(100))


def test_lines_go_to_the_new_file_once_logrotate_moved_the_old_one(app, log_file):
    with alone(log_file):
        app.get("/api/v1/version", headers={"X-Request-Id": "before-rotation"})
        log_file()
        os.rename(str(log_file.path), str(log_file.path) + ".1")
        app.get("/api/v1/version", headers={"X-Request-Id": "after-rotation"})
    assert [m["id"] for m in request_lines(log_file())] == ["after-rotation"]
    with open(str(log_file.path) + ".1") as rotated:
        assert [m["id"] for m in request_lines(rotated.read().splitlines())] == ["before-rotation"]


class _Stream:
    """A log file's stream whose ``flush`` fails as a full disk does ``failures`` times, and whose ``write``
    waits for ``opened`` (a slow disk) once ``entered`` is set."""

    def __init__(self, stream, failures=0):
        self.stream, self.failures = stream, failures
        self.entered, self.opened = threading.Event(), threading.Event()
        self.opened.set()

    def write(self, text):
        self.entered.set()
        self.opened.wait(10)
        return self.stream.write(text)

    def flush(self):
        if self.failures:
            self.failures -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        self.stream.flush()

    def close(self):
        self.stream.close()


def _fields(rid):
    return (time.time(), logging.INFO, rid, "127.0.0.1", "GET", "/api/v1/version", "", "200", 0.001, "admin")


def _written(path, rid, seconds=5):
    deadline = time.monotonic() + seconds
    while rid not in path.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_full_disk_loses_the_lines_it_refused_and_not_the_writer(tmp_path, capsys):
    """A write refused (ENOSPC at the flush) is said on stderr, as logging says it; the lines after it, once
    there is room again, are written: the writer thread lives on."""
    path = tmp_path / "full.log"
    handler = request_log.LogFile(str(path))
    handler.stream = stream = _Stream(handler.stream, failures=1)
    try:
        handler.request(_fields("refused"))
        deadline = time.monotonic() + 5
        while stream.failures and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stream.failures == 0
        time.sleep(0.1)  # the writer's failed batch over
        handler.request(_fields("after-room"))
        assert _written(path, "after-room"), "the writer died with the failed write"
    finally:
        handler.close()
    assert "No space left on device" in capsys.readouterr().err


def test_lines_wait_in_memory_up_to_a_bound_when_the_disk_is_slow(tmp_path, monkeypatch):
    """Beyond ``MAX_WAITING`` lines waiting, a request writes them itself (waiting for the disk, as before the
    writer thread), so a stalled disk does not fill the memory; every line is written once the disk moves."""
    monkeypatch.setattr(request_log, "MAX_WAITING", 50)
    path = tmp_path / "slow.log"
    handler = request_log.LogFile(str(path))
    handler.stream = stream = _Stream(handler.stream)
    stream.opened.clear()
    try:
        handler.request(_fields("first"))
        assert stream.entered.wait(5)  # the writer waits for the disk
        producer = threading.Thread(target=lambda: [handler.request(_fields("line-{0}".format(n)))
                                                    for n in range(200)])
        producer.start()
        producer.join(1)
        assert producer.is_alive() and len(handler._waiting) <= 50 + 1  # and the line of the request waiting
        stream.opened.set()
        producer.join(10)
        handler.flush()
        assert [line.split(" ")[4] for line in path.read_text().splitlines()] == \
            ["[first]"] + ["[line-{0}]".format(n) for n in range(200)]
    finally:
        stream.opened.set()
        handler.close()


def test_other_records_keep_their_place_among_request_lines(app, log_file):
    with alone(log_file):
        app.get("/api/v1/version", headers={"X-Request-Id": "first"})
        logging.getLogger("nailgun_host.somewhere").warning("between the two")
        app.get("/api/v1/version", headers={"X-Request-Id": "second"})
    lines = log_file()
    assert [line.split(" ", 5)[4] for line in lines] == ["[first]", "[-]", "[second]"]
    assert lines[1].endswith(" WARNING nailgun_host.somewhere [-] between the two")


def test_with_another_handler_too_the_line_is_a_record_both_get(app, log_file):
    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    with alone(log_file):
        request_log.LOG.addHandler(handler)
        try:
            app.get("/api/v1/version?password=hunter2", headers={"X-Request-Id": "recorded"})
        finally:
            request_log.LOG.removeHandler(handler)
    assert [m["target"] for m in request_lines(log_file())] == ["/api/v1/version?password=<secret>"]
    assert [record.request_id for record in seen] == ["recorded"]
    assert seen[0].getMessage().endswith('"GET /api/v1/version?password=<secret>" 200 {0} anonymous'.format(
        seen[0].getMessage().split('" 200 ')[1].split(" anonymous")[0]))


SERVER_THAT_STOPS = """
import os, signal, sys
from nailgun_host import request_log
request_log.configure({"file": sys.argv[1], "level": "INFO"})
def app(environ, start_response):
    start_response("200 OK", [])
    return [b""]
logged = request_log.RequestLog(app)
for number in range(500):
    logged({"REQUEST_METHOD": "GET", "PATH_INFO": "/n", "HTTP_X_REQUEST_ID": "n%d" % number}, lambda *a: None)
if sys.argv[2] == "sigterm":
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
"""


@pytest.mark.parametrize("how", ["exit", "sigterm"])
def test_the_lines_that_wait_are_written_when_the_process_ends(tmp_path, how):
    path = tmp_path / "api.log"
    ended = subprocess.run([sys.executable, "-c", textwrap.dedent(SERVER_THAT_STOPS), str(path), how], timeout=60)
    assert ended.returncode == (-15 if how == "sigterm" else 0)  # killed by the signal, as without the log file
    assert [m["id"] for m in request_lines(path.read_text().splitlines())] == ["n%d" % n for n in range(500)]


SERVER_THAT_FORKS = """
import logging, os, sys
from nailgun_host import request_log
request_log.configure({"file": sys.argv[1], "level": "INFO"})
logging.getLogger("nailgun_host.master").info("before the fork")
worker = os.fork()
if worker == 0:
    logging.getLogger("nailgun_host.worker").info("in the worker")
    logging.shutdown()
    os._exit(0)
os.waitpid(worker, 0)
"""


def test_a_line_waiting_when_the_server_forks_its_workers_is_written_once(tmp_path):
    """gunicorn ``--preload``: the master's lines still waiting for its writer at the fork are the master's to
    write, not each worker's too."""
    path = tmp_path / "api.log"
    ended = subprocess.run([sys.executable, "-c", textwrap.dedent(SERVER_THAT_FORKS), str(path)], timeout=60)
    assert ended.returncode == 0
    assert sorted(line.split(" ", 4)[4] for line in path.read_text().splitlines()) == [
        "[-] before the fork", "[-] in the worker"]


def test_the_writer_remembers_no_long_request_so_its_memory_stays_bounded(tmp_path):
    """A client may send paths and queries of hundreds of KB (waitress takes 256 KB of headers); remembered by
    the thousand they would hold gigabytes: only short ones are remembered, a long one's line is still whole."""
    path = tmp_path / "long.log"
    handler = request_log.LogFile(str(path))
    try:
        long_path = "/api/v1/" + "\x01" * 100000
        handler.request((time.time(), logging.INFO, "long", "127.0.0.1", "GET", long_path, "", "404", 0.001, None))
        handler.request(_fields("short"))
        handler.flush()
        assert _written(path, "short")
        assert [key[2] for key in handler._fields] == ["/api/v1/version"]
        assert "%01" * 100000 in path.read_text()
    finally:
        handler.close()
