"""Configuration sessions (issue 12): the host's mechanism, through HTTP with the toy extension's documents.

The toy stages whole JSON documents held by a cluster (scope ``cluster``) or by a release standing in
for an extension's own environment (scope ``config``); see ``tests/host/toy/toy_sessions.py``.
"""
import itertools

import pytest

from nailgun_host.settings import settings
from tests.factories import EnvironmentManager

API = "/api/v1"
HEADER = "X-Configuration-Session"
_clusters = itertools.count(1)


class Toy:
    """A client of one cluster's sessions and toy documents."""

    def __init__(self, app, cluster_id=None):
        self.app = app
        number = next(_clusters)
        self.cluster_id = cluster_id or EnvironmentManager(app).create(
            release_kwargs={"version": "mitaka-{0}".format(number)}, cluster_kwargs={"name": "toy-{0}".format(number)})["id"]
        self.prefix = "{0}/clusters/{1}".format(API, self.cluster_id)

    def open(self, status=200, **kwargs):
        return self.app.post_json(self.prefix + "/configure", kwargs, status=status).json if kwargs else \
            self.app.post(self.prefix + "/configure", status=status).json

    def put(self, name, data, session=None, status=200):
        headers = {HEADER: session} if session else {}
        return self.app.put_json("{0}/toy/docs/{1}/{2}".format(API, self.cluster_id, name), data,
                                 headers=headers, status=status)

    def get(self, name, session=None, status=200):
        headers = {HEADER: session} if session else {}
        return self.app.get("{0}/toy/docs/{1}/{2}".format(API, self.cluster_id, name), headers=headers,
                            status=status)

    def show(self, session, status=200):
        return self.app.get("{0}/sessions/{1}".format(self.prefix, session), status=status)

    def deploy(self, session, status=200):
        return self.app.post("{0}/sessions/{1}/deploy".format(self.prefix, session), status=status)

    def abandon(self, session, status=200):
        return self.app.delete("{0}/sessions/{1}".format(self.prefix, session), status=status)

    def diff(self, session, status=200):
        return self.app.get("{0}/sessions/{1}/diff".format(self.prefix, session), status=status)

    def deployments(self, query="", status=200):
        return self.app.get("{0}/deployments{1}".format(self.prefix, query), status=status)


@pytest.fixture
def toy(toy_app):
    return Toy(toy_app)


def test_seed_001_sequence_first_deploy_wins(toy):
    toy.put("nova", {"debug": False})
    a, b = toy.open(), toy.open()
    assert a["state"] == "open" and a["version"] == 1 and a["environment_type"] == "cluster"
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("nova", {"debug": "maybe"}, b["id"])
    assert toy.get("nova").json == {"debug": False}
    assert toy.get("nova", a["id"]).json == {"debug": True}
    deployed = toy.deploy(a["id"]).json
    assert deployed["state"] == "deployed" and deployed["revision"] == 2
    # the cluster's counter is the one a cluster's deploy always moves (the toy has none of its own to name)
    assert deployed["revisions"] == {"cluster": {"id": toy.cluster_id, "revision": 2}}
    assert deployed["documents"] == [{"document": {"type": "toy", "name": "nova"}, "changed_keys": ["debug"]}]
    refused = toy.deploy(b["id"], status=409).json
    assert refused["errors"] == [{"document": {"type": "toy", "name": "nova"}, "revision": 2, "author": "anonymous"}]
    assert "cannot deploy" in refused["message"]
    shown = toy.show(b["id"], status=403).json
    assert shown["errors"][0]["state"] == "invalid" and shown["errors"][0]["conflicts"] == refused["errors"]
    assert toy.get("nova").json == {"debug": True}


def _sql(session, statement, **params):
    import sqlalchemy as sa

    result = session.execute(sa.text(statement), params)
    session.commit()
    return result


def _state(session, session_id):
    import sqlalchemy as sa

    found = session.execute(sa.text("SELECT state FROM config_sessions WHERE id = :id"), {"id": session_id}).scalar()
    session.rollback()
    return found


