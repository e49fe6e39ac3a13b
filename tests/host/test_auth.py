"""Authentication and authorization in local mode, in process: every route family, every method.

The same checks against a real Keystone live in tests/host/test_auth_keystone.py.
"""
import base64
import copy
import json
import os
import re
import stat
import threading
import time

import bcrypt
import pytest
import webtest
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_profile
from hypothesis import strategies as st
import yaml
from cryptography.fernet import Fernet

from nailgun_host import policy
from nailgun_host.app import build_wsgi
from nailgun_host.auth import local
from nailgun_host.extensions import get_all_extensions
from nailgun_host.settings import settings
from nailgun_host.urls import URLS
from tests.auth import edit_users_file

#: user: (password, roles)
USERS = {"admin": ("admin-pw", ["admin"]), "member": ("member-pw", ["member"]),
         "reader": ("reader-pw", ["reader"]), "service": ("service-pw", ["member", "service"]),
         "nobody": ("nobody-pw", [])}


def write_users_file(path, users=USERS):
    content = {"token_secret": Fernet.generate_key().decode(), "users": {
        name: {"password": bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode(), "roles": roles}
        for name, (password, roles) in users.items()}}
    path.write_text(yaml.safe_dump(content))
    return path


@pytest.fixture
def auth_settings():
    """Restores the settings a test changes."""
    saved = copy.deepcopy(dict(settings))
    yield settings
    settings.clear()
    settings.update(saved)


@pytest.fixture
def local_app(migrated_db, tmp_path, auth_settings):
    users_file = write_users_file(tmp_path / "users.yaml")
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file)}})
    return webtest.TestApp(build_wsgi())


def basic(user, password=None):
    password = USERS[user][0] if password is None else password
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


#: values of placeholders whose pattern is no list of choices
SAMPLES = {"session": "0" * 32}


def concrete(entry):
    """A path the route matches: ids are 1, other placeholders their pattern's first choice."""
    def fill(match):
        name = match.group(1)
        if name in SAMPLES:
            return SAMPLES[name]
        if name in entry["patterns"]:
            return re.split(r"[|()]", entry["patterns"][name].strip("()"))[0] or "x"
        return "1"
    return "/api/v1" + re.sub(r"<([a-z_]+)>", fill, entry["template"])


def all_routes():
    routes = list(URLS)
    for extension in get_all_extensions():
        routes.extend(extension.urls)
    return routes


def route_methods():
    return list(_route_methods())


def _route_methods():
    for entry in all_routes():
        handler = entry["handler"]
        for method in handler.allowed_methods() + ["OPTIONS"]:
            yield pytest.param(entry, method, id="{0} {1}".format(method, entry["template"]))


PUBLIC = {("GET", "/version"), ("HEAD", "/version"), ("GET", "/health"), ("HEAD", "/health")}


@pytest.mark.parametrize("entry, method", route_methods())
def test_every_route_needs_credentials_and_readers_only_read(local_app, entry, method):
    path = concrete(entry)
    if (method, entry["template"]) in PUBLIC:
        assert local_app.request(path, method=method, expect_errors=True).status_int in (200, 503)
        return
    refused = local_app.request(path, method=method, expect_errors=True)
    assert refused.status_int == 401, refused
    assert refused.content_type == "application/json"
    assert refused.headers["WWW-Authenticate"] == 'Basic realm="nailgun"'
    as_reader = local_app.request(path, method=method, headers=basic("reader"), expect_errors=True)
    rule = entry["handler"].policy_rule(method)
    if method in ("GET", "HEAD", "OPTIONS") and rule == policy.READ:
        assert as_reader.status_int not in (401, 403), as_reader
    else:  # a write, or a read of secrets (nailgun:read_secrets) or of the request statistics (nailgun:read_stats)
        assert rule in (policy.WRITE, policy.ADMIN, policy.READ_SECRETS, policy.CHANGE_SECRETS, policy.READ_STATS), rule
        assert as_reader.status_int == 403, as_reader
        if method != "HEAD":
            assert rule in as_reader.json["message"]
    if not entry["handler"].public:  # an identity without roles may do nothing else
        assert local_app.request(path, method=method, headers=basic("nobody"), expect_errors=True).status_int == 403


def test_unknown_paths_are_401_not_404_without_credentials(local_app):
    assert local_app.get("/api/v1/no/such/thing", status=401).json["message"].startswith("Authentication")
    assert local_app.get("/no/such/thing", status=401)
    assert local_app.get("/api/v1/no/such/thing", headers=basic("reader"), status=404)


def test_version_says_auth_is_required_only_when_it_is(local_app, auth_settings):
    assert local_app.get("/api/v1/version").json["auth_required"] is True
    auth_settings.reload()
    assert webtest.TestApp(build_wsgi()).get("/api/v1/version").json["auth_required"] is False


