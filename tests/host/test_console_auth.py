"""The console's cookie and CSRF token, in process: every route of the API mounted under ``/ui/api/`` needs the
cookie of a signed-in user, every write also its CSRF token, and the policy decides as on the plain API.

The pages in a real browser are tested in tests/console.
"""
import logging
import re

import pytest
import webtest

from nailgun_host import policy, request_log
from nailgun_host.app import build_wsgi
from nailgun_host.console import cookies, pages
from tests.host.test_auth import (PUBLIC, USERS, auth_settings, basic, concrete, local_app,  # noqa: F401 (fixtures)
                                  route_methods)

CSRF_REFUSED = "CSRF token is missing or is not this session's"


def sign_in(app, user, password=None):
    """Sign ``user`` in through the form, as a browser does; the app's cookie jar keeps the session. Returns the
    CSRF token the shell gives the page."""
    shell = app.get("/ui/")
    login_csrf = re.search(r'name="csrf" value="([^"]*)"', shell.text.split('id="sign-in"')[1]).group(1)
    answer = app.post("/ui/sign-in", {"username": user, "password": USERS[user][0] if password is None else password,
                                      "csrf": login_csrf}, expect_errors=True)
    if answer.status_int != 303:
        return answer
    page = app.get("/ui/")
    return re.search(r'<meta name="csrf-token" content="([^"]*)"', page.text).group(1)


def console_app(local_app):
    return webtest.TestApp(local_app.app, extra_environ={"REMOTE_ADDR": "192.0.2.10"})


@pytest.mark.parametrize("entry, method", route_methods())
def test_every_route_under_the_console_needs_its_cookie_and_writes_its_csrf_token(local_app, entry, method):
    app = console_app(local_app)
    path = "/ui" + concrete(entry)
    if (method, entry["template"]) in PUBLIC:
        assert app.request(path, method=method, expect_errors=True).status_int in (200, 503)
        return
    refused = app.request(path, method=method, headers=basic("admin"), expect_errors=True)
    assert refused.status_int == 401, refused  # Basic credentials do not count under /ui/: only the cookie
    assert refused.content_type == "application/json"
    assert "WWW-Authenticate" not in refused.headers  # a browser would prompt for a password
    csrf = sign_in(app, "reader")
    as_reader = app.request(path, method=method, expect_errors=True)
    rule = entry["handler"].policy_rule(method)
    if method in ("GET", "HEAD", "OPTIONS"):
        if rule == policy.READ:
            assert as_reader.status_int not in (401, 403), as_reader
        else:
            assert as_reader.status_int == 403, as_reader
        return
    assert as_reader.status_int == 403 and CSRF_REFUSED in as_reader.json["message"], as_reader
    with_token = app.request(path, method=method, headers={"X-CSRF-Token": csrf}, expect_errors=True)
    assert with_token.status_int == 403 and rule in with_token.json["message"], with_token


def test_a_cookie_acts_only_with_its_own_csrf_token(local_app):
    alice, bob = console_app(local_app), console_app(local_app)
    alice_csrf, bob_csrf = sign_in(alice, "member"), sign_in(bob, "admin")
    body = {"name": "lcm", "resource_definitions": [{"name": "nova"}]}
    for headers in ({}, {"X-CSRF-Token": bob_csrf}, {"X-CSRF-Token": ""}, {"X-CSRF-Token": alice_csrf + "x"}):
        refused = alice.post_json("/ui/api/v1/config/components", body, headers=headers, expect_errors=True)
        assert refused.status_int == 403 and CSRF_REFUSED in refused.json["message"]
    assert local_app.get("/api/v1/config/components", headers=basic("admin")).json == []
    created = alice.post_json("/ui/api/v1/config/components", body, headers={"X-CSRF-Token": alice_csrf})
    assert created.status_int == 201
    resource = created.json["resource_definitions"][0]["id"]
    environment = alice.post_json("/ui/api/v1/config/environments", {"components": ["lcm"], "hierarchy_levels": []},
                                  headers={"X-CSRF-Token": alice_csrf}).json
    document = "/config/environments/{0}/resources/{1}/values".format(environment["id"], resource)
    alice.put_json("/ui/api/v1" + document, {"debug": True}, headers={"X-CSRF-Token": alice_csrf}, status=204)
    history = local_app.get("/api/v1" + document + "/history", headers=basic("admin")).json
    assert [(entry["version"], entry["author"]) for entry in history] == [(1, "member")]