def test_sessions_on_disjoint_documents_both_deploy_in_distinct_revisions(toy):
    a, b = toy.open(), toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("neutron", {"mtu": 9000}, b["id"])
    first, second = toy.deploy(a["id"]).json, toy.deploy(b["id"]).json
    assert (first["revision"], second["revision"]) == (1, 2)
    assert toy.get("nova").json == {"debug": True} and toy.get("neutron").json == {"mtu": 9000}


def test_strict_mode_a_deploy_invalidates_every_other_open_session(toy):
    settings["SESSIONS"]["strict"] = True
    a, b, c = toy.open(), toy.open(), toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("neutron", {"mtu": 9000}, b["id"])
    toy.deploy(a["id"])
    refused = toy.deploy(b["id"], status=403).json
    assert "invalid" in refused["message"]
    shown = toy.show(c["id"], status=403).json["errors"][0]
    assert shown["conflicts"][0]["session"] == a["id"] and shown["conflicts"][0]["revision"] == 1
    assert toy.get("neutron").json == {}


def test_strict_mode_a_direct_write_since_the_opening_is_a_conflict(toy):
    settings["SESSIONS"]["strict"] = True
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("neutron", {"mtu": 1500})  # direct: the cluster's revision goes up
    refused = toy.deploy(a["id"], status=409).json
    assert refused["errors"][0]["document"]["type"] == "environment" and refused["errors"][0]["revision"] == 1
    assert toy.get("nova").json == {}


def test_per_document_mode_a_direct_write_elsewhere_is_no_conflict(toy):
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("neutron", {"mtu": 1500})
    assert toy.deploy(a["id"]).json["revision"] == 2


def test_staging_onto_a_document_changed_since_is_409_and_invalidates_only_the_session(toy, session):
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("nova", {"debug": False})
    refused = toy.put("nova", {"debug": 1}, a["id"], status=409).json
    assert refused["errors"] == [{"document": {"type": "toy", "name": "nova"}, "revision": 1, "author": "anonymous"}]
    assert _state(session, a["id"]) == "invalid"
    toy.put("neutron", {"mtu": 1}, a["id"], status=403)
    assert toy.get("nova").json == {"debug": False}


def test_a_read_with_the_header_of_an_ended_session_shows_the_current_state(toy):
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.deploy(a["id"])
    toy.put("nova", {"debug": False})
    answer = toy.get("nova", a["id"])
    assert answer.json == {"debug": False} and answer.headers["X-Configuration-Session-State"] == "deployed"
    b = toy.open()
    toy.put("nova", {"debug": "staged"}, b["id"])
    toy.abandon(b["id"])
    answer = toy.get("nova", b["id"])
    assert answer.json == {"debug": False} and answer.headers["X-Configuration-Session-State"] == "abandoned"
    assert "X-Configuration-Session-State" not in toy.get("nova", toy.open()["id"]).headers


def test_status_codes_of_the_session_routes_and_the_header(toy, toy_app):
    other = Toy(toy_app)
    a = toy.open()
    unknown = "0" * 32
    toy.show(unknown, status=404)
    toy.app.get("{0}/sessions/{1}".format(toy.prefix, "A" * 32), status=404)  # not the id's form
    toy.app.get("{0}/sessions/{1}".format(toy.prefix, "abc"), status=404)
    toy.put("nova", {}, unknown, status=404)
    toy.put("nova", {}, "not-a-session", status=404)
    toy.get("nova", "x" * 32, status=404)
    other.show(a["id"], status=400)
    other.deploy(a["id"], status=400)
    other.put("nova", {"a": 1}, a["id"], status=400)
    other.get("nova", a["id"], status=400)
    toy.app.post("{0}/clusters/999/configure".format(API), status=404)
    toy.app.get("{0}/clusters/999/sessions/{1}".format(API, a["id"]), status=404)
    toy.deploy(a["id"])
    assert "deployed" in toy.deploy(a["id"], status=403).json["message"]
    assert "deployed" in toy.abandon(a["id"], status=403).json["message"]
    assert "deployed" in toy.put("nova", {"a": 1}, a["id"], status=403).json["message"]
    b = toy.open()
    assert toy.abandon(b["id"]).json["state"] == "abandoned"
    assert toy.abandon(b["id"]).json["state"] == "abandoned"
    assert "abandoned" in toy.put("nova", {"a": 1}, b["id"], status=403).json["message"]
    assert "abandoned" in toy.deploy(b["id"], status=403).json["message"]


