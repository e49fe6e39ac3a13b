"""Handlers of values and overrides: ``/config/environments/<env>/[<level>/<value>/...]resources/<res>/...``.

A resource is named by id or name. A PUT by name answers 308 with the id-based URL
(query string kept) as a path: built from the client's Host header, it would let a
forged Host send the next PUT's body elsewhere. Everything else answers directly. GETs never write.
What a document holds for a request (staged or stored, merged, as of a version) is the domain's
(``objects.document_view``); these handlers address it and answer HTTP (ETags, conditions, 308).

Secrets (``objects.secrets``): an identity that may not see them reads every secret leaf as the
mask, on every path that returns content (values, ``?version=``, ``?key=``, ``effective``,
``show_lookup``, ``diff``), with ``X-Secrets-Masked: true``; one that may is never masked (nor
classified for). Writes put the stored value back where a secret comes back as the mask, and
``If-Match`` is compared with the ETag of the view the identity was given.

Sessions (``objects.staging``): with ``X-Configuration-Session`` every write (PUT, keys, revert,
JSON patch) stages the whole new document in the session instead of writing it, after the same
checks; every read but history, diff and ``?version=`` shows the session's staged documents in
place of the stored ones, and its ETags name the session and when it last changed.

Nodes: a ``nodes`` value is what ``objects.levels`` says (the one rule every client follows: they send a node
as given). An effective GET at a level value the environment stores nothing under, while it stores something
under others of that level, carries ``X-Level-Unknown: true``, so that a client never takes the levels above
for a misnamed node's values.
"""
import urllib.parse

import web

from nailgun_host.public import (MASKED_HEADER, author, config_sessions, db, errors, flag_param, id_param, parse_id,
                                 policy, query, sees_secrets, set_status)
from nailgun_platform.public import patching
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler, canonical, check_if_match, etag
from nailgun_ext_configdb.api.patch_rights import BYPASS_PATCH_POLICY, bound_by_patch_policy
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import address, document_view, environment, json_patch, json_values, keys, levels
from nailgun_ext_configdb.objects import merge, secrets

PATH_SAFE = "/:@!$&'()*+,;="
#: set on an effective GET at a level value the environment stores nothing under while it stores something
#: under others of that level (``DocumentView.unknown_level``): a node's lookup that would see only the
#: levels above it, which the Hiera backends refuse to take for the node's values
UNKNOWN_LEVEL_HEADER = "X-Level-Unknown"


class Target:
    """What a URL addresses, resolved (404s): the environment (locked for a write, ``lock``; for a read the
    ``address.Snapshot`` of its row), resource, level and kind, seen in the session the request's
    ``X-Configuration-Session`` names (None without it, or with ``sessions=False``: the routes of stored
    versions); ``view`` is the document itself (``objects.document_view``). Here stay what is HTTP's: the 308
    of a name, If-Match and ETags."""

    def __init__(self, environment_id, level_names, ref, kind, lock=False, sessions=True):
        if lock:
            found = environment.get(environment_id, lock=True)
            resource = environment.resource(found, ref)
            pairs = levels.resolve(found, level_names)
        else:  # one statement, no ORM objects
            found, resource, pairs = address.resolve(environment_id, level_names, ref)
        session = None
        if sessions:
            session = config_sessions.request_session(environment.scope(found), write=lock)
        self.view = document_view.DocumentView(found, resource, pairs, kind, session)
        self.by_name = parse_id(ref) is None
        self._raw = (environment_id, level_names, ref)

    def save(self, data, document):
        """``view.save`` by the request's identity."""
        return self.view.save(data, document, author, bound_by_patch_policy())

    def redirect_to_id(self):
        """308 to the same URL with the id of the version the environment is pinned to instead of the name."""
        environment_id, level_names, ref = self._raw
        path = web.ctx.path
        start = path.index("/environments/")
        named = "/environments/{0}/{1}resources/".format(environment_id, level_names)
        rest = path[start + len(named) + len(ref):]
        location = web.ctx.homepath + urllib.parse.quote(
            path[:start] + named + str(self.view.resource.definition_id) + rest, safe=PATH_SAFE) + web.ctx.query
        set_status(308)
        web.header("Location", location)
        return {"message": "Use the resource id: {0}".format(location), "errors": []}

    def check_if_match(self, document):
        """``check_view_if_match`` of the request's If-Match."""
        check_view_if_match(self.view, document)

    def effective_tag(self, params, holding):
        """A strong ETag of an effective GET, from the versions it merges rather than its body.

        Revalidation (If-None-Match) then costs one light query and no merge. Masked and clear
        answers differ, so whether secrets are shown is part of it, and so is what the data source's
        live versions mark secret (a new version can mask a leaf without any document changing), and
        which levels hold documents (``holding``, which with a session's staged ones, named by its time of
        last change, decides ``X-Level-Unknown``).
        """
        state = [web.ctx.path, sorted(params.items()), sees_secrets(), holding] + self.view.effective_state()
        return etag(canonical(self.view.tagged(state)))


