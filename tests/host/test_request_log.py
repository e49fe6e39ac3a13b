"""The request log (``nailgun_host.request_log``): a line per request, whatever answers it, with its id; the
errors logged while it runs carry that id; no credential or secret query value at the default level."""
import base64
import copy
import logging
import re

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
    """The process's logging configured as ``LOG: {file: ...}`` says; the lines it wrote, parsed."""
    path = tmp_path / "nailgun.log"
    handler = request_log.configure({"file": str(path), "level": "INFO"})
    root = logging.getLogger()
    level = root.level

    def lines():
        handler.flush()
        return path.read_text().splitlines()

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
