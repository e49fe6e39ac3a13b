"""Every answer is JSON with the right status, errors included."""
import socket

import pytest
import sqlalchemy as sa
from hypothesis import given, strategies as st

from nailgun_host.errors import first_line
from nailgun_host.settings import settings


def assert_json_error(response, status, message=None):
    assert response.status_int == status
    assert response.content_type == "application/json"
    assert set(response.json) == {"message", "errors"}
    if message is not None:
        assert response.json["message"] == message
    assert "Traceback" not in response.text and "<html" not in response.text.lower()


@pytest.mark.parametrize("body, message", [
    ("", "Empty request received"),
    ("   ", "Empty request received"),
    ("{not json", "Invalid json received"),
    (b"\xff\xfe", "Invalid json received"),
    ('{"name": NaN}', "Invalid json received"),
    ('{"name": -Infinity}', "Invalid json received"),
    ("[" * 100000 + "]" * 100000, "Invalid json received"),
    ('{"name": "\\ud800"}', "Invalid json received"),
    ('{"name": "x\\uDC00"}', "Invalid json received"),
])
def test_malformed_bodies_get_400(app, body, message):
    response = app.post("/api/v1/releases/", body, content_type="application/json", status=400)
    assert_json_error(response, 400, message)


def test_numbers_too_large_for_a_float_are_400_and_never_served(app):
    for url, body in (("/api/v1/nodes/", '{"mac": "52:54:00:ab:cd:e1", "meta": {"x": 1e400}}'),
                      ("/api/v1/nodes/", '{"mac": "52:54:00:ab:cd:e2", "meta": {"disks": [{"name": "sda", "size": 1e400}]}}'),
                      ("/api/v1/releases/", '{"name": "r", "version": "v-9.0", "operating_system": "Ubuntu", '
                                            '"attributes_metadata": {"x": [-1e400]}}')):
        response = app.post(url, body, content_type="application/json", status=400)
        assert_json_error(response, 400, "Numbers must be finite; one in the request is too large")
    assert app.get("/api/v1/nodes/").json == []


def test_schema_violation_names_the_field(app):
    response = app.post_json("/api/v1/releases/", {"name": "r", "version": 9, "operating_system": "Ubuntu"},
                             status=400)
    assert_json_error(response, 400, "9 is not of type 'string' (at 'version')")


@pytest.mark.parametrize("url", ["/api/v1/nothing-here", "/api/v1/clusters/xa/", "/elsewhere"])
def test_unknown_urls_get_json_404(app, url):
    assert_json_error(app.get(url, status=404), 404)


def test_missing_object_gets_404(app):
    assert_json_error(app.get("/api/v1/clusters/42/", status=404), 404, "Cluster not found")
    assert_json_error(app.get("/api/v1/nodes/42/", status=404), 404, "Node with id 42 was not found.")


def test_ids_beyond_the_integer_range_are_not_found(app):
    assert_json_error(app.get("/api/v1/clusters/{0}/".format(2 ** 31), status=404), 404, "Cluster not found")
    assert_json_error(app.get("/api/v1/nodes/99999999999999999999/", status=404), 404)


@pytest.mark.parametrize("method, url, body", [
    ("POST", "/api/v1/clusters/", {"name": "big", "release_id": 10 ** 20}),
    ("POST", "/api/v1/clusters/{cluster}/assignment/", [{"id": 10 ** 20, "roles": ["compute"]}]),
    ("POST", "/api/v1/clusters/{cluster}/unassignment/", [{"id": 10 ** 20}]),
    ("PUT", "/api/v1/nodes/{node}/", {"cluster_id": 10 ** 20}),
    ("GET", "/api/v1/nodes/?cluster_id=" + str(10 ** 20), None),
    ("GET", "/api/v1/tasks/?cluster_id=" + str(10 ** 20), None),
    ("PUT", "/api/v1/clusters/{cluster}/provision/?nodes=" + str(10 ** 20), None),
])
def test_numbers_beyond_the_database_integers_are_client_errors(app, env, method, url, body):
    cluster, node = env.create_cluster(), env.create_node()
    url = url.format(cluster=cluster["id"], node=node["id"])
    if body is None:
        response = app.request(url, method=method, expect_errors=True)
    else:
        response = app.request(url, method=method, body=app.JSONEncoder().encode(body).encode(),
                               content_type="application/json", expect_errors=True)
    assert response.status_int in (400, 404), response.text
    assert_json_error(response, response.status_int)
    assert env.get_node(node["id"])["cluster"] is None


def test_method_not_allowed_lists_allowed_methods_patch_included(app):
    response = app.delete("/api/v1/version/", status=405)
    assert_json_error(response, 405)
    assert response.headers["Allow"] == "GET, HEAD"
    response = app.post_json("/api/v1/clusters/1/attributes/", {}, status=405)
    assert response.headers["Allow"] == "GET, HEAD, PUT, PATCH"


