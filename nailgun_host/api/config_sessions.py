"""The routes of configuration sessions (seed 001), and the ``X-Configuration-Session`` header.

``session_routes(prefix, resolve)`` gives an environment's session routes; the host mounts them
under ``/clusters/<cluster_id>``, ConfigDB under ``/config/environments/<environment_id>``
(``resolve`` turns the URL's id into the session scope: a linked ConfigDB environment
resolves to its cluster's, so both prefixes see the same sessions).

| route | answer |
|---|---|
| POST ``<prefix>/configure`` (``{"ttl": s}`` optional) | 200 the new session |
| GET ``<prefix>/sessions`` | 200 ``{"sessions": [...]}``: the caller's open ones (everyone's for ``nailgun:admin``) |
| GET ``<prefix>/sessions/<session>`` | 200; 403 invalid (``errors``: its conflicts); 404; 400 another environment's; 403 another owner's |
| GET ``<prefix>/sessions/<session>/diff`` | 200 ``{"documents": [{"document", "patch"}]}`` current -> staged, masked |
| DELETE ``<prefix>/sessions/<session>`` | 200 abandoned; 403 deploying or deployed |
| POST ``<prefix>/sessions/<session>/deploy`` | 200 deployed; 403 not open; 409 documents changed since it opened |
| GET ``<prefix>/deployments`` | 200 ``{"deployments": [...]}`` newest first, diffs masked |

Header checks are the same on every route that honours it (``request_session``): an unknown or
malformed id 404, another environment's 400, another owner's 403, a write into a session that is
not open 403 naming its state, an expired one 403. A read with the header of a session that is
deploying, deployed or abandoned shows the current state and says so in
``X-Configuration-Session-State``; of an invalid one, 403 like the session's own GET.

Who may act on a session: its owner (the identity's name). ``nailgun:admin`` may also read and
abandon anyone's; nobody stages into or deploys another's.
"""
import re

import web

from nailgun_host import errors, extensions, policy
from nailgun_host.api.base import (MASKED_HEADER, BaseHandler, id_param, identity, request_body, revision_param,
                                   route, sees_secrets, set_status)
from nailgun_host.objects import config_session
from nailgun_platform import session_history

HEADER = "X-Configuration-Session"
STATE_HEADER = "X-Configuration-Session-State"
_ENVIRON_KEY = "HTTP_" + HEADER.upper().replace("-", "_")
#: a session id: uuid4 hex; anything else names no session (404)
_SESSION_ID = re.compile("[0-9a-f]{32}")
#: what the routes take where a session id goes: any segment, so that the policy answers first (a reader's
#: DELETE is 403 whatever it names) and the lookup then says that no session has it (404)
SEGMENT = "[^/]+"

CONFIGURE = {
    "type": "object", "additionalProperties": False,
    "properties": {"ttl": {"type": "integer", "minimum": config_session.MIN_TTL,
                           "maximum": config_session.MAX_TTL,
                           "description": "Seconds the session stays open after its last staging write"}},
}
MAX_DEPLOYMENTS = 500


def _owner_filter(write):
    """The owner a session must have for this request: None when the identity may act on anyone's."""
    asking = identity()
    if not write and policy.allowed(policy.ADMIN, asking):
        return None
    return asking.name


def _invalid(session):
    return errors.NotAllowed("Session {0} is invalid: {1}".format(
        session.id, config_session.conflict_message(session, session.conflicts or [])),
        [config_session.to_dict(session)])


def requested():
    """Whether the request names a session (``X-Configuration-Session``)."""
    return _ENVIRON_KEY in web.ctx.env