@pytest.mark.parametrize("header", [
    {"Authorization": "Basic !!!"}, {"Authorization": "Basic " + base64.b64encode(b"nocolon").decode()},
    {"Authorization": "Basic " + base64.b64encode(b":pw").decode()}, {"Authorization": "Bearer abc"},
    {"X-Auth-Token": "not-a-token"}, {"X-Auth-Token": "gAAAAA" + "x" * 100},
])
def test_malformed_credentials_are_401_never_500(local_app, header):
    answer = local_app.get("/api/v1/clusters/", headers=header, status=401)
    assert answer.json["errors"] == []


def test_wrong_passwords_and_unknown_users_are_refused(local_app):
    local_app.get("/api/v1/clusters/", headers=basic("reader", "wrong"), status=401)
    local_app.get("/api/v1/clusters/", headers=basic("reader", "x" * 200), status=401)
    local_app.get("/api/v1/clusters/", headers={"Authorization": "Basic " + base64.b64encode(
        b"ghost:reader-pw").decode()}, status=401)
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=200)


def test_identity_headers_sent_by_a_client_are_ignored(local_app):
    forged = dict(basic("reader"), **{"X-Roles": "admin", "X-User-Name": "admin", "X-Identity-Status": "Confirmed"})
    local_app.post_json("/api/v1/clusters/", {}, headers=forged, status=403)
    local_app.get("/api/v1/clusters/", headers={"X-Roles": "admin", "X-Identity-Status": "Confirmed"}, status=401)


def config_values_url(app, headers):
    """The values URL of a new ConfigDB environment with one resource, made with ``headers``."""
    api = "/api/v1/config"
    component = app.post_json(api + "/components", {
        "name": "c", "resource_definitions": [{"name": "r", "content": {}}]}, headers=headers, status=201).json
    env = app.post_json(api + "/environments", {"components": ["c"], "hierarchy_levels": []},
                        headers=headers, status=201).json
    return "{0}/environments/{1}/resources/{2}/values".format(
        api, env["id"], component["resource_definitions"][0]["id"])


def login(app, user, password=None, tenant="admin"):
    body = {"auth": {"passwordCredentials": {"username": user, "password": USERS[user][0] if password is None
                                             else password}, "tenantName": tenant}}
    return app.post_json("/keystone/v2.0/tokens", body, expect_errors=True)


def test_fuel2_login_gives_a_token_in_keystone_v2_shape(local_app):
    answer = login(local_app, "member")
    assert answer.status_int == 200
    access = answer.json["access"]
    assert access["user"]["name"] == "member" and access["user"]["roles"] == [{"name": "member"}]
    assert access["token"]["expires"].endswith("Z") and access["serviceCatalog"] == []
    token = access["token"]["id"]
    assert local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}).status_int == 200
    # keystoneclient logs in again with the token it got
    again = local_app.post_json("/keystone/v2.0/tokens", {"auth": {"token": {"id": token}, "tenantName": "admin"}})
    assert again.json["access"]["user"]["name"] == "member"
    assert login(local_app, "member", "wrong").status_int == 401
    for body in ({}, {"auth": {}}, {"auth": {"passwordCredentials": {"username": 1, "password": "x"}}}, []):
        assert local_app.post_json("/keystone/v2.0/tokens", body, expect_errors=True).status_int == 400
    assert local_app.get("/keystone/v2.0/tokens", expect_errors=True).status_int == 405


def test_local_tokens_expire_and_die_with_their_user(local_app, tmp_path, auth_settings):
    token = login(local_app, "member").json["access"]["token"]["id"]
    users_file = tmp_path / "users.yaml"
    content = yaml.safe_load(users_file.read_text())
    content["users"]["member"]["roles"] = ["reader"]
    edit_users_file(users_file, yaml.safe_dump(content) + "\n")  # roles are read again once the file is seen
    local_app.post_json("/api/v1/clusters/", {}, headers={"X-Auth-Token": token}, status=403)
    del content["users"]["member"]
    edit_users_file(users_file, yaml.safe_dump(content))
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=401)
    auth_settings["AUTH"]["token_ttl"] = 1
    expiring = webtest.TestApp(build_wsgi())
    old = Fernet(content["token_secret"]).encrypt_at_time(b'{"user": "reader"}', 1000).decode()
    expiring.get("/api/v1/clusters/", headers={"X-Auth-Token": old}, status=401)


def test_only_admins_delete_clusters(local_app):
    assert policy.ADMIN == local_app.delete("/api/v1/clusters/1", headers=basic("member"), status=403).json["errors"][0]
    assert local_app.delete("/api/v1/clusters/1", headers=basic("admin"), status=404)