def test_the_plain_api_takes_no_cookie(local_app):
    app = console_app(local_app)
    sign_in(app, "admin")
    refused = app.get("/api/v1/clusters", expect_errors=True)
    assert refused.status_int == 401
    assert app.get("/ui/api/v1/clusters").status_int == 200


def test_the_session_cookie_is_http_only_strict_and_secure_behind_tls(local_app):
    for environ, secure in (({}, False), ({"wsgi.url_scheme": "https"}, True),
                            ({"HTTP_X_FORWARDED_PROTO": "https"}, True)):
        app = webtest.TestApp(local_app.app, extra_environ=dict(environ, REMOTE_ADDR="192.0.2.10"))
        shell = app.get("/ui/")
        login_csrf = re.search(r'name="csrf" value="([^"]*)"', shell.text.split('id="sign-in"')[1]).group(1)
        app.reset()  # a Secure cookie is not sent back over WebTest's http: send it as a browser over TLS does
        answer = app.post("/ui/sign-in", {"username": "reader", "password": USERS["reader"][0], "csrf": login_csrf},
                          headers={"Cookie": "{0}={1}".format(cookies.LOGIN_COOKIE, login_csrf)}, status=303)
        session = [value for name, value in answer.headerlist
                   if name == "Set-Cookie" and value.startswith(cookies.SESSION_COOKIE + "=")]
        assert len(session) == 1, answer.headerlist
        attributes = [part.strip() for part in session[0].split(";")]
        assert {"HttpOnly", "SameSite=Strict", "Path=/ui/"} <= set(attributes)
        assert ("Secure" in attributes) is secure
        max_age = int(next(part for part in attributes if part.startswith("Max-Age="))[8:])
        assert 3500 < max_age <= 3600  # the token's life (AUTH.token_ttl)


def test_sign_in_needs_the_forms_token_and_the_right_password(local_app):
    app = console_app(local_app)
    app.get("/ui/")
    forged = app.post("/ui/sign-in", {"username": "admin", "password": USERS["admin"][0], "csrf": "guess"},
                      expect_errors=True)
    assert forged.status_int == 403
    assert not [value for name, value in forged.headerlist
                if name == "Set-Cookie" and value.startswith(cookies.SESSION_COOKIE + "=")]
    wrong = sign_in(app, "admin", "wrong")
    assert wrong.status_int == 401 and "Wrong user name or password" in wrong.text
    assert app.get("/ui/api/v1/identity", expect_errors=True).status_int == 401
    fresh = console_app(local_app)  # no login cookie at all: another site's form
    assert fresh.post("/ui/sign-in", {"username": "admin", "password": USERS["admin"][0], "csrf": ""},
                      expect_errors=True).status_int == 403


def test_sign_out_needs_the_sessions_csrf_token_and_ends_the_cookie(local_app):
    app = console_app(local_app)
    csrf = sign_in(app, "member")
    assert app.post("/ui/sign-out", {"csrf": "forged"}, expect_errors=True).status_int == 403
    assert app.get("/ui/api/v1/identity").json["name"] == "member"
    out = app.post("/ui/sign-out", {"csrf": csrf}, status=303)
    assert any(value.startswith(cookies.SESSION_COOKIE + "=;") and "Max-Age=0" in value
               for name, value in out.headerlist if name == "Set-Cookie")
    assert app.get("/ui/api/v1/identity", expect_errors=True).status_int == 401


def test_the_identity_names_the_rules_it_passes(local_app):
    for user, write, secrets in (("reader", False, False), ("member", True, False), ("admin", True, True)):
        identity = local_app.get("/api/v1/identity", headers=basic(user)).json
        assert identity["name"] == user and identity["roles"] == USERS[user][1]
        assert identity["rules"][policy.WRITE] is write and identity["rules"][policy.READ_SECRETS] is secrets
        assert identity["rules"][policy.READ] is True