@pytest.mark.parametrize("body", [{"ttl": 59}, {"ttl": 604801}, {"ttl": "60"}, {"tll": 60}, [], "x"])
def test_configure_refuses_a_bad_body(toy, body, session):
    answer = toy.app.post_json(toy.prefix + "/configure", body, status=400).json
    assert answer["message"] and isinstance(answer["errors"], list)
    assert _sql(session, "SELECT count(*) FROM config_sessions").scalar() == 0


def test_configure_while_the_cluster_is_deployed_is_403_and_deploy_409(toy, session):
    from nailgun_host.db.models import Task

    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    session.add(Task(name="deployment", cluster_id=toy.cluster_id, status="running"))
    session.commit()
    assert toy.open(status=403)["errors"] == ["deploying"]
    assert "being deployed" in toy.deploy(a["id"], status=409).json["message"]
    assert _state(session, a["id"]) == "open"
    assert toy.get("nova").json == {}


def test_session_json(toy, session):
    toy.put("nova", {"debug": False})
    a = toy.open(ttl=120)
    base = _sql(session, "SELECT base FROM config_sessions WHERE id = :id", id=a["id"]).scalar()
    assert (base if isinstance(base, dict) else __import__("json").loads(base))["toy_a"] == {"opened_at": 1}
    assert set(a) == {"id", "environment_id", "environment_type", "user_id", "created", "updated", "version",
                      "state", "expires", "deployed", "revision", "revisions", "documents"}
    assert a["revisions"] == {}
    assert a["user_id"] == "anonymous" and a["environment_id"] == toy.cluster_id and a["deployed"] is None
    import datetime

    created = datetime.datetime.fromisoformat(a["created"].rstrip("Z"))
    expires = datetime.datetime.fromisoformat(a["expires"].rstrip("Z"))
    assert (expires - created).total_seconds() == pytest.approx(120, abs=1)
    listed = toy.app.get(toy.prefix + "/sessions").json["sessions"]
    assert [s["id"] for s in listed] == [a["id"]]
    toy.put("nova", {"debug": True, "workers": 4}, a["id"])
    assert toy.show(a["id"]).json["documents"] == [
        {"document": {"type": "toy", "name": "nova"}, "changed_keys": ["debug", "workers"]}]


def test_a_staged_document_equal_to_the_current_one_is_unstaged(toy):
    toy.put("nova", {"debug": False})
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("nova", {"debug": False}, a["id"])
    assert toy.show(a["id"]).json["documents"] == []


def test_a_failure_in_the_last_document_leaves_everything_as_it_was(toy, session):
    toy.put("nova", {"debug": False})
    a = toy.open()
    toy.put("alpha", {"x": 1}, a["id"])
    toy.put("zulu", {"invalid": True}, a["id"])
    before = _dump(session)
    refused = toy.deploy(a["id"], status=400).json
    assert "invalid" in refused["message"]
    assert _dump(session) == before
    assert toy.show(a["id"]).json["state"] == "open"


def _dump(session):
    import sqlalchemy as sa

    tables = ("clusters", "config_sessions", "config_session_changes")
    dump = {t: sorted(map(repr, session.execute(sa.text("SELECT * FROM " + t)).all())) for t in tables}
    session.rollback()
    return dump


def test_expired_sessions_are_403_and_marked_expired(toy, session):
    a = toy.open()
    toy.put("nova", {"debug": True}, a["id"])
    _sql(session, "UPDATE config_sessions SET expires_at = created_at")
    assert "expired" in toy.put("nova", {"debug": 1}, a["id"], status=403).json["message"]
    assert _state(session, a["id"]) == "expired"
    toy.get("nova", a["id"], status=403)
    assert "expired" in toy.deploy(a["id"], status=403).json["message"]
    assert toy.show(a["id"]).json["state"] == "expired"
    assert toy.app.get(toy.prefix + "/sessions").json["sessions"] == []
    b = toy.open()
    _sql(session, "UPDATE config_sessions SET expires_at = created_at WHERE id = :id", id=b["id"])
    toy.deploy(b["id"], status=403)
    assert _state(session, b["id"]) == "expired"


