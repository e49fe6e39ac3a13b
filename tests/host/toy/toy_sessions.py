"""Toy documents staged through the host's sessions: the host's session mechanism tested through HTTP
without ConfigDB or the environment model.

A toy document is a JSON object named in a holder row: a cluster (scope ``cluster``; kept in its
``ui_settings``) or a release standing in for an unlinked environment of an extension's own (scope
``config``; in its ``modes_metadata``, with that environment's revision). ``PUT`` without the
session header writes at once (a new document revision; the scope's revision goes up); with it the
document is staged. Keys named like secrets (``*password*``) are sealed in the staged rows and
masked for readers. A document holding the key ``invalid`` is refused at deploy (400), so a deploy
that fails in its last document can be provoked.
"""
import jsonpatch

from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, author, shown
from nailgun_host.api.config_sessions import request_session, session_routes
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import Cluster, Release
from nailgun_host.objects import config_session
from nailgun_platform import secrets, session_history
from nailgun_platform.secrets import classify, masking, sealing

NAME = "toy_a"
FIELD = {"cluster": "ui_settings", "config": "modes_metadata"}
MODEL = {"cluster": Cluster, "config": Release}


def secret_of(document):
    return classify.by_name(document, secrets.patterns())


def holder(scope, lock=False):
    return get_or_404(MODEL[scope.kind], scope.environment_id, lock=lock)


def _store(row, scope):
    return dict(getattr(row, FIELD[scope.kind]) or {})


def current(row, scope, name):
    """``{"data", "revision", "author"}`` of the document (revision 0 and ``{}`` while it was never written)."""
    return _store(row, scope).get("toy_docs", {}).get(name) or {"data": {}, "revision": 0, "author": None}


def scope_revision(row, scope):
    return row.revision if scope.kind == "cluster" else int(_store(row, scope).get("toy_revision", 0))


def bump(row, scope):
    if scope.kind == "cluster":
        return config_session.bump_cluster_revision(row)
    store = _store(row, scope)
    store["toy_revision"] = int(store.get("toy_revision", 0)) + 1
    setattr(row, FIELD[scope.kind], store)
    return store["toy_revision"]


def write(row, scope, name, data, revision, by):
    store = _store(row, scope)
    store["toy_docs"] = dict(store.get("toy_docs", {}), **{name: {"data": data, "revision": revision, "author": by}})
    setattr(row, FIELD[scope.kind], store)


def descriptor(name):
    return {"type": "toy", "name": name}


def resolve_release(environment_id, lock):
    return config_session.Scope("config", holder(config_session.Scope("config", environment_id), lock).id)


def resolve_cluster(cluster_id, lock):
    return config_session.Scope("cluster", get_or_404(Cluster, cluster_id, lock=lock).id)


class _ToyDocHandler(BaseHandler):
    """A toy document: GET shows it (staged with the header), PUT writes or stages it."""

    kind = None
    request_schemas = {"PUT": {"type": "object"}}

    def GET(self, holder_id, name):
        scope = config_session.Scope(self.kind, holder_id)
        row = holder(scope)
        session = request_session(scope, write=False)
        data = current(row, scope, name)["data"]
        if session is not None and session.state == "open":
            change = config_session.staged(session, NAME, name)
            if change is not None:
                data = masking.unmask(change.data, data, secret_of(change.data))
        return shown(data, secret_of(data))

    def PUT(self, holder_id, name):
        scope = config_session.Scope(self.kind, holder_id)
        row = holder(scope, lock=True)
        session = request_session(scope, write=True)
        data = self.body()
        doc = current(row, scope, name)
        masking.unmask(data, doc["data"], secret_of(data))  # the mask where nothing is stored: 400 now
        if session is None:
            data = masking.unmask(data, doc["data"], secret_of(data))
            write(row, scope, name, data, bump(row, scope), author())
            return {"revision": scope_revision(row, scope)}
        change = config_session.staged(session, NAME, name)
        if change is not None and change.base["revision"] != doc["revision"]:
            raise config_session.invalidate(session, [
                {"document": descriptor(name), "revision": doc["revision"], "author": doc["author"]}])
        if data == doc["data"]:
            config_session.unstage(session, NAME, name)
        else:
            config_session.stage(session, NAME, name, descriptor(name),
                                 sealing.seal(data, secret_of(data), secrets.keyset()), sorted(data),
                                 base={"revision": doc["revision"]})
        return {"staged": change is not None or data != doc["data"]}


class ToyClusterDocHandler(_ToyDocHandler):
    kind = "cluster"


class ToyEnvDocHandler(_ToyDocHandler):
    kind = "config"


URLS = [
    {"uri": r"/toy/docs/([0-9]+)/([a-z0-9_]+)/?", "handler": ToyClusterDocHandler},
    {"uri": r"/toy/envs/([0-9]+)/docs/([a-z0-9_]+)/?", "handler": ToyEnvDocHandler},
] + session_routes("/toy/envs/<env_id>", resolve_release)


class ToySessions:
    """The session hooks of the toy extension."""

    @classmethod
    def session_revision(cls, scope, environment_id):
        if scope != "config":
            return None
        row = db.get(Release, environment_id)
        return None if row is None else scope_revision(row, config_session.Scope(scope, environment_id))

    @classmethod
    def on_session_lock(cls, session):
        scope = config_session.scope_of(session)
        if scope.kind == "config":
            holder(scope, lock=True)

    @classmethod
    def on_session_open(cls, session):
        return {"opened_at": session.version}

    @classmethod
    def session_conflicts(cls, session, changes):
        scope = config_session.scope_of(session)
        row = holder(scope)
        found = []
        for change in changes:
            doc = current(row, scope, change.document_key)
            if doc["revision"] != change.base["revision"]:
                found.append({"document": change.descriptor, "revision": doc["revision"], "author": doc["author"]})
        return found

    @classmethod
    def on_session_deploy(cls, session, changes):
        scope = config_session.scope_of(session)
        row = holder(scope, lock=True)
        revision = scope_revision(row, scope) if scope.kind == "cluster" else bump(row, scope)
        landed = []
        for change in changes:
            old = current(row, scope, change.document_key)["data"]
            new = masking.unmask(change.data, old, secret_of(change.data))
            if "invalid" in new:
                raise errors.InvalidData("Toy document {0} is invalid".format(change.document_key))
            write(row, scope, change.document_key, new, revision, session.owner)
            landed.append({"document": change.descriptor, "changed_keys": change.changed_keys,
                           "patch": jsonpatch.make_patch(old, new).patch, "secrets": sorted(secret_of(new))})
        return landed

    @classmethod
    def session_diff(cls, session, change, masked):
        scope = config_session.scope_of(session)
        old = current(holder(scope), scope, change.document_key)["data"]
        new = masking.unmask(change.data, old, secret_of(change.data))
        patch = jsonpatch.make_patch(old, new).patch
        return session_history.masked_patch(patch, secret_of(new)) if masked else (patch, False)