def test_the_author_of_a_change_is_the_identity(local_app):
    values = config_values_url(local_app, basic("member"))
    local_app.put_json(values, {"a": 1}, headers=basic("member"), status=204)
    # a member may not claim to be someone else; a service may, and the record says so
    local_app.put_json(values, {"a": 2}, headers=dict(basic("member"), **{"X-Config-Author": "alice"}), status=403)
    local_app.put_json(values, {"a": 3}, headers=dict(basic("service"), **{"X-Config-Author": "alice"}),
                       status=204)
    local_app.put_json(values, {"a": 4}, headers=dict(basic("member"), **{"X-Config-Author": "member"}),
                       status=204)
    history = local_app.get(values + "/history", headers=basic("reader")).json
    authors = [entry["author"] for entry in sorted(history, key=lambda entry: entry["version"])]
    assert authors == ["member", "alice (via service)", "member"]


def test_a_policy_file_overrides_the_rules_in_code(migrated_db, tmp_path, auth_settings):
    users_file = write_users_file(tmp_path / "users.yaml")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:write": "role:admin"\n"nailgun:read": "role:reader"\n')
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file),
                                             "policy_file": str(policy_file)}})
    app = webtest.TestApp(build_wsgi())
    assert "nailgun:write" in app.post_json("/api/v1/clusters/", {}, headers=basic("member"), status=403).json[
        "message"]
    app.get("/api/v1/clusters/", headers=basic("member"), status=403)
    app.get("/api/v1/clusters/", headers=basic("reader"), status=200)


def test_users_command_writes_a_private_file_and_the_server_sees_it(migrated_db, db_url, tmp_path, auth_settings,
                                                                     monkeypatch, capsys):
    import io

    from nailgun_host.cmd import users


    users_file = tmp_path / "etc" / "users.yaml"
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert users.users(["--users-file", str(users_file), "set", "ops", "--role", "member"]) == 0
    assert stat.S_IMODE(users_file.stat().st_mode) == 0o600
    assert "s3cret" not in users_file.read_text()
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file)}})
    app = webtest.TestApp(build_wsgi())
    auth = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
    assert app.post_json("/api/v1/clusters/", {}, headers=auth, expect_errors=True).status_int == 400
    assert users.users(["--users-file", str(users_file), "set", "ops", "--role", "reader", "--keep-password"]) == 0
    app.post_json("/api/v1/clusters/", {}, headers=auth, status=403)
    assert users.users(["--users-file", str(users_file), "list"]) == 0
    assert "ops: reader" in capsys.readouterr().out
    assert users.users(["--db-url", db_url, "--users-file", str(users_file), "delete", "ops"]) == 0
    app.get("/api/v1/clusters/", headers=auth, status=401)
    with pytest.raises(SystemExit):
        users.users(["--db-url", db_url, "--users-file", str(users_file), "delete", "ops"])


def test_a_changed_password_counts_at_once(local_app, db_url, tmp_path, monkeypatch):
    import io

    from nailgun_host.cmd import users


    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=200)  # now in the cache
    monkeypatch.setattr("sys.stdin", io.StringIO("new-pw\n"))
    assert users.users(["--db-url", db_url, "--users-file", str(tmp_path / "users.yaml"), "set", "reader", "--role",
                        "reader"]) == 0
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=401)
    local_app.get("/api/v1/clusters/", headers=basic("reader", "new-pw"), status=200)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.20.0.2", "::"])
def test_nailgun_api_refuses_the_network_without_authentication(host, capsys, auth_settings):
    from nailgun_host.cmd import api


    with pytest.raises(SystemExit) as exited:
        api.serve(["--host", host, "--port", "1"])
    assert exited.value.code == 1
    assert "--allow-insecure-no-auth" in capsys.readouterr().err


def test_nailgun_api_needs_both_certificate_and_key(capsys, auth_settings):
    from nailgun_host.cmd import api


    with pytest.raises(SystemExit):
        api.serve(["--cert-file", "/etc/hostname", "--port", "1"])
    assert "--cert-file and --key-file go together" in capsys.readouterr().err


HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=200)


@settings_profile(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=st.sampled_from(["Basic ", "basic ", "Bearer ", ""]), value=HEADER_TEXT, token=HEADER_TEXT,
       login=st.one_of(st.none(), st.binary(max_size=300)))
def test_no_credential_a_client_makes_up_passes_or_breaks_the_server(local_app, scheme, value, token, login):
    """Whatever a client sends as credentials: 401 in JSON (or 400 for a login body), never 500, never a pass."""
    headers = {"Authorization": scheme + value}
    if token:
        headers["X-Auth-Token"] = token
    answer = local_app.get("/api/v1/clusters/", headers=headers, expect_errors=True)
    assert answer.status_int == 401 and answer.json["errors"] == []
    if login is not None:
        answer = local_app.post("/keystone/v2.0/tokens", login, expect_errors=True)
        assert answer.status_int in (400, 401) and "message" in answer.json