def check_view_if_match(view, document, header=None):
    """412 unless ``header`` (the request's If-Match unless given) has the ETag of ``document`` as this identity
    reads it in ``view`` (masked or not, staged or not)."""
    header = web.ctx.env.get("HTTP_IF_MATCH") if header is None else header
    if header is None:
        return
    current = view.data(document)
    if not sees_secrets():
        current = secrets.masked(current, secrets.of(view.resource, current))
    check_if_match(view.tagged(current), header)


def version_to_dict(stored):
    return {"version": stored.version, "revision": stored.revision,
            "created_at": stored.created_at.isoformat(), "author": stored.author,
            "changed_keys": stored.changed_keys}


def _describe(origin):
    path, kind = origin
    return levels.display(path), kind


def _hide(document, secret, tokens):
    """``document`` with its ``secret`` leaves masked; the header says so when the part the answer
    shows (``tokens``: a key's) holds one."""
    if secret and (tokens is None or secrets.under(secret, keys.pointer(document, tokens))):
        web.header(MASKED_HEADER, "true")
    return secrets.masked(document, secret)


def _key_param(params):
    """The tokens of ``?key=``, None without it; an empty key names nothing, so it is a 400."""
    if "key" not in params:
        return None
    if not params["key"]:
        raise errors.InvalidData("The query parameter key must name a key (a.b or /a/b); "
                                 "leave it out for the whole document")
    return keys.parse_key(params["key"])


#: what a write asks inside: the patch policies, an author named for others, If-Match against what it may see
WRITE_CHECKS = (BYPASS_PATCH_POLICY, policy.ACT_FOR_OTHERS, policy.READ_SECRETS)


class ConfigDocumentHandler(ConfigHandler):
    request_schemas = {"PUT": schemas.DOCUMENT, "PATCH": schemas.JSON_PATCH}
    request_media_types = {"PATCH": schemas.JSON_PATCH_MEDIA_TYPES}
    response_schemas = {"GET": {}}  # ?key= picks any JSON value
    policy_checks = {"GET": (policy.READ_SECRETS,), "PUT": WRITE_CHECKS, "PATCH": WRITE_CHECKS}
    other_responses = dict(ConfigHandler.other_responses, PUT={
        "308": "A resource named by name: the same PUT to its id-based URL (Location)"}, PATCH={
        "308": "A resource named by name: the same PATCH to its id-based URL (Location)"})

    def body_before_lock(self, environment_id, level_names, ref, kind, **kwargs):
        """``(the 308 answer of a name, or None; the body; the unlocked target)``: a write's body read and
        decoded (a patch's operations checked, ``PATCH.max_operations`` first) before the environment is
        locked, so that a large one does not hold the environment's other writers; what the URL names is
        resolved first (404), as the locked write does again."""
        target = Target(environment_id, level_names, ref, kind, sessions=False)
        if target.by_name:
            return target.redirect_to_id(), None, target
        body = self.body(**kwargs)
        return None, patching.check_operations(body) if web.ctx.method == "PATCH" else body, target

    def GET(self, environment_id, level_names, ref, kind):
        target = Target(environment_id, level_names, ref, kind)
        view = target.view
        params = query()
        version = id_param("version")
        show_lookup = flag_param("show_lookup")
        tokens = _key_param(params)
        tag = lookup = text = None
        if flag_param("effective"):
            holding = view.holding()
            tag = target.effective_tag(params, holding)
            if self.not_modified(tag):
                return None
            if view.unknown_level(holding):
                web.header(UNKNOWN_LEVEL_HEADER, "true")
            result, lookup, layers = view.effective(version, lookup=show_lookup)
            if not sees_secrets():
                result = _hide(result, secrets.of_merged(view.resource, layers, result), tokens)
        elif show_lookup:
            raise errors.InvalidData("Lookup path tracing can be done only for effective values")
        else:
            if version is not None:
                result = view.version(version).data
            else:
                result = view.data(view.document())
            if not sees_secrets():
                result = _hide(result, secrets.of(view.resource, result), tokens)
        if show_lookup:
            result = merge.annotate(result, lookup, _describe)
        if tokens is not None:
            result = keys.lookup_annotated(result, tokens) if show_lookup else keys.lookup(result, tokens)
        elif tag is not None and not show_lookup:  # it shares with the documents what no narrower level filled
            text = view.canonical(result, layers)
        if tag is None and view.session is not None:
            tag = etag(canonical(view.tagged(result)))
            if self.not_modified(tag):
                return None
        return self.respond(result, tag, text)

    def PUT(self, environment_id, level_names, ref, kind):
        """The whole document replaced by the body; 204 (``drafted_write``)."""
        redirect, data, unlocked = self.body_before_lock(environment_id, level_names, ref, kind, object_only=True)
        if redirect is not None:
            return redirect
        drafted_write(unlocked, lambda: Target(environment_id, level_names, ref, kind, lock=True),
                      lambda target, document: data, storable=True)  # decode_json checked it
        set_status(204)

    def PATCH(self, environment_id, level_names, ref, kind):
        """RFC 6902 on the document as this identity sees it (masked, staged), all or nothing; 204
        (``drafted_write``)."""
        redirect, patch, unlocked = self.body_before_lock(environment_id, level_names, ref, kind)
        if redirect is not None:
            return redirect

        def patched(target, document):
            view = target.view
            seen = view.data(document)
            if not sees_secrets():
                seen = secrets.masked(seen, secrets.of(view.resource, seen))
            result = json_patch.apply(view.resource, seen, patch, bound=bound_by_patch_policy())
            if view.session is not None:  # masks it left alone stay masks in the session
                result = view.keep_staged(result)
            return result
        drafted_write(unlocked, lambda: Target(environment_id, level_names, ref, kind, lock=True), patched)
        set_status(204)