def request_session(scope, write, required=False):
    """The session the request's header names, checked against ``scope`` and the identity; None without
    the header (400 with ``required``: seed 000's model PATCH). For ``write`` it is locked (the caller
    already holds the environment's locks) and open."""
    value = web.ctx.env.get(_ENVIRON_KEY)
    if value is None:
        if required:
            raise errors.InvalidData("{0} header is required".format(HEADER))
        return None
    value = value.strip()
    session = config_session.find(value, lock=write) if _SESSION_ID.fullmatch(value) else None
    if session is None:
        raise errors.ObjectNotFound("No session has the id given in {0}".format(HEADER))
    config_session.check_access(session, scope, _owner_filter(write), write)
    if session.state == "expired":
        raise config_session.not_open(session)
    if session.state == "invalid":
        raise _invalid(session)
    if session.state != "open":
        web.header(STATE_HEADER, session.state)
    return session


class _SessionHandler(BaseHandler):
    """What every session route shares: the scope of the URL's environment (``resolve``)."""

    resolve = None

    def scope(self, environment_id, lock=False):
        return type(self).resolve(environment_id, lock)

    def session(self, environment_id, session_id, write, lock=False, lock_session=False, owner_only=False):
        """The URL's session, checked like the header's (404, 400, 403); with ``lock`` the environment's rows
        are locked first, then (``lock_session``) the session's: the order of every writer."""
        scope = self.scope(environment_id, lock)
        session = config_session.find(session_id, lock=lock_session) if _SESSION_ID.fullmatch(session_id) else None
        if session is None:
            raise errors.ObjectNotFound("Session {0} not found".format(session_id))
        owner = identity().name if owner_only else _owner_filter(False)
        config_session.check_access(session, scope, owner, write)
        return session


class _Configure(_SessionHandler):
    """Open a configuration session (seed 001's ``configure``)."""

    request_schemas = {"POST": CONFIGURE}
    optional_bodies = ("POST",)

    def POST(self, environment_id):
        data = self.body(object_only=True) if request_body().strip() else {}
        scope = self.scope(environment_id, lock=True)
        if scope.kind == "cluster":
            config_session.check_not_deploying(config_session.cluster_of(scope))
        config_session.collect_garbage(scope)
        session = config_session.open_session(scope, identity().name, data.get("ttl"))
        set_status(200)
        return config_session.to_dict(session)


class _Sessions(_SessionHandler):
    """The open sessions of the environment: the caller's own (everyone's for ``nailgun:admin``)."""

    policy_checks = {"GET": (policy.ADMIN,)}

    def GET(self, environment_id):
        scope = self.scope(environment_id)
        return {"sessions": [config_session.to_dict(s)
                             for s in config_session.sessions(scope, _owner_filter(False))]}


class _Session(_SessionHandler):
    """A session: GET shows it (403 once invalid), DELETE abandons it (anyone's for ``nailgun:admin``)."""

    policy_checks = {"GET": (policy.ADMIN,), "DELETE": (policy.ADMIN,)}

    other_responses = {"DELETE": {"200": "The session, abandoned"}}

    def GET(self, environment_id, session_id):
        session = self.session(environment_id, session_id, write=False)
        if session.state == "invalid":
            raise _invalid(session)
        return config_session.to_dict(session)

    def DELETE(self, environment_id, session_id):
        session = self.session(environment_id, session_id, write=False, lock=True, lock_session=True)
        config_session.abandon(session)
        set_status(200)
        return config_session.to_dict(session)


class _Diff(_SessionHandler):
    """What the session would change: an RFC 6902 patch per staged document, from the current one."""

    policy_checks = {"GET": (policy.ADMIN, policy.READ_SECRETS)}

    def GET(self, environment_id, session_id):
        session = self.session(environment_id, session_id, write=False)
        loaded = {extension.name: extension for extension in extensions.get_all_extensions()}
        masked, hidden, answer = not sees_secrets(), False, []
        for change in config_session.changes(session):
            extension = loaded.get(change.extension)
            patch, shown_masked = extension.session_diff(session, change, masked) if extension else ([], False)
            hidden = hidden or bool(shown_masked)
            answer.append({"document": change.descriptor, "patch": patch})
        if hidden:
            web.header(MASKED_HEADER, "true")
        return {"documents": answer}