# -- what an operator or a client can get wrong (each a class of bug once found) ---------------------

def test_a_policy_file_that_goes_away_or_breaks_refuses_everything(migrated_db, tmp_path, auth_settings):
    users_file = write_users_file(tmp_path / "users.yaml")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:write": "role:admin"\n')
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file),
                                             "policy_file": str(policy_file)}})
    app = webtest.TestApp(build_wsgi())
    app.post_json("/api/v1/clusters/", {}, headers=basic("member"), status=403)
    policy_file.unlink()  # must not fall back to the rules in code, which let members write
    assert app.post_json("/api/v1/clusters/", {}, headers=basic("member"), status=503).json["message"]
    app.get("/api/v1/clusters/", headers=basic("reader"), status=503)
    policy_file.write_text('"nailgun:write": "role:admin or or"\n')
    app.post_json("/api/v1/clusters/", {}, headers=basic("admin"), status=503)
    policy_file.write_text('"nailgun:write": "role:admin"\n\n')
    app.post_json("/api/v1/clusters/", {}, headers=basic("member"), status=403)


@pytest.mark.parametrize("rules", ['"nailgun:write": "role:admin or or"\n', '"nailgun:write": "(role:admin"\n',
                                   "- not a mapping\n", '"nailgun:write": 3\n'])
def test_a_policy_file_that_does_not_parse_stops_the_start(migrated_db, tmp_path, auth_settings, rules):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(rules)
    auth_settings.reload(overrides={"AUTH": {"policy_file": str(policy_file)}})
    with pytest.raises(policy.PolicyFileError):
        build_wsgi()


def test_a_users_file_that_breaks_while_serving_refuses_with_503(local_app, tmp_path):
    token = login(local_app, "member").json["access"]["token"]["id"]
    users_file = tmp_path / "users.yaml"
    for broken in ("users: [\n", "users: {member: 1}\n", "", b"users: {}\n# caf\xe9, not UTF-8\n",
                   "users: {}\nwhen: 2024-13-45\n", "users: {}\nx: " + "[" * 5000 + "]" * 5000 + "\n",
                   "users: {1: {password: x, roles: [reader]}}\n", "users: {a: {password: x, roles: [1]}}\n"):
        edit_users_file(users_file, broken)
        for headers in (basic("member"), {"X-Auth-Token": token}):
            answer = local_app.get("/api/v1/clusters/", headers=headers, status=503)
            assert answer.content_type == "application/json"
        assert login(local_app, "member").status_int == 503
    users_file.unlink()
    time.sleep(local.LOOK_SECONDS)
    local_app.get("/api/v1/clusters/", headers=basic("member"), status=503)


def test_local_tokens_keep_their_expiry_and_die_with_a_password_change(local_app, db_url, tmp_path, monkeypatch):
    import io

    from nailgun_host.cmd import users


    first = login(local_app, "member").json["access"]["token"]
    again = local_app.post_json("/keystone/v2.0/tokens", {"auth": {"token": {"id": first["id"]}}}).json["access"][
        "token"]
    assert again["expires"] == first["expires"]  # a token cannot renew itself forever
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": first["id"] + "x"}, status=401)
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": first["id"] + "=="}, status=401)
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": again["id"]}, status=200)
    monkeypatch.setattr("sys.stdin", io.StringIO("changed-pw\n"))
    assert users.users(["--db-url", db_url, "--users-file", str(tmp_path / "users.yaml"), "set", "member", "--role",
                        "member"]) == 0
    for token in (first["id"], again["id"]):
        local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=401)


@pytest.mark.parametrize("body", [
    '{"auth": null}', '{"auth": "x"}', '{"auth": []}', '{"auth": {"token": null}}', '{"auth": {"token": "x"}}',
    '{"auth": {"passwordCredentials": []}}', '{"auth": {"token": {"id": "\\ud800"}}}',
    '{"auth": {"passwordCredentials": {"username": "\\ud800", "password": "x"}}}',
    '{"auth": {"passwordCredentials": {"username": "a", "password": "x"}, "tenantName": 5}}',
    '{"auth": {"passwordCredentials": {"username": "a", "password": "x"}, "tenantName": "\\udfff"}}',
])
def test_malformed_logins_are_400(local_app, body):
    answer = local_app.post("/keystone/v2.0/tokens", body, content_type="application/json", expect_errors=True)
    assert answer.status_int == 400 and answer.json["message"].startswith("Invalid login request")