def test_a_staging_write_slides_the_expiry_up_to_max_age(toy, session):
    import datetime

    settings["SESSIONS"]["max_age"] = 3600
    a = toy.open(ttl=60)
    _shift(session, a["id"], -40)  # opened 40 s ago: 20 s left
    toy.put("nova", {"debug": True}, a["id"])
    shown = toy.show(a["id"]).json
    left = _at(shown["expires"]) - _at(shown["updated"])
    assert left.total_seconds() == pytest.approx(60, abs=2)
    assert (_at(shown["expires"]) - _later(0)).total_seconds() > 50
    # opened 3570 s ago, last written 30 s ago: a write now cannot keep it beyond its max_age
    _sql(session, "UPDATE config_sessions SET created_at = :c, updated_at = :u, expires_at = :e WHERE id = :id",
         c=_later(-3570), u=_later(-30), e=_later(30), id=a["id"])
    toy.put("nova", {"debug": False, "x": 1}, a["id"])
    shown = toy.show(a["id"]).json
    assert (_at(shown["expires"]) - _at(shown["created"])).total_seconds() == pytest.approx(3600, abs=0.1)
    b = toy.open(ttl=7200)
    assert _at(b["expires"]) - _at(b["created"]) == datetime.timedelta(seconds=3600)


def _at(text):
    import datetime

    return datetime.datetime.fromisoformat(text.rstrip("Z"))


def _shift(session, session_id, seconds):
    import datetime

    row = _sql(session, "SELECT created_at, updated_at, expires_at FROM config_sessions WHERE id = :id",
               id=session_id).first()
    moved = [value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(value)
             for value in row]
    delta = datetime.timedelta(seconds=seconds)
    _sql(session, "UPDATE config_sessions SET created_at = :c, updated_at = :u, expires_at = :e WHERE id = :id",
         c=moved[0] + delta, u=moved[1] + delta, e=moved[2] + delta, id=session_id)


def _later(seconds):
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(seconds=seconds)


def test_more_documents_than_max_documents_is_400(toy, session):
    settings["SESSIONS"]["max_documents"] = 2
    a = toy.open()
    toy.put("one", {"a": 1}, a["id"])
    toy.put("two", {"a": 1}, a["id"])
    toy.put("two", {"a": 2}, a["id"])
    assert "max_documents" in toy.put("three", {"a": 1}, a["id"], status=400).json["message"]
    assert _sql(session, "SELECT count(*) FROM config_session_changes").scalar() == 2


def test_garbage_collection_at_configure_and_syncdb(toy, session, db_url):
    old, recent, deployed, live = (toy.open()["id"] for _ in range(4))
    for sid in (old, recent):
        toy.put("nova", {"x": sid}, sid)
        toy.abandon(sid)
    toy.put("nova", {"x": 1}, deployed)
    toy.deploy(deployed)
    _sql(session, "UPDATE config_sessions SET updated_at = :then WHERE id IN (:a, :b)", then=_later(-8 * 86400),
         a=old, b=deployed)
    toy.open()
    ids = {row[0] for row in _sql(session, "SELECT id FROM config_sessions")}
    assert old not in ids and {recent, deployed, live} <= ids
    assert _sql(session, "SELECT count(*) FROM config_session_changes WHERE session_id = :id", id=recent).scalar()
    assert toy.deployments().json["deployments"][0]["id"] == deployed
    # nailgun-syncdb: expires what is past its time, drops what ended long ago, whatever the cluster
    _sql(session, "UPDATE config_sessions SET expires_at = :then WHERE id = :id", then=_later(-1), id=live)
    _sql(session, "UPDATE config_sessions SET updated_at = :then WHERE id = :id", then=_later(-8 * 86400), id=recent)
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", "from nailgun_host.cmd.syncdb import syncdb; syncdb()", "--db-url", db_url],
                   check=True, capture_output=True)
    states = dict(_sql(session, "SELECT id, state FROM config_sessions").all())
    assert recent not in states and states[live] == "expired" and states[deployed] == "deployed"