class _Deploy(_SessionHandler):
    """Deploy the session: all its documents land in one revision, or nothing does."""

    def POST(self, environment_id, session_id):
        # the session row is not locked here: deploy claims it after the extensions' locks (the order)
        session = self.session(environment_id, session_id, write=True, lock=True, owner_only=True)
        config_session.deploy(session)
        set_status(200)
        return config_session.to_dict(session)


class _Deployments(_SessionHandler):
    """The environment's deployed sessions, newest first (``?limit=``, ``?before=<revision>``)."""

    policy_checks = {"GET": (policy.READ_SECRETS,)}

    def GET(self, environment_id):
        scope = self.scope(environment_id)
        limit = id_param("limit") or 50
        if limit > MAX_DEPLOYMENTS:
            raise errors.InvalidData("The query parameter limit must be at most {0}".format(MAX_DEPLOYMENTS))
        masked, hidden, answer = not sees_secrets(), False, []
        for session in config_session.deployments(scope, limit, revision_param("before")):
            entry, masked_here = deployment(session, masked)
            hidden = hidden or masked_here
            answer.append(entry)
        if hidden:
            web.header(MASKED_HEADER, "true")
        return {"deployments": answer}


def deployment(session, masked):
    """``(entry, hidden)``: a deployed session as the history shows it (plan section 5)."""
    history = session.deployed_changes or []
    diff, hidden = [], False
    for entry in history:
        patch = entry["patch"]
        if masked:
            patch, masked_here = session_history.masked_patch(patch, entry["secrets"])
            hidden = hidden or masked_here
        diff.append({"document": entry["document"], "patch": patch})
    iso = config_session.iso
    return {
        "id": session.id, "environment_id": session.environment_id, "environment_type": session.scope,
        "user_id": session.owner, "created": iso(session.created_at), "updated": iso(session.deployed_at),
        "started": iso(session.deployed_at), "finished": iso(session.deployed_at), "state": "success",
        "revision": session.revision, "revisions": session.revisions or {},
        "documents": [{"document": e["document"], "changed_keys": e["changed_keys"]} for e in history],
        "sections": sorted({key for e in history if e["document"].get("type") in section_types()
                            for key in e["changed_keys"]}),
        "diff": diff,
    }, hidden


def section_types():
    """The document types whose changed keys a deployment lists as its ``sections`` (the extensions declare
    them: ``BaseExtension.session_document_types``)."""
    return {name for declared in extensions.fire("session_document_types")
            for name, kind in declared.items() if kind.get("sections")}


def _class_prefix(prefix):
    words = [w for w in re.split(r"[/_]", re.sub(r"<[^>]*>", "", prefix)) if w]
    return "".join(word[:1].upper() + word[1:] for word in words)


def session_routes(prefix, resolve):
    """The session routes under ``prefix`` (a route template ending in the environment id placeholder);
    ``resolve(environment_id, lock)`` gives the ``config_session.Scope`` or raises 404."""
    name = _class_prefix(prefix)

    def handler(base, suffix):
        return type(name + suffix, (base,), {"resolve": staticmethod(resolve), "__module__": __name__,
                                             "__doc__": base.__doc__})

    session = {"session": SEGMENT}
    return [
        route(prefix + "/configure", handler(_Configure, "ConfigureHandler")),
        route(prefix + "/sessions", handler(_Sessions, "SessionCollectionHandler")),
        route(prefix + "/sessions/<session>", handler(_Session, "SessionHandler"), **session),
        route(prefix + "/sessions/<session>/diff", handler(_Diff, "SessionDiffHandler"), **session),
        route(prefix + "/sessions/<session>/deploy", handler(_Deploy, "SessionDeployHandler"), **session),
        route(prefix + "/deployments", handler(_Deployments, "DeploymentCollectionHandler")),
    ]