@pytest.mark.parametrize("auth, message", [
    ("local", "AUTH must be a mapping"), ({"methd": "local"}, "unknown settings AUTH.methd"),
    ({"method": "lcoal"}, "AUTH.method must be"), ({"keystone": {"auth_ulr": "x"}}, "AUTH.keystone.auth_ulr"),
    ({"keystone": "x"}, "AUTH.keystone must be a mapping"), ({"enabled": True}, "AUTH.enabled is no longer read"),
    ({"method": "keystone"}, "needs AUTH.keystone.auth_url"),
])
def test_auth_settings_that_could_leave_the_api_open_are_refused(tmp_path, auth, message, capsys, auth_settings):
    from nailgun_host.cmd import api


    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text(yaml.safe_dump({"AUTH": auth}))
    with pytest.raises(ValueError, match=re.escape(message)):
        auth_settings.reload(str(settings_file))
    with pytest.raises(SystemExit):
        api.serve(["--config", str(settings_file), "--port", "1"])
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


@pytest.mark.parametrize("name", ["", "a:b", " padded"])
def test_users_command_refuses_names_basic_cannot_carry(tmp_path, name, monkeypatch, capsys):
    import io

    from nailgun_host.cmd import users


    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    with pytest.raises(SystemExit):
        users.users(["--users-file", str(tmp_path / "users.yaml"), "set", name, "--role", "admin"])
    assert "user name" in capsys.readouterr().err
    assert not (tmp_path / "users.yaml").exists()


def test_users_command_warns_about_roles_no_rule_names(tmp_path, monkeypatch, capsys):
    import io

    from nailgun_host.cmd import users


    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    assert users.users(["--users-file", str(tmp_path / "users.yaml"), "set", "ops", "--role", "adimn"]) == 0
    assert "adimn" in capsys.readouterr().err


@pytest.mark.parametrize("claimed", ["x" * 129, "alice\x01", "bob\x7f"])
def test_a_claimed_author_is_short_and_printable(local_app, claimed):
    values = config_values_url(local_app, basic("member"))
    answer = local_app.put_json(values, {}, headers=dict(basic("service"), **{"X-Config-Author": claimed}),
                                status=400)
    assert "X-Config-Author" in answer.json["message"]


@pytest.fixture
def silent_keystone():
    """A port that accepts connections and never answers: a Keystone that hangs."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield "http://127.0.0.1:{0}/v3".format(listener.getsockname()[1])
    listener.close()


def test_a_keystone_that_hangs_is_503_after_the_timeout(migrated_db, silent_keystone, auth_settings):
    auth_settings.reload(overrides={"AUTH": {"method": "keystone", "credential_cache_ttl": 0, "keystone": {
        "auth_url": silent_keystone, "username": "nailgun", "password": "x", "project_name": "services",
        "timeout": 1}}})
    app = webtest.TestApp(build_wsgi())
    login_body = {"auth": {"passwordCredentials": {"username": "member", "password": "member-pw"}}}
    for answer in (app.get("/api/v1/clusters/", headers={"X-Auth-Token": "gAAAAAB" + "a" * 100},
                           expect_errors=True),
                   app.get("/api/v1/clusters/", headers=basic("member"), expect_errors=True),
                   app.post_json("/keystone/v2.0/tokens", login_body, expect_errors=True)):
        assert answer.status_int == 503, answer
        assert answer.content_type == "application/json" and answer.headers["Retry-After"]


def test_the_policy_is_asked_once_per_identity_and_rule_until_it_changes(local_app, tmp_path, monkeypatch):
    """oslo.policy's enforcement costs about a third of a millisecond: the hot read path must not pay it."""
    rules = policy._current_rules()
    rules.decisions.clear()  # earlier tests' requests were decided already
    asked = []
    original = rules.enforcer.authorize
    monkeypatch.setattr(rules.enforcer, "authorize", lambda *args, **kwargs: asked.append(args[0]) or original(
        *args, **kwargs))
    for _ in range(5):
        local_app.get("/api/v1/clusters/", headers=basic("reader"))
        local_app.get("/api/v1/nodes/", headers=basic("member"))
    assert sorted(asked) == [policy.READ, policy.READ]
    local_app.post_json("/api/v1/clusters/", {}, headers=basic("reader"), status=403)
    local_app.post_json("/api/v1/clusters/", {}, headers=basic("reader"), status=403)
    assert sorted(asked) == [policy.READ, policy.READ, policy.WRITE]


def test_unknown_users_cost_a_hash_as_dear_as_the_files_own():
    users = yaml.safe_load(yaml.safe_dump({"a": {"password": bcrypt.hashpw(b"x", bcrypt.gensalt(5)).decode()}}))
    assert local._hash_for_unknown_users(users).startswith("$2b$05$")
    assert local._hash_for_unknown_users({}).startswith("$2b$12$")