def drafted_write(unlocked, locked, new_data, storable=False):
    """``(the locked target, what ``Target.save`` gives, the document written over)``: the new version of the
    document ``new_data(target, document)`` makes is drafted (compared, validated, sealed: nearly all a
    write's work) on the ``unlocked`` target before ``locked()`` locks the environment, so that its lock,
    which orders the environment's writers, is held only to store it and commit; drafted again under the
    lock when what it was drafted from changed meanwhile (the document, its data source, its level), and
    under the lock from the start in a session or for a writer bound by patch policies (which read the
    levels around the document). If-Match is checked against the document each draft starts from.
    ``storable``: as ``document.Draft``'s."""
    draft = None
    if not config_sessions.requested() and not bound_by_patch_policy():
        document = unlocked.view.document(for_write=True)
        unlocked.check_if_match(document)
        draft = unlocked.view.draft(new_data(unlocked, document), document, bound=False, storable=storable)
    target = locked()
    view = target.view
    if draft is not None and (view.resource, view.path) == (unlocked.view.resource, unlocked.view.path) \
            and view.current(draft):
        return target, view.store(draft, author), draft.document
    if draft is not None and draft.document is not None:
        db.expunge(draft.document)  # read again, as it is now
    document = view.document(for_write=True)
    target.check_if_match(document)
    return target, target.save(new_data(target, document), document), document


class ConfigDocumentKeysHandler(ConfigHandler):
    request_schemas = {"PUT": schemas.KEY_PATHS, "PATCH": schemas.KEY_PATHS}
    policy_checks = {"PUT": WRITE_CHECKS, "PATCH": WRITE_CHECKS}

    def PATCH(self, environment_id, level_names, ref, kind, operation):
        """A keys operation on the document as sent (staged, or stored); 204 (``drafted_write``)."""
        unlocked = Target(environment_id, level_names, ref, kind, sessions=False)
        paths = self.body()
        drafted_write(unlocked, lambda: Target(environment_id, level_names, ref, kind, lock=True),
                      lambda target, document: keys.apply_operation(target.view.edited(document), operation, paths))
        set_status(204)

    PUT = PATCH


class ConfigDocumentHistoryHandler(ConfigHandler):
    def GET(self, environment_id, level_names, ref, kind):
        view = Target(environment_id, level_names, ref, kind, sessions=False).view
        return self.respond([version_to_dict(v) for v in document_obj.history(view.document(with_data=False))])


class ConfigDocumentDiffHandler(ConfigHandler):
    policy_checks = {"GET": (policy.READ_SECRETS,)}

    def GET(self, environment_id, level_names, ref, kind):
        view = Target(environment_id, level_names, ref, kind, sessions=False).view
        document = view.document(with_data=False)
        old = document_obj.version(document, id_param("from", required=True)).data
        to = id_param("to")
        new = document_obj.version(document, to if to is not None else document.version).data
        patch = json_values.diff(old, new)
        if not sees_secrets():
            secret = secrets.of(view.resource, old) | secrets.of(view.resource, new)
            patch, hidden = secrets.masked_patch(patch, old, secret)
            if hidden:
                web.header(MASKED_HEADER, "true")
        return self.respond(patch)


class ConfigDocumentRevertHandler(ConfigHandler):
    request_schemas = {"POST": schemas.REVERT}
    policy_checks = {"POST": WRITE_CHECKS}

    def POST(self, environment_id, level_names, ref, kind):
        """A new version equal to the given one: 201 with it, or 200 with the current one if equal
        (``drafted_write``).

        In a session the old version is staged: 200 with the session's change of the document."""
        unlocked = Target(environment_id, level_names, ref, kind, sessions=False)
        number = self.body()["version"]
        target, written, document = drafted_write(
            unlocked, lambda: Target(environment_id, level_names, ref, kind, lock=True),
            lambda target, document: document_obj.version(document, number).data, storable=True)
        view = target.view
        if view.session is not None:
            return {"session": view.session.id, "staged": written is not None, "document": view.descriptor(),
                    "changed_keys": written.changed_keys if written is not None else []}
        if written is None:
            return version_to_dict(document_obj.version(document, document.version))
        set_status(201)
        return version_to_dict(written)
