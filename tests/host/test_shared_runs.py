"""Requests run together share one run of the application (``nailgun_platform.shared_runs``), and each still gets
exactly the answer it gets alone: identities that see different things (secrets shown or masked, refused, a token
that expired while its request waited, no credentials) never get another's answer, nor does a reader of another
revision; alike requests cost one run. In process, on the suite's database, with local authentication.
"""
import base64
import copy
import time

import pytest
import webob
import webtest
from hypothesis import HealthCheck, assume, given, settings as hypothesis_settings, strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.auth import Identity, credential_cache, local, token_keys
from nailgun_host.auth.middleware import AuthMiddleware
from nailgun_host.settings import settings
from nailgun_ext_configdb.objects import changes
from nailgun_platform import feed_server, notify, shared_runs
from tests.auth import write_users_file

API = "/api/v1/config"
USERS = {"admin": ("admin-pw", ["admin"]), "reader": ("reader-pw", ["reader"]), "nobody": ("nobody-pw", [])}
SCHEMA = {"type": "object", "properties": {"pin": {"x-secret": True}}}


def basic(user):
    return "Basic " + base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()


@pytest.fixture
def world(migrated_db, tmp_path_factory):
    """The application with local authentication, and an environment with two revisions of a document that
    holds a secret; ``credentials``: the headers of each kind of caller."""
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path_factory.mktemp("shared") / "users.yaml"), USERS)
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}})
    app = build_wsgi()
    admin = {"Authorization": basic("admin")}
    client = webtest.TestApp(app)
    component = client.post_json(API + "/components", {"name": "shared", "resource_definitions": [
        {"name": "astute", "content": {"schema": SCHEMA}}]}, headers=admin).json
    environment = client.post_json(API + "/environments", {"components": [component["id"]],
                                                          "hierarchy_levels": ["nodes"]}, headers=admin).json["id"]
    document = "{0}/environments/{1}/resources/{{0}}/values".format(API, environment)
    for pin in ("p1", "p2"):
        client.put_json(document.format(component["resource_definitions"][0]["id"]), {"pin": pin, "plain": 1},
                        headers=admin, status=204)
    users = local.LocalUsers(users_file, 3600, credential_cache.CredentialCache(60), token_keys.TokenKeys())
    expired, _ = users.issue_token(Identity("admin", ("admin",), user_id="admin"), users.content(),
                                    expires=time.time() - 1)
    assert notify.listener().connected.wait(30)
    yield {"app": app, "environment": environment, "document": document.format("astute"), "credentials": {
        "admin": {"Authorization": basic("admin")}, "reader": {"Authorization": basic("reader")},
        "nobody": {"Authorization": basic("nobody")}, "expired token": {"X-Auth-Token": expired.decode()
                                                                        if isinstance(expired, bytes) else expired},
        "none": {}}}
    settings.clear()
    settings.update(saved)


def targets(world):
    changes = "{0}/environments/{1}/changes".format(API, world["environment"])
    return [changes + "?since=0", changes + "?since=1", changes + "?since=2&wait=30", changes + "?since=1&limit=1",
            "{0}/environments/999999/changes?since=0".format(API), world["document"], world["document"] + "?effective"]


def environ(target, headers):
    made = webob.Request.blank(target, headers=headers, environ={"REMOTE_ADDR": "127.0.0.1"}).environ
    made[notify.CAN_PARK] = True
    return made


def seen(answer):
    """What a client gets of an answer (the request id aside), the park header's deadline aside: a batch's
    parked requests take it from their first park (``feed_server``)."""
    status, headers, body = answer
    kept = {k.lower(): v for k, v in headers if k.lower() in ("content-type", "etag")}
    park = next((v for k, v in headers if k == notify.PARK_HEADER), None)
    if park is not None:
        topic, _, mark = notify.parse_park_header(park)
        kept["park"] = (topic, mark)
    return status, kept, body


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["admin", "reader", "nobody", "expired token", "none"]),
                          st.integers(0, 6)), min_size=1, max_size=10))