def test_a_misspelt_rule_in_the_policy_file_stops_the_start(migrated_db, tmp_path, auth_settings):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:writ": "role:admin"\n')
    auth_settings.reload(overrides={"AUTH": {"policy_file": str(policy_file)}})
    with pytest.raises(policy.PolicyFileError, match="nailgun:writ"):
        build_wsgi()
    policy_file.write_text('"ops": "role:ops"\n"nailgun:write": "rule:ops or role:admin"\n')  # a helper rule is fine
    build_wsgi()


@pytest.mark.parametrize("path", ["/api/v1/version%0a", "/api/v1/version%0A/", "/api/health%0a"])
def test_a_public_route_with_a_trailing_newline_is_not_public(local_app, path):
    local_app.get(path, status=401)


def test_a_utf8_author_is_recorded_as_sent(local_app):
    values = config_values_url(local_app, basic("member"))
    header = "José".encode("utf-8").decode("latin-1")  # what a WSGI server hands over
    local_app.put_json(values, {"a": 1}, headers=dict(basic("service"), **{"X-Config-Author": header}), status=204)
    assert local_app.get(values + "/history", headers=basic("reader")).json[0]["author"] == "José (via service)"
    local_app.put_json(values, {"a": 2}, headers=dict(basic("service"), **{"X-Config-Author": "\xe9"}), status=400)


def test_a_chunked_login_is_read(local_app):
    body = json.dumps({"auth": {"passwordCredentials": {"username": "member", "password": "member-pw"}}}).encode()
    answer = local_app.post("/keystone/v2.0/tokens", body, content_type="application/json",
                            headers={"Transfer-Encoding": "chunked"}, extra_environ={"CONTENT_LENGTH": ""},
                            expect_errors=True)
    assert answer.status_int == 200, answer


def test_users_command_knows_every_role_the_rules_name(tmp_path, monkeypatch, capsys):
    """The roles nailgun-users accepts without a warning come from the rules: a new one (hiera) is never left out."""
    import io

    from nailgun_host.cmd import users


    assert {"reader", "member", "admin", "service", "hiera"} <= policy.known_roles()
    for role in sorted(policy.known_roles()):
        monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
        assert users.users(["--users-file", str(tmp_path / "users.yaml"), "set", "u-" + role, "--role", role]) == 0
        assert capsys.readouterr().err == "", role


def test_a_user_given_the_hiera_role_by_nailgun_users_reads_secrets_in_clear(migrated_db, tmp_path, auth_settings,
                                                                           monkeypatch):
    """Local mode: ``nailgun-users set hiera --role hiera`` (that one role) is the Puppet master's identity."""
    import io

    from nailgun_host.cmd import users

    from nailgun_host.api.base import MASKED_HEADER

    users_file = str(tmp_path / "users.yaml")
    for name, roles in (("hiera", ["hiera"]), ("reader", ["reader"]), ("admin", ["admin"])):
        monkeypatch.setattr("sys.stdin", io.StringIO(name + "-pw\n"))
        argv = ["--users-file", users_file, "set", name]
        assert users.users(argv + [part for role in roles for part in ("--role", role)]) == 0
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}})
    app = webtest.TestApp(build_wsgi())
    values = config_values_url(app, basic("admin"))
    app.put_json(values, {"db_password": "s3cr3t", "port": 5}, headers=basic("admin"), status=204)
    clear = app.get(values, headers=basic("hiera", "hiera-pw"), status=200)
    assert clear.json == {"db_password": "s3cr3t", "port": 5} and MASKED_HEADER not in clear.headers
    masked = app.get(values, headers=basic("reader"), status=200)
    assert masked.json == {"db_password": "<secret>", "port": 5} and masked.headers[MASKED_HEADER] == "true"


def test_a_repeated_basic_header_is_checked_once_while_its_password_is_unchanged(local_app, tmp_path, monkeypatch):
    """The verdict of a password against a hash cannot change: another user's change, or this one's roles, check
    nothing again (every active client would run bcrypt at once after any edit, and get 503 past the slots);
    roles count at once, a new password or the user's removal checks it anew."""
    checks = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda *args: checks.append(1) or checkpw(*args))
    decoded = []
    from nailgun_host.auth import middleware

    decode = middleware.decode_basic
    monkeypatch.setattr(middleware, "decode_basic", lambda header: decoded.append(1) or decode(header))
    for _ in range(3):
        local_app.get("/api/v1/clusters/", headers=basic("reader"))
    assert (len(checks), len(decoded)) == (1, 1)
    users_file = tmp_path / "users.yaml"
    content = yaml.safe_load(users_file.read_text())
    content["users"]["someone-else"] = {"password": content["users"]["admin"]["password"], "roles": ["admin"]}
    edit_users_file(users_file, yaml.safe_dump(content))
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=200)
    content["users"]["reader"]["roles"] = ["nobody-s-role"]
    edit_users_file(users_file, yaml.safe_dump(content) + "\n")
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=403)
    assert (len(checks), len(decoded)) == (1, 1)
    reader = content["users"]["reader"]
    content["users"]["reader"] = dict(content["users"]["member"], roles=["reader"])  # another password
    edit_users_file(users_file, yaml.safe_dump(content))
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=401)
    del content["users"]["reader"]
    edit_users_file(users_file, yaml.safe_dump(content))
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=401)
    assert len(decoded) == 3
    content["users"]["reader"] = dict(reader, roles=["reader"])  # the old hash back: checked anew, not kept
    edit_users_file(users_file, yaml.safe_dump(content))
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=200)
    assert len(decoded) == 4  # decoded again (its password found in the login cache of that hash: no bcrypt)


