"""Authentication and authorization in keystone mode, in process, against the real test Keystone.

The local-mode twin is tests/host/test_auth.py; the process-level checks (expired and revoked
tokens, Keystone down, HTTPS) are in tests/host/test_auth_server.py.
"""
import threading
import uuid

import pytest
import requests
import webtest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as settings_profile
from hypothesis import strategies as st

from nailgun_host import policy
from nailgun_host.app import build_wsgi
from tests.auth import basic
from nailgun_host.settings import settings
from tests.host.test_auth import (PUBLIC, auth_settings, concrete, config_values_url,  # noqa: F401 (fixtures)
                                  renewals, requests_at, route_methods)


@pytest.fixture(scope="module")
def tokens(keystone):
    """One token per user: validating them is what each request costs."""
    return {user: {"X-Auth-Token": keystone.token(user)} for user in ("reader", "member", "admin", "puppet")}


@pytest.fixture
def keystone_app(migrated_db, keystone, auth_settings):
    auth_settings.reload(overrides={"AUTH": keystone.settings()})
    return webtest.TestApp(build_wsgi())


@pytest.mark.parametrize("entry, method", route_methods())
def test_every_route_needs_a_keystone_identity_and_readers_only_read(keystone_app, keystone, tokens, entry, method):
    path = concrete(entry)
    if (method, entry["template"]) in PUBLIC:
        assert keystone_app.request(path, method=method, expect_errors=True).status_int in (200, 503)
        return
    refused = keystone_app.request(path, method=method, expect_errors=True)
    assert refused.status_int == 401, refused
    assert refused.content_type == "application/json"
    assert refused.headers.getall("WWW-Authenticate") == [
        'Basic realm="nailgun"', 'Keystone uri="{0}"'.format(keystone.auth_url)]
    as_reader = keystone_app.request(path, method=method, headers=tokens["reader"], expect_errors=True)
    rule = entry["handler"].policy_rule(method)
    if method in ("GET", "HEAD", "OPTIONS") and rule == policy.READ:
        assert as_reader.status_int not in (401, 403), as_reader
    else:  # a write, or a read of secrets (nailgun:read_secrets) or of the request statistics (nailgun:read_stats)
        assert rule in (policy.WRITE, policy.ADMIN, policy.READ_SECRETS, policy.CHANGE_SECRETS, policy.READ_STATS), rule
        assert as_reader.status_int == 403, as_reader
        if method != "HEAD":
            assert rule in as_reader.json["message"]


def test_tokens_and_basic_carry_keystones_roles(keystone_app, tokens):
    clusters = "/api/v1/clusters/"
    for credentials in (tokens["reader"], basic("reader"), tokens["puppet"], basic("puppet")):
        keystone_app.get(clusters, headers=credentials, status=200)
        keystone_app.post_json(clusters, {}, headers=credentials, status=403)
    for credentials in (tokens["member"], basic("member")):
        assert keystone_app.post_json(clusters, {}, headers=credentials, expect_errors=True).status_int not in (401, 403)
        keystone_app.delete("/api/v1/clusters/1", headers=credentials, status=403)
    keystone_app.delete("/api/v1/clusters/1", headers=tokens["admin"], status=404)
    keystone_app.get(clusters, headers=basic("reader", "member-pw"), status=401)
    keystone_app.get(clusters, headers={"X-Auth-Token": "not-a-token"}, status=401)


def test_the_author_of_a_change_is_the_keystone_user(keystone_app, keystone, tokens):
    member = tokens["member"]
    values = config_values_url(keystone_app, member)
    keystone_app.put_json(values, {"a": 1}, headers=member, status=204)
    keystone_app.put_json(values, {"a": 2}, headers=dict(member, **{"X-Config-Author": "alice"}), status=403)
    keystone_app.put_json(values, {"a": 3}, headers=dict(basic("admin"), **{"X-Config-Author": "bob"}), status=403)
    # the service user, in its own project, may act for others: the record names both
    service = {"X-Auth-Token": keystone.token("nailgun", "services"), "X-Config-Author": "alice"}
    keystone_app.put_json(values, {"a": 4}, headers=service, status=204)
    history = keystone_app.get(values + "/history", headers=tokens["reader"]).json
    authors = [entry["author"] for entry in sorted(history, key=lambda entry: entry["version"])]
    assert authors == ["member", "alice (via nailgun)"]


def test_fuel2_login_is_checked_by_keystone(keystone_app):
    def login(user, password):
        return keystone_app.post_json("/keystone/v2.0/tokens", {"auth": {
            "passwordCredentials": {"username": user, "password": password}, "tenantName": "admin"}},
            expect_errors=True)

    answer = login("member", "member-pw")
    assert answer.status_int == 200, answer
    token = answer.json["access"]["token"]["id"]
    keystone_app.post_json("/api/v1/clusters/", {}, headers={"X-Auth-Token": token}, expect_errors=True)
    assert keystone_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}).status_int == 200
    assert login("member", "reader-pw").status_int == 401


