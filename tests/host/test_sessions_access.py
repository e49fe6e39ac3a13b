"""Who may act on a configuration session: its owner; ``nailgun:admin`` may read and abandon anyone's;
a reader sees secrets in diffs and the history masked. Local authentication, in process."""
import base64
import itertools

import pytest
import webtest

from nailgun_host.settings import settings
from tests.auth import write_users_file

API = "/api/v1"
HEADER = "X-Configuration-Session"
USERS = {"admin": ("admin-pw", ["admin"]), "alice": ("alice-pw", ["member"]), "bob": ("bob-pw", ["member"]),
         "reader": ("reader-pw", ["reader"])}
_names = itertools.count(1)


def as_user(user):
    token = base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()
    return {"Authorization": "Basic " + token}


@pytest.fixture
def local(toy_extensions, migrated_db, tmp_path):
    from nailgun_host.app import build_wsgi

    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"DATABASE_URL": settings.database_url,
                               "AUTH": {"method": "local", "users_file": users_file}})
    app = webtest.TestApp(build_wsgi())
    number = next(_names)
    release = app.post_json(API + "/releases/", {"name": "r", "version": "v{0}".format(number),
                                                 "operating_system": "Ubuntu"}, headers=as_user("admin")).json
    cluster = app.post_json(API + "/clusters/", {"name": "c{0}".format(number), "release_id": release["id"]},
                            headers=as_user("admin")).json
    yield app, "{0}/clusters/{1}".format(API, cluster["id"]), "{0}/toy/docs/{1}".format(API, cluster["id"])
    settings.reload()


def test_another_owners_session_is_403_never_401_and_admin_may_read_and_abandon(local):
    app, prefix, docs = local
    mine = app.post(prefix + "/configure", headers=as_user("alice")).json
    assert mine["user_id"] == "alice"
    app.put_json(docs + "/nova", {"debug": True}, headers=dict(as_user("alice"), **{HEADER: mine["id"]}))
    url = "{0}/sessions/{1}".format(prefix, mine["id"])
    for method, path in (("get", url), ("get", url + "/diff"), ("delete", url), ("post", url + "/deploy")):
        answer = getattr(app, method)(path, headers=as_user("bob"), status=403).json
        assert "another user" in answer["message"]
    app.put_json(docs + "/nova", {"debug": 1}, headers=dict(as_user("bob"), **{HEADER: mine["id"]}), status=403)
    app.get(docs + "/nova", headers=dict(as_user("bob"), **{HEADER: mine["id"]}), status=403)
    assert app.get(prefix + "/sessions", headers=as_user("bob")).json["sessions"] == []
    # the administrator reads anyone's, lists everyone's, but stages into or deploys none of them
    assert app.get(url, headers=as_user("admin")).json["id"] == mine["id"]
    assert app.get(docs + "/nova", headers=dict(as_user("admin"), **{HEADER: mine["id"]})).json == {"debug": True}
    assert [s["id"] for s in app.get(prefix + "/sessions", headers=as_user("admin")).json["sessions"]] == [mine["id"]]
    app.post(url + "/deploy", headers=as_user("admin"), status=403)
    app.put_json(docs + "/nova", {"debug": 1}, headers=dict(as_user("admin"), **{HEADER: mine["id"]}), status=403)
    assert app.delete(url, headers=as_user("admin")).json["state"] == "abandoned"


def test_a_reader_reads_but_neither_opens_nor_deploys(local):
    app, prefix, _docs = local
    app.post(prefix + "/configure", headers=as_user("reader"), status=403)
    mine = app.post(prefix + "/configure", headers=as_user("alice")).json
    app.get("{0}/sessions/{1}".format(prefix, mine["id"]), headers=as_user("reader"), status=403)
    assert app.get(prefix + "/deployments", headers=as_user("reader")).json == {"deployments": []}


def test_a_reader_sees_secrets_masked_in_diffs_and_deployments(local):
    app, prefix, docs = local
    alice = as_user("alice")
    app.put_json(docs + "/keystone", {"admin_password": "first-secret", "debug": False}, headers=alice)
    mine = app.post(prefix + "/configure", headers=alice).json
    staged = dict(alice, **{HEADER: mine["id"]})
    # a member sends back the mask it read: the stored secret is kept
    assert app.get(docs + "/keystone", headers=alice).json["admin_password"] == "<secret>"
    app.put_json(docs + "/keystone", {"admin_password": "<secret>", "debug": True,
                                      "nested": {"db_password": "second-secret"}}, headers=staged)
    diff = app.get("{0}/sessions/{1}/diff".format(prefix, mine["id"]), headers=alice)
    assert diff.headers["X-Secrets-Masked"] == "true"
    assert "second-secret" not in diff.text and "first-secret" not in diff.text
    assert {"op": "add", "path": "/nested", "value": {"db_password": "<secret>"}} in diff.json["documents"][0]["patch"]
    app.post("{0}/sessions/{1}/deploy".format(prefix, mine["id"]), headers=alice)
    for user in ("alice", "reader"):
        history = app.get(prefix + "/deployments", headers=as_user(user))
        assert history.headers["X-Secrets-Masked"] == "true" and "second-secret" not in history.text
        entry = history.json["deployments"][0]
        assert entry["user_id"] == "alice"
        assert {"op": "add", "path": "/nested", "value": {"db_password": "<secret>"}} in entry["diff"][0]["patch"]
    clear = app.get(prefix + "/deployments", headers=as_user("admin"))
    assert "X-Secrets-Masked" not in clear.headers and "second-secret" in clear.text
    assert "first-secret" not in clear.text  # the mask kept it: no change, so no op
    assert app.get(docs + "/keystone", headers=as_user("admin")).json["admin_password"] == "first-secret"