def test_a_login_body_nested_too_deep_is_a_400(local_app):
    body = '{"auth": ' + "[" * 20000 + "]" * 20000 + "}"  # within the login's 64 KB
    answer = local_app.post("/keystone/v2.0/tokens", body, content_type="application/json", status=400)
    assert answer.json["message"].startswith('Invalid login request: expected {"auth"')


def test_requests_look_at_the_users_file_at_most_once_per_look_time(local_app, tmp_path, monkeypatch):
    """A stat per request handed the GIL over on every request; a look is taken for ``LOOK_SECONDS``."""
    users_file = str(tmp_path / "users.yaml")
    looks = []
    stat_of = local.os.stat
    monkeypatch.setattr(local.os, "stat", lambda path, *a, **k: (looks.append(1) if path == users_file else None)
                        or stat_of(path, *a, **k))
    token = login(local_app, "reader").json["access"]["token"]["id"]
    started, requests = time.monotonic(), 0
    while time.monotonic() - started < 3.5 * local.LOOK_SECONDS:
        headers = basic("reader") if requests % 2 else {"X-Auth-Token": token}
        local_app.get("/api/v1/clusters/", headers=headers, status=200)
        requests += 1
    elapsed = time.monotonic() - started
    assert 3 <= len(looks) <= 1 + elapsed / local.LOOK_SECONDS < requests / 4


class Clock:
    """A monotonic clock a test moves."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


@pytest.fixture
def renewals(monkeypatch):
    """The clock the remembered credentials follow, and the renewal threads started (to wait for)."""
    from nailgun_host.auth import credential_cache, middleware

    clock = Clock()
    monkeypatch.setattr(credential_cache, "time", clock)
    monkeypatch.setattr(middleware, "time", clock)
    started = []
    renewal = credential_cache.renewal
    monkeypatch.setattr(credential_cache, "renewal", lambda check, **kwargs: started.append(renewal(check, **kwargs)))
    return clock, started


def requests_at(app, clock, started, headers, moments, ttl, status=200):
    """A request at each moment (a share of ``ttl``), each renewal it starts waited for."""
    start = clock.now
    for moment in moments:
        clock.now = start + moment * ttl
        app.get("/api/v1/clusters/", headers=headers, status=status)
        while started:
            started.pop().join(10)


def test_a_basic_credential_in_use_stays_remembered_while_the_users_file_is_unchanged(local_app, renewals,
                                                                                       monkeypatch):
    """Every ``credential_cache_ttl`` seconds all the requests of a busy client waited for a bcrypt check. A verdict
    found against the users file cannot change while the file does not: in use, it is kept without a check."""
    clock, started = renewals
    checks = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda *args: checks.append(threading.current_thread().name)
                        or checkpw(*args))
    ttl = settings["AUTH"]["credential_cache_ttl"]
    # checked at 0; renewed at 0.85 (in its last fifth): then good until 1.85, renewed at 1.79, good until 2.79
    requests_at(local_app, clock, started, basic("reader"), (0, 0.5, 0.79, 0.85, 0.9, 1.2, 1.5, 1.79, 1.9, 2.5), ttl)
    assert checks == ["MainThread"] and not started
    requests_at(local_app, clock, started, basic("reader"), (1.0,), ttl)  # unused until its time was up
    assert checks == ["MainThread", "MainThread"]


def test_a_credential_is_not_renewed_in_a_thread_that_cannot_start(monkeypatch, caplog):
    from nailgun_host.auth import credential_cache

    def refuse(thread):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    assert credential_cache.renewal(lambda: None) is None
    assert "no thread can be started" in caplog.text


def test_looks_at_the_users_file_at_once_never_go_back_to_an_older_file(tmp_path, monkeypatch):
    """A look held before its stat while a later one reads the old file and the file is replaced: the held look
    reads the new file, and from then on (not only once the later look has run out) the content is the new one."""
    from nailgun_host.auth import credential_cache

    path = write_users_file(tmp_path / "users.yaml")
    users = local.LocalUsers(str(path), 3600, credential_cache.CredentialCache(60), None)
    time.sleep(local.LOOK_SECONDS)
    held, go = threading.Event(), threading.Event()
    stat_of = local.os.stat

    def stat(name, *args, **kwargs):
        if threading.current_thread().name == "held-look":
            held.set()
            go.wait(10)
        return stat_of(name, *args, **kwargs)

    monkeypatch.setattr(local.os, "stat", stat)
    seen = {}
    looker = threading.Thread(target=lambda: seen.update(held=users.content()), name="held-look")
    looker.start()
    assert held.wait(10)
    assert users.content()["users"]["reader"]["roles"] == ["reader"]  # a look started later, at the old file
    content = yaml.safe_load(path.read_text())
    content["users"]["reader"]["roles"] = ["admin"]
    replacement = tmp_path / "users.new"
    replacement.write_text(yaml.safe_dump(content))
    os.replace(replacement, path)  # as an editor or a copy would, without nailgun-users' wait
    go.set()
    looker.join(10)
    assert seen["held"]["users"]["reader"]["roles"] == ["admin"]
    assert users.content()["users"]["reader"]["roles"] == ["admin"]
    time.sleep(local.LOOK_SECONDS)
    assert users.content()["users"]["reader"]["roles"] == ["admin"]


def _looks_seeing(monkeypatch, tmp_path, first, then):
    """The server's looks at the users file see ``first(the file's content)``, then ``then(the file's content)``:
    the file changed between two looks of one request."""
    read = local._read(str(tmp_path / "users.yaml"))
    contents = [first(copy.deepcopy(read)), then(copy.deepcopy(read))]
    looks = []

    def content_now(users):
        looks.append(1)
        return contents[0] if len(looks) == 1 else contents[1]

    monkeypatch.setattr(local.LocalUsers, "_content_now", content_now)


def _new_password(content):
    content["users"]["reader"]["password"] = bcrypt.hashpw(b"new-pw", bcrypt.gensalt(4)).decode()
    return content


def test_a_basic_credential_is_checked_against_the_file_it_is_remembered_with(local_app, tmp_path, monkeypatch):
    """A request's verdict is found against the content it is then remembered with: found against another
    look's, the old password checked against the old file was remembered with the new one, and kept."""
    _looks_seeing(monkeypatch, tmp_path, first=_new_password, then=lambda content: content)
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=401)