def test_only_roles_in_the_accepted_projects_count(keystone, migrated_db, auth_settings):
    """Keystone is often the cloud's own: a member of some tenant must not become a member of Fuel."""
    auth_settings.reload(overrides={"AUTH": keystone.settings(keystone={"projects": None})})  # admin only
    app = webtest.TestApp(build_wsgi())
    elsewhere = {"X-Auth-Token": keystone.token("nailgun", "services")}
    refused = app.get("/api/v1/clusters/", headers=elsewhere, status=403)
    assert "services" in refused.json["message"]
    app.post_json("/api/v1/releases/", {}, headers=elsewhere, status=403)
    login = {"auth": {"passwordCredentials": {"username": "nailgun", "password": keystone.users["nailgun"]},
                      "tenantName": "services"}}
    app.post_json("/keystone/v2.0/tokens", login, status=401)
    app.get("/api/v1/clusters/", headers=basic("nailgun"), status=401)  # it has no role in basic_project
    app.get("/api/v1/clusters/", headers={"X-Auth-Token": keystone.token("reader")}, status=200)


def test_fuel2_re_login_names_the_tenant_by_id(keystone_app):
    login = {"auth": {"passwordCredentials": {"username": "nailgun", "password": "nailgun-pw"},
                      "tenantName": "services"}}
    first = keystone_app.post_json("/keystone/v2.0/tokens", login).json["access"]
    again = {"auth": {"token": {"id": first["token"]["id"]}, "tenantId": first["token"]["tenant"]["id"]}}
    second = keystone_app.post_json("/keystone/v2.0/tokens", again).json["access"]
    assert second["token"]["tenant"] == first["token"]["tenant"]
    keystone_app.get("/api/v1/clusters/", headers={"X-Auth-Token": second["token"]["id"]}, status=200)


def test_oversized_tokens_are_refused_without_asking_keystone(keystone_app):
    answer = keystone_app.get("/api/v1/clusters/", headers={"X-Auth-Token": "A" * 70000}, status=401)
    assert answer.json["message"] == "Authentication required: the token is invalid or expired"


#: what a WSGI server hands over as a header's value: latin-1 text, control characters included
TOKEN_TEXT = st.text(st.characters(min_codepoint=1, max_codepoint=255, blacklist_characters="\r\n"), min_size=1,
                     max_size=300)


@settings_profile(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=TOKEN_TEXT, login_token=st.text(min_size=1, max_size=300))
@example(token="a\x01b", login_token="a\nb")
@example(token="a\x7fb", login_token="\u2603")
@example(token="A" * 4096, login_token="A" * 4097)
def test_no_token_a_client_makes_up_is_a_keystone_outage_or_breaks_the_server(keystone_app, token, login_token):
    """A token Keystone could never have issued is the client's mistake (401), never a 503 that
    blames Keystone nor a 500: the middleware and fuel2's re-login both."""
    answer = keystone_app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, expect_errors=True)
    assert answer.status_int == 401 and answer.json["errors"] == [], (token, answer)
    login = {"auth": {"token": {"id": login_token}, "tenantName": "admin"}}
    answer = keystone_app.post_json("/keystone/v2.0/tokens", login, expect_errors=True)
    assert answer.status_int in (400, 401) and "message" in answer.json, (login_token, answer)