@pytest.mark.parametrize("path", ["/ui/", "/ui/static/console.js", "/ui/static/console.css"])
def test_every_page_carries_a_strict_content_security_policy(local_app, path):
    answer = console_app(local_app).get(path)
    assert answer.headers["Content-Security-Policy"] == pages.CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in pages.CONTENT_SECURITY_POLICY and "unsafe" not in pages.CONTENT_SECURITY_POLICY
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/ui/static/nothing.js", 404), ("GET", "/ui/static/../pages.py", 404), ("GET", "/ui/elsewhere", 404),
    ("POST", "/ui/", 405), ("DELETE", "/ui/static/console.js", 405), ("GET", "/ui/sign-in", 405),
])
def test_what_the_console_does_not_serve_is_a_json_error(local_app, method, path, status):
    answer = console_app(local_app).request(path, method=method, expect_errors=True)
    assert answer.status_int == status
    assert answer.content_type == "application/json" and answer.json["message"]


def test_with_authentication_off_a_console_write_still_needs_the_csrf_token(migrated_db, auth_settings):
    auth_settings.reload(overrides={"AUTH": {"method": "none"}})
    app = webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"})
    page = app.get("/ui/")
    csrf = re.search(r'<meta name="csrf-token" content="([^"]*)"', page.text).group(1)
    body = {"name": "lcm"}
    refused = app.post_json("/ui/api/v1/config/components", body, expect_errors=True)
    assert refused.status_int == 403 and CSRF_REFUSED in refused.json["message"]
    assert app.post_json("/ui/api/v1/config/components", body, headers={"X-CSRF-Token": csrf}).status_int == 201


def test_the_request_log_names_the_path_the_browser_asked_for(local_app, tmp_path):
    handler = request_log.configure({"file": str(tmp_path / "api.log"), "level": "INFO"})
    try:
        app = console_app(local_app)
        sign_in(app, "reader")
        app.get("/ui/api/v1/clusters")
        handler.flush()
        lines = (tmp_path / "api.log").read_text().splitlines()
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert any('"GET /ui/api/v1/clusters"' in line and line.endswith(" reader") for line in lines), lines


def test_another_sites_sign_out_form_changes_nothing(local_app):
    app = console_app(local_app)
    sign_in(app, "member")
    session = app.cookies[cookies.SESSION_COOKIE]
    # another site's form: the browser sends no SameSite=Strict cookie along, and the answer must not remove it
    foreign = webtest.TestApp(local_app.app, extra_environ={"REMOTE_ADDR": "192.0.2.10"})
    answer = foreign.post("/ui/sign-out", {"csrf": "x"}, status=303)
    assert not [value for name, value in answer.headerlist if name == "Set-Cookie"]
    assert app.cookies[cookies.SESSION_COOKIE] == session
    assert app.get("/ui/api/v1/identity").json["name"] == "member"


def test_a_sign_in_goes_back_to_the_page_it_was_asked_on(local_app):
    app = console_app(local_app)
    shell = app.get("/ui/")
    login_csrf = re.search(r'name="csrf" value="([^"]*)"', shell.text.split('id="sign-in"')[1]).group(1)
    for sent, location in (("#/environments/1/sessions", "/ui/#/environments/1/sessions"),
                           ("https://evil.example/", "/ui/"), ("#/a\r\nSet-Cookie: x=1", "/ui/")):
        answer = app.post("/ui/sign-in", {"username": "reader", "password": USERS["reader"][0], "csrf": login_csrf,
                                          "next": sent}, status=303)
        assert answer.headers["Location"].endswith(location), answer.headers["Location"]
        login_csrf = re.search(r'name="csrf" value="([^"]*)"', app.get("/ui/").text.split('id="sign-in"')[1]).group(1)


def test_the_login_cookie_outlives_a_session_and_is_renewed_with_every_page(local_app):
    app = console_app(local_app)
    first = app.get("/ui/")
    renewed = app.get("/ui/")
    for answer in (first, renewed):
        login = [value for name, value in answer.headerlist
                 if name == "Set-Cookie" and value.startswith(cookies.LOGIN_COOKIE + "=")]
        assert len(login) == 1
        assert int(re.search(r"Max-Age=(\d+)", login[0]).group(1)) > 24 * 3600  # AUTH.token_ttl is 3600
    assert app.cookies[cookies.LOGIN_COOKIE] in first.text and app.cookies[cookies.LOGIN_COOKIE] in renewed.text