def test_a_batch_answers_each_request_as_it_is_answered_alone_and_runs_the_application_once_per_answer(
        world, monkeypatch, requests):
    app, urls = world["app"], targets(world)
    heard = notify.mark(changes.topic(world["environment"]))
    alone = [seen(feed_server.run_wsgi(app, environ(urls[t], world["credentials"][who]))) for who, t in requests]

    runs, checks = [], []

    def counted(application, env):  # IdenticalRuns runs authentication, SharedRuns what is behind it
        (checks if isinstance(application, AuthMiddleware) else runs).append(env["PATH_INFO"])
        return answered(application, env)

    answered = shared_runs.answered
    monkeypatch.setattr(shared_runs, "answered", counted)
    batch = {}
    together = []
    for who, t in requests:
        made = environ(urls[t], world["credentials"][who])
        made[shared_runs.ENVIRON_KEY] = batch
        together.append(seen(feed_server.run_wsgi(app, made)))
    monkeypatch.undo()

    # a write heard meanwhile (the fixture's own, heard late) moves the mark a parked request waits from: the
    # requests alone and together then ask of two states of the database, which is not this property's case
    assume(notify.mark(changes.topic(world["environment"])) == heard)
    assert together == alone
    sharing = {(t, who == "admin") for who, t in requests if who in ("admin", "reader")}
    assert len(runs) == len(sharing)  # the refused and the unauthenticated are answered on their own
    assert len(checks) == len(set(requests))  # identical requests share one authentication, each other has its own


def test_the_masked_reader_and_the_refused_never_get_the_admin_s_answer(world):
    app, url = world["app"], world["document"]
    batch = {}
    answers = {}
    for who in ("admin", "reader", "nobody", "expired token", "none", "reader"):
        made = environ(url, world["credentials"][who])
        made[shared_runs.ENVIRON_KEY] = batch
        answers.setdefault(who, []).append(feed_server.run_wsgi(app, made))
    assert b'"p2"' in answers["admin"][0][2]
    assert all(status.startswith("200") and b'"p2"' not in body and b"<secret>" in body
               for status, _, body in answers["reader"])
    assert answers["nobody"][0][0].startswith("403")
    assert answers["expired token"][0][0].startswith("401") and answers["none"][0][0].startswith("401")


def test_identical_requests_of_a_batch_share_one_authentication_and_each_is_logged_as_itself(
        world, monkeypatch, caplog):
    """A thousand readers of one feed with one token: one check of the token, not a thousand. A request that
    differs in its address or in any header is checked on its own; each is logged with its own request id
    and the identity found."""
    from nailgun_host import request_log
    from nailgun_host.auth import middleware

    url = "{0}/environments/{1}/changes?since=0".format(API, world["environment"])
    checked = []
    check = middleware.AuthMiddleware.__call__

    def counted(self, environ, start_response):
        checked.append(environ["REMOTE_ADDR"])
        return check(self, environ, start_response)

    made = [environ(url, world["credentials"]["admin"]) for _ in range(5)]
    made.append(environ(url, dict(world["credentials"]["admin"], Accept="application/json")))
    made.append(environ(url, world["credentials"]["admin"]))
    made[-1]["REMOTE_ADDR"] = "127.0.0.2"
    alone = seen(feed_server.run_wsgi(world["app"], dict(made[0])))
    monkeypatch.setattr(middleware.AuthMiddleware, "__call__", counted)
    batch = {}
    answers = []
    with caplog.at_level("INFO", logger=request_log.LOG.name):
        for env in made:
            env[shared_runs.ENVIRON_KEY] = batch
            answers.append(feed_server.run_wsgi(world["app"], env))
    assert sorted(checked) == ["127.0.0.1", "127.0.0.1", "127.0.0.2"]
    assert all(seen(answer) == alone for answer in answers)
    ids = [dict(headers)[request_log.HEADER] for _, headers, _ in answers]
    assert len(set(ids)) == len(made)
    logged = [r for r in caplog.records if r.name == request_log.LOG.name and url.split("?")[0] in r.getMessage()]
    assert len(logged) == len(made)
    assert {r.args[-1] for r in logged} == {"admin"}


def test_identical_requests_with_an_expired_token_are_all_refused(world):
    url = "{0}/environments/{1}/changes?since=0".format(API, world["environment"])
    batch = {}
    for _ in range(3):
        made = environ(url, world["credentials"]["expired token"])
        made[shared_runs.ENVIRON_KEY] = batch
        assert feed_server.run_wsgi(world["app"], made)[0].startswith("401")