@settings_profile(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(service_token=TOKEN_TEXT)
@example(service_token="a\x01b")
@example(service_token="A" * 9000)
def test_no_service_token_a_client_makes_up_is_a_keystone_outage(keystone_app, tokens, service_token):
    """keystonemiddleware validates an ``X-Service-Token`` beside the user's token: one that cannot be a
    token is the client's mistake (401), as in the user's."""
    headers = dict(tokens["reader"], **{"X-Service-Token": service_token})
    answer = keystone_app.get("/api/v1/clusters/", headers=headers, expect_errors=True)
    assert answer.status_int == 401 and answer.json["errors"] == [], (service_token[:100], answer.status)


def _user_in_another_domain(keystone, name, password):
    """``name`` again, in a domain of its own, a member of project admin (of the Default domain)."""
    admin = {"X-Auth-Token": keystone.token("admin")}

    def call(method, path, body=None):
        answer = requests.request(method, keystone.auth_url + path, json=body, headers=admin, timeout=30)
        answer.raise_for_status()
        return answer.json() if answer.content else None

    domain = "elsewhere-" + uuid.uuid4().hex[:8]
    domain_id = call("POST", "/domains", {"domain": {"name": domain}})["domain"]["id"]
    user_id = call("POST", "/users", {"user": {"name": name, "domain_id": domain_id, "password": password}})["user"]["id"]
    project_id = call("GET", "/projects?name=admin&domain_id=default")["projects"][0]["id"]
    role_id = call("GET", "/roles?name=member")["roles"][0]["id"]
    call("PUT", "/projects/{0}/users/{1}/roles/{2}".format(project_id, user_id, role_id))
    body = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": name, "domain": {"name": domain}, "password": password}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
    answer = requests.post(keystone.auth_url + "/auth/tokens", json=body, timeout=30)
    answer.raise_for_status()
    return domain, {"X-Auth-Token": answer.headers["X-Subject-Token"]}


def test_a_namesake_from_another_domain_is_not_the_same_identity(keystone_app, keystone, tokens):
    """Keystone's user names are unique only within a domain; the name is what records an author and
    owns a session, so a member named ``member`` in another domain is ``member@<domain>``, not ``member``."""
    domain, namesake = _user_in_another_domain(keystone, "member", "namesake-pw")
    member = tokens["member"]
    values = config_values_url(keystone_app, member)
    keystone_app.put_json(values, {"a": 1}, headers=member, status=204)
    keystone_app.put_json(values, {"a": 2}, headers=namesake, status=204)
    forged = dict(member, **{"X-User-Domain-Name": domain, "X-User-Name": "admin"})  # only Keystone's count
    keystone_app.put_json(values, {"a": 3}, headers=forged, status=204)
    history = keystone_app.get(values + "/history", headers=tokens["reader"]).json
    authors = [entry["author"] for entry in sorted(history, key=lambda entry: entry["version"])]
    assert authors == ["member", "member@" + domain, "member"]
    environment = values.split("/")[5]
    opened = keystone_app.post_json("/api/v1/config/environments/{0}/configure".format(environment), {},
                                    headers=member).json
    keystone_app.get("/api/v1/config/environments/{0}/sessions/{1}/".format(environment, opened["id"]),
                     headers=namesake, status=403)


def test_a_basic_credential_renewed_ahead_of_its_time_is_forgotten_when_keystone_refuses_it(
        keystone_app, keystone, renewals):
    """Renewing asks Keystone again: a password changed there stops counting at the renewal, not later."""
    clock, started = renewals
    name = "renewed-" + uuid.uuid4().hex[:8]
    user_id = keystone.add_user(name, "first-pw")
    headers = basic(name, "first-pw")
    ttl = settings["AUTH"]["credential_cache_ttl"]
    requests_at(keystone_app, clock, started, headers, (0, 0.85, 1.5), ttl)  # renewed at 0.85: good until 1.85
    keystone.set_password(user_id, "second-pw")
    requests_at(keystone_app, clock, started, headers, (0.3,), ttl)  # 1.8: remembered; Keystone refuses the renewal
    requests_at(keystone_app, clock, started, headers, (0.31,), ttl, status=401)
    requests_at(keystone_app, clock, started, basic(name, "second-pw"), (0.32,), ttl)


def test_a_renewal_keystone_cannot_answer_keeps_the_credential_until_its_time(keystone_app, keystone, renewals,
                                                                              monkeypatch):
    """Keystone down when the renewal asks: the requests keep the remembered verdict, no other renewal is started,
    and the first request after its time checks it itself (503 while Keystone is down), as without renewals."""
    from nailgun_host.auth import keystone as keystone_auth

    clock, started = renewals
    ttl = settings["AUTH"]["credential_cache_ttl"]
    asked = []
    check = keystone_auth.Keystone.check_password
    monkeypatch.setattr(keystone_auth.Keystone, "check_password", lambda *args: asked.append(
        threading.current_thread().name) or check(*args))
    headers = basic("reader")
    requests_at(keystone_app, clock, started, headers, (0,), ttl)
    with keystone.stopped():
        requests_at(keystone_app, clock, started, headers, (0.85, 0.9, 0.99), ttl)
        requests_at(keystone_app, clock, started, headers, (0.2,), ttl, status=503)  # at 1.19
    requests_at(keystone_app, clock, started, headers, (0.01,), ttl)
    assert asked == ["MainThread", "nailgun-credential-renewal", "MainThread", "MainThread"]


def test_the_console_signs_in_against_keystone_and_its_writes_need_the_csrf_token(keystone_app):
    from tests.host.test_console_auth import CSRF_REFUSED, sign_in

    app = webtest.TestApp(keystone_app.app, extra_environ={"REMOTE_ADDR": "192.0.2.10"})
    assert sign_in(app, "member", "wrong").status_int == 401
    csrf = sign_in(app, "member")
    identity = app.get("/ui/api/v1/identity").json
    assert (identity["name"], identity["project"], identity["auth_method"]) == ("member", "admin", "keystone")
    assert identity["rules"][policy.WRITE] and not identity["rules"][policy.READ_SECRETS]
    body = {"name": "lcm"}
    refused = app.post_json("/ui/api/v1/config/components", body, expect_errors=True)
    assert refused.status_int == 403 and CSRF_REFUSED in refused.json["message"]
    assert app.post_json("/ui/api/v1/config/components", body, headers={"X-CSRF-Token": csrf}).status_int == 201