def test_options_answers_with_allow(app):
    response = app.options("/api/v1/clusters/", status=204)
    assert response.headers["Allow"] == "GET, HEAD, POST, OPTIONS"


def test_lowercase_or_unknown_methods_get_json_405(app):
    for method in ("get", "BREW"):
        response = app.request("/api/v1/version/", method=method, expect_errors=True)
        assert_json_error(response, 405)


def test_body_over_the_cap_gets_413_and_nothing_is_written(app):
    settings["MAX_REQUEST_BODY"] = 1024
    big = {"name": "r" * 2000, "version": "mitaka-9.0", "operating_system": "Ubuntu"}
    assert_json_error(app.post_json("/api/v1/releases/", big, status=413), 413)
    assert app.get("/api/v1/releases/").json == []


def test_chunked_body_over_the_cap_gets_413_from_a_real_server(tmp_path, migrated_db, db_url):
    from tests.conftest import LiveServer

    config = tmp_path / "nailgun.yaml"
    config.write_text("MAX_REQUEST_BODY: 100\n")
    server = LiveServer(db_url, env={"NAILGUN_CONFIG": str(config)})
    try:
        chunk = b'{"name": "' + b"x" * 300 + b'"}'
        request = (b"POST /api/v1/releases/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   + b"%x\r\n" % len(chunk) + chunk + b"\r\n0\r\n\r\n")
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(request)
            answer = b""
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        assert answer.startswith(b"HTTP/1.1 413")
        assert b"application/json" in answer and b"larger than the limit" in answer
    finally:
        server.stop()


def test_a_surrogate_pair_is_a_character(app):
    app.post("/api/v1/releases/", '{"name": "\\ud83d\\ude00", "version": "liberty-8.0", "operating_system": "Ubuntu"}',
             content_type="application/json", status=201)
    assert [r["name"] for r in app.get("/api/v1/releases/").json] == ["\U0001F600"]


def test_a_conflict_found_by_the_database_names_no_constraint_and_logs_no_sql(app, monkeypatch, caplog):
    """A duplicate that slips past the handler's check (a race) is a generic 409; the log keeps no SQL."""
    from nailgun_host.objects import release as release_obj

    body = {"name": "r", "version": "v-9.0", "operating_system": "Ubuntu"}
    app.post_json("/api/v1/releases/", body, status=201)
    monkeypatch.setattr(release_obj, "check_unique", lambda *args, **kwargs: None)
    with caplog.at_level("DEBUG"):
        response = app.post_json("/api/v1/releases/", dict(body, description="secret-description"), status=409)
    assert_json_error(response, 409, "The request conflicts with the stored data")
    assert response.json["errors"] == []
    assert "releases" not in response.text and "constraint" not in response.text.lower()
    logged = [r for r in caplog.records if "ntegrity" in r.getMessage()]
    assert logged and all(r.levelname == "DEBUG" for r in logged)
    assert not any("INSERT" in r.getMessage() or "secret-description" in r.getMessage() for r in caplog.records)
    assert len(app.get("/api/v1/releases/").json) == 1


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"])
def test_a_request_that_loses_a_race_in_the_database_answers_409(app, env, monkeypatch, sqlstate):
    """A deadlock or serialization failure chosen by PostgreSQL is a lost race, not a 500 (issue 9, item 5)."""
    import sqlalchemy.exc
    from nailgun_host.objects import cluster as cluster_obj

    cluster = env.create_cluster()
    orig = type("PgError", (Exception,), {"sqlstate": sqlstate})("deadlock detected")

    def losing(*_args, **_kwargs):
        raise sqlalchemy.exc.OperationalError("SELECT ... FOR UPDATE", {}, orig)

    monkeypatch.setattr(cluster_obj, "get", losing)
    resp = app.put_json("/api/v1/clusters/{0}/".format(cluster["id"]), {"name": "x"}, status=409)
    assert resp.json == {"message": "The request collided with a concurrent one; nothing was changed: try again",
                         "errors": []}
    assert resp.headers["Retry-After"] == "1"


@given(st.text())
def test_an_errors_first_line_is_one_line_whatever_it_says(text):
    """``first_line`` (what logs and answers quote of a database's or a key manager's error) never fails on a
    message, empty or blank ones included: a handler of an error that raised IndexError itself answered 500."""
    said = first_line(ValueError(text))
    assert len(said.splitlines()) == 1
    assert said == (text.strip().splitlines()[0] if text.strip() else "ValueError")
    wrapped = sa.exc.OperationalError("SELECT 1", {}, ValueError(text))  # SQLAlchemy's: the driver's error is quoted
    assert first_line(wrapped) == said