def test_deleting_the_cluster_deletes_its_sessions(toy, toy_app, session):
    keep = Toy(toy_app)
    kept = keep.open()["id"]
    a = toy.open()
    toy.put("nova", {"x": 1}, a["id"])
    toy.deploy(toy.open()["id"])
    toy.app.delete("{0}/clusters/{1}".format(API, toy.cluster_id), status=204)
    assert [row[0] for row in _sql(session, "SELECT id FROM config_sessions")] == [kept]
    assert _sql(session, "SELECT count(*) FROM config_session_changes").scalar() == 0


def test_config_scope_sessions_under_an_extension_prefix(toy, toy_app, session):
    from nailgun_host.db.models import Release

    release = session.query(Release).first().id
    prefix = "{0}/toy/envs/{1}".format(API, release)
    a = toy_app.post(prefix + "/configure").json
    assert a["environment_type"] == "config" and a["version"] == 0
    toy_app.put_json(prefix + "/docs/nova", {"debug": True}, headers={HEADER: a["id"]})
    assert toy_app.get(prefix + "/docs/nova").json == {}
    assert toy_app.get(prefix + "/docs/nova", headers={HEADER: a["id"]}).json == {"debug": True}
    toy_app.get("{0}/sessions/{1}".format(prefix, toy.open()["id"]), status=400)
    toy.get("nova", a["id"], status=400)
    deployed = toy_app.post("{0}/sessions/{1}/deploy".format(prefix, a["id"])).json
    assert deployed["revision"] == 1 and toy_app.get(prefix + "/docs/nova").json == {"debug": True}
    assert deployed["revisions"] == {}  # no cluster, and the toy names no counter of its own
    assert toy_app.post(prefix + "/configure").json["version"] == 1
    toy_app.post("{0}/toy/envs/999/configure".format(API), status=404)


def test_diff_and_deployments_mask_secrets_for_readers_and_seal_them_at_rest(toy, session):
    toy.put("keystone", {"admin_password": "old-secret", "debug": False})
    a = toy.open()
    toy.put("keystone", {"admin_password": "new-secret", "debug": True, "extra": {"db_password": "second-secret"}}, a["id"])
    diff = toy.diff(a["id"])  # anonymous is an admin: clear
    assert {"op": "replace", "path": "/admin_password", "value": "new-secret"} in diff.json["documents"][0]["patch"]
    raw = _sql(session, "SELECT data FROM config_session_changes").scalar()
    assert "new-secret" not in str(raw) and "$fernet" in str(raw)
    toy.deploy(a["id"])
    raw = str(_sql(session, "SELECT deployed_changes FROM config_sessions").scalar())
    assert "new-secret" not in raw and "second-secret" not in raw and raw.count("$fernet") == 2, raw
    history = toy.deployments().json["deployments"][0]
    assert {"op": "replace", "path": "/admin_password", "value": "new-secret"} in history["diff"][0]["patch"]
    assert history["state"] == "success" and history["revision"] == 2 and history["user_id"] == "anonymous"
    assert history["documents"] == [{"document": {"type": "toy", "name": "keystone"},
                                     "changed_keys": ["admin_password", "debug", "extra"]}]


def test_two_sessions_deployed_list_newest_first_with_paging(toy):
    ids = []
    for number in range(3):
        a = toy.open()
        toy.put("doc{0}".format(number), {"n": number}, a["id"])
        toy.deploy(a["id"])
        ids.append(a["id"])
    listed = toy.deployments().json["deployments"]
    assert [d["id"] for d in listed] == ids[::-1] and [d["revision"] for d in listed] == [3, 2, 1]
    assert [d["id"] for d in toy.deployments("?limit=1").json["deployments"]] == [ids[2]]
    assert [d["id"] for d in toy.deployments("?limit=5&before=3").json["deployments"]] == ids[1::-1]
    for bad in ("?limit=0", "?limit=501", "?limit=x", "?before=-1"):
        toy.deployments(bad, status=400)


def test_settings_of_sessions_are_checked():
    for bad in ({"strict": "yes"}, {"ttl": 0}, {"max_documents": -1}, {"tll": 5}, {"direct_model_patch": 1}):
        with pytest.raises(ValueError):
            settings.reload(overrides={"SESSIONS": bad})
    settings.reload()