@pytest.mark.parametrize("change", ["password", "deleted"])
def test_a_login_gets_a_token_of_the_file_it_was_checked_against(local_app, tmp_path, monkeypatch, change):
    """The file changed while a login's bcrypt ran: the token carries the password it was checked with, so it
    is refused under the new file (it carried the new one), and a user deleted meanwhile is no 500."""
    def changed(content):
        if change == "deleted":
            del content["users"]["reader"]
            return content
        return _new_password(content)

    _looks_seeing(monkeypatch, tmp_path, first=lambda content: content, then=changed)
    token = login(local_app, "reader").json["access"]["token"]["id"]
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=401)


def test_a_remembered_basic_header_is_refused_while_its_name_is_locked(local_app):
    local_app.get("/api/v1/clusters/", headers=basic("reader"))  # remembered
    for _ in range(5):
        local_app.get("/api/v1/clusters/", headers=basic("reader", "wrong"), status=401)
    local_app.get("/api/v1/clusters/", headers=basic("reader"), status=429)


def test_a_token_is_opened_once_while_the_keys_are_unchanged(local_app, monkeypatch):
    from nailgun_host.auth import token_keys
    from nailgun_host.db import get_engine

    token = login(local_app, "reader").json["access"]["token"]["id"]
    opened = []
    original = token_keys.TokenKeys.opened
    monkeypatch.setattr(token_keys.TokenKeys, "opened", lambda self, t: opened.append(1) or original(self, t))
    # no reload of the keys (token_keys.REFRESH) during the test
    monkeypatch.setattr(token_keys.TokenKeys._current, "__defaults__", (3600.0,))
    for _ in range(3):
        local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token})
    assert len(opened) == 1
    token_keys.rotate(get_engine(), 3600, revoke=True)  # every key but a new one: every token so far is dead
    monkeypatch.setattr(token_keys.TokenKeys._current, "__defaults__", (0.0,))  # the next request reloads them
    local_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=401)


def test_a_basic_header_sent_by_many_threads_at_once_is_checked_once(local_app, monkeypatch):
    """As when a server's threads find the header's time is up together: one check, and no 503 for want of a slot."""
    import concurrent.futures

    checks = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda *args: checks.append(1) or checkpw(*args))

    def send(_):
        app = webtest.TestApp(local_app.app)
        return app.get("/api/v1/clusters/", headers=basic("reader"), expect_errors=True).status_int

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(send, range(16))) == [200] * 16
    assert len(checks) == 1
