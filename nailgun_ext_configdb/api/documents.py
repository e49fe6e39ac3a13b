"""Handlers of values and overrides: ``/config/environments/<env>/[<level>/<value>/...]resources/<res>/...``.

A resource is named by id or name. A PUT by name answers 308 with the id-based URL
(query string kept) as a path: built from the client's Host header, it would let a
forged Host send the next PUT's body elsewhere. Everything else answers directly. GETs never write.

Secrets (``objects.secrets``): an identity that may not see them reads every secret leaf as the
mask, on every path that returns content (values, ``?version=``, ``?key=``, ``effective``,
``show_lookup``, ``diff``), with ``X-Secrets-Masked: true``; one that may is never masked (nor
classified for). Writes put the stored value back where a secret comes back as the mask, and
``If-Match`` is compared with the ETag of the view the identity was given.

Sessions (``objects.staging``): with ``X-Configuration-Session`` every write (PUT, keys, revert,
JSON patch) stages the whole new document in the session instead of writing it, after the same
checks; every read but history, diff and ``?version=`` shows the session's staged documents in
place of the stored ones, and its ETags name the session and when it last changed.
"""
import urllib.parse

import web

from nailgun_host.public import (MASKED_HEADER, author, config_sessions, errors, flag_param, id_param, parse_id, policy,
                                 query, sees_secrets, set_status)
from nailgun_platform.public import patching
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler, canonical, check_if_match, etag
from nailgun_ext_configdb.api.patch_rights import BYPASS_PATCH_POLICY, bound_by_patch_policy
from nailgun_ext_configdb.models import OVERRIDES, VALUES
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import environment, json_patch, json_values, keys, levels, merge
from nailgun_ext_configdb.objects import resource_definition, secrets, staging, write_policy

PATH_SAFE = "/:@!$&'()*+,;="


class Target:
    """The document a URL addresses: environment, resource, level path and kind, and the session the
    request's ``X-Configuration-Session`` names (None without it, or with ``sessions=False``: the
    routes of stored versions). A write (``lock``) locks the environment, then the session."""

    def __init__(self, environment_id, level_names, ref, kind, lock=False, sessions=True):
        self.environment = environment.get(environment_id, lock=lock)
        self.resource = environment.resource(self.environment, ref)
        self.pairs = levels.resolve(self.environment, level_names)
        self.path = levels.join(self.pairs)
        self.kind = VALUES if kind == VALUES else OVERRIDES
        self.by_name = parse_id(ref) is None
        self._raw = (environment_id, level_names, ref)
        self.session = None
        if sessions:
            self.session = config_sessions.request_session(environment.scope(self.environment), write=lock)

    def document(self, with_data=True):
        return document_obj.find(self.environment.id, self.resource.id, self.path, self.kind, with_data)

    def data(self, document):
        """The document's content as this request sees it, clear: the session's staged one, or the stored."""
        return staging.view(self.session, self.resource, self.path, self.kind, document)

    def tagged(self, data):
        """What a GET's ETag is the hash of: ``data``, with the session and when it last changed."""
        if self.session is None:
            return data
        return [self.session.id, self.session.updated_at.isoformat(), data]

    def save(self, data, document):
        """Write ``data``, or stage it in the request's session; the stored version, the staged change or
        None (nothing changed)."""
        if self.session is not None:
            return staging.stage(self.session, self.environment, self.resource, self.path, self.kind, data,
                                 document, bound=bound_by_patch_policy())
        return self.write(data, document)

    def edited(self, document):
        """What a keys operation or a patch starts from: the staged document as sent, or the stored one."""
        return staging.as_sent(self.session, self.resource, self.path, self.kind, document)

    def redirect_to_id(self):
        """308 to the same URL with the id of the version the environment is pinned to instead of the name."""
        environment_id, level_names, ref = self._raw
        path = web.ctx.path
        start = path.index("/environments/")
        named = "/environments/{0}/{1}resources/".format(environment_id, level_names)
        rest = path[start + len(named) + len(ref):]
        location = web.ctx.homepath + urllib.parse.quote(
            path[:start] + named + str(self.resource.definition_id) + rest, safe=PATH_SAFE) + web.ctx.query
        set_status(308)
        web.header("Location", location)
        return {"message": "Use the resource id: {0}".format(location), "errors": []}

    def write(self, data, document):
        """Store ``data`` where it addresses; the mask at a secret leaf keeps the stored value. What it
        changes, in it and in the effective values at its level, must be what the definition's patch policy
        allows, for whom it binds (``write_policy``)."""
        stored = document.data if document is not None else {}
        data = secrets.unmask(self.resource, data, stored)
        if bound_by_patch_policy():
            write_policy.check(self.environment, self.resource, self.path, self.kind, stored, data)
        if self.kind == VALUES:
            resource_definition.validate_values(self.resource, data)
        return document_obj.write(self.environment, self.resource, self.path, self.kind, data, author(),
                                  document=document)

    def check_if_match(self, document):
        """412 unless If-Match has the ETag of ``document`` as this identity reads it (masked or not, staged
        or not)."""
        current = self.data(document)
        if not sees_secrets():
            current = secrets.masked(current, secrets.of(self.resource, current))
        check_if_match(self.tagged(current))

    def effective_tag(self, params):
        """A strong ETag of an effective GET, from the versions it merges rather than its body.

        Revalidation (If-None-Match) then costs one light query and no merge. Masked and clear
        answers differ, so whether secrets are shown is part of it, and so is what the data source's
        live versions mark secret (a new version can mask a leaf without any document changing).
        """
        state = [web.ctx.path, sorted(params.items()), sees_secrets(), self.resource.secret_schemas,
                 self.environment.id,
                 self.environment.created_at.isoformat(), self.path,
                 [list(head) for head in document_obj.heads(self.environment.id, self.resource.id,
                                                            levels.prefixes(self.pairs))]]
        return etag(canonical(self.tagged(state)))

    def effective(self, version=None):
        """The merged values, their provenance and the documents merged, now or as of this document's
        ``version``."""
        paths = levels.prefixes(self.pairs)
        documents = document_obj.chain(self.environment.id, self.resource.id, paths)
        if version is None:
            documents = staging.chain(self.session, self.environment, self.resource, paths, documents)
            placed = {(d.level_path, d.kind): d.data for d in documents}
        else:  # stored versions only
            mine = next((d for d in documents if d.level_path == self.path and d.kind == self.kind), None)
            data = document_obj.data_as_of(documents, document_obj.version(mine, version).revision)
            placed = {(d.level_path, d.kind): data.get(d.id, {}) for d in documents}
        layers = [((path, kind), placed[path, kind]) for path in paths for kind in (VALUES, OVERRIDES)
                  if (path, kind) in placed]
        merged, lookup = merge.effective(layers)
        return merged, lookup, [layer for _, layer in layers]


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
        """``(the 308 answer of a name, or None; the body)``: a write's body read and decoded (a patch's
        operations checked, ``PATCH.max_operations`` first) before the environment is locked, so that a
        large one does not hold the environment's other writers; what the URL names is resolved first
        (404), as the locked write does again."""
        target = Target(environment_id, level_names, ref, kind, sessions=False)
        if target.by_name:
            return target.redirect_to_id(), None
        body = self.body(**kwargs)
        return None, patching.check_operations(body) if web.ctx.method == "PATCH" else body

    def GET(self, environment_id, level_names, ref, kind):
        target = Target(environment_id, level_names, ref, kind)
        params = query()
        version = id_param("version")
        show_lookup = flag_param("show_lookup")
        tokens = _key_param(params)
        tag = lookup = None
        if flag_param("effective"):
            tag = target.effective_tag(params)
            if self.not_modified(tag):
                return None
            result, lookup, layers = target.effective(version)
            if not sees_secrets():
                result = _hide(result, secrets.of_merged(target.resource, layers, result), tokens)
        elif show_lookup:
            raise errors.InvalidData("Lookup path tracing can be done only for effective values")
        else:
            if version is not None:
                result = document_obj.version(target.document(), version).data
            else:
                result = target.data(target.document())
            if not sees_secrets():
                result = _hide(result, secrets.of(target.resource, result), tokens)
        if show_lookup:
            result = merge.annotate(result, lookup, _describe)
        if tokens is not None:
            result = keys.lookup_annotated(result, tokens) if show_lookup else keys.lookup(result, tokens)
        if tag is None and target.session is not None:
            tag = etag(canonical(target.tagged(result)))
            if self.not_modified(tag):
                return None
        return self.respond(result, tag)

    def PUT(self, environment_id, level_names, ref, kind):
        redirect, data = self.body_before_lock(environment_id, level_names, ref, kind, object_only=True)
        if redirect is not None:
            return redirect
        target = Target(environment_id, level_names, ref, kind, lock=True)
        document = target.document()
        target.check_if_match(document)
        target.save(data, document)
        set_status(204)

    def PATCH(self, environment_id, level_names, ref, kind):
        """RFC 6902 on the document as this identity sees it (masked, staged), all or nothing; 204."""
        redirect, patch = self.body_before_lock(environment_id, level_names, ref, kind)
        if redirect is not None:
            return redirect
        target = Target(environment_id, level_names, ref, kind, lock=True)
        document = target.document()
        target.check_if_match(document)
        seen = target.data(document)
        if not sees_secrets():
            seen = secrets.masked(seen, secrets.of(target.resource, seen))
        patched = json_patch.apply(target.resource, seen, patch, bound=bound_by_patch_policy())
        if target.session is not None:  # masks it left alone stay masks in the session
            patched = staging.keep_staged(target.session, target.resource, target.path, target.kind, patched)
        target.save(patched, document)
        set_status(204)


class ConfigDocumentKeysHandler(ConfigHandler):
    request_schemas = {"PUT": schemas.KEY_PATHS, "PATCH": schemas.KEY_PATHS}
    policy_checks = {"PUT": WRITE_CHECKS, "PATCH": WRITE_CHECKS}

    def PATCH(self, environment_id, level_names, ref, kind, operation):
        target = Target(environment_id, level_names, ref, kind, lock=True)
        paths = self.body()
        document = target.document()
        target.check_if_match(document)
        target.save(keys.apply_operation(target.edited(document), operation, paths), document)
        set_status(204)

    PUT = PATCH


class ConfigDocumentHistoryHandler(ConfigHandler):
    def GET(self, environment_id, level_names, ref, kind):
        target = Target(environment_id, level_names, ref, kind, sessions=False)
        return self.respond([version_to_dict(v) for v in document_obj.history(target.document(with_data=False))])


class ConfigDocumentDiffHandler(ConfigHandler):
    policy_checks = {"GET": (policy.READ_SECRETS,)}

    def GET(self, environment_id, level_names, ref, kind):
        target = Target(environment_id, level_names, ref, kind, sessions=False)
        document = target.document(with_data=False)
        old = document_obj.version(document, id_param("from", required=True)).data
        to = id_param("to")
        new = document_obj.version(document, to if to is not None else document.version).data
        patch = json_values.diff(old, new)
        if not sees_secrets():
            secret = secrets.of(target.resource, old) | secrets.of(target.resource, new)
            patch, hidden = secrets.masked_patch(patch, old, secret)
            if hidden:
                web.header(MASKED_HEADER, "true")
        return self.respond(patch)


class ConfigDocumentRevertHandler(ConfigHandler):
    request_schemas = {"POST": schemas.REVERT}
    policy_checks = {"POST": WRITE_CHECKS}

    def POST(self, environment_id, level_names, ref, kind):
        """A new version equal to the given one: 201 with it, or 200 with the current one if equal.

        In a session the old version is staged: 200 with the session's change of the document."""
        target = Target(environment_id, level_names, ref, kind, lock=True)
        number = self.body()["version"]
        document = target.document()
        old = document_obj.version(document, number)
        target.check_if_match(document)
        if target.session is not None:
            change = target.save(old.data, document)
            return {"session": target.session.id, "staged": change is not None,
                    "document": staging.descriptor(target.environment, target.resource, target.path, target.kind),
                    "changed_keys": change.changed_keys if change is not None else []}
        stored = target.write(old.data, document)
        if stored is None:
            return version_to_dict(document_obj.version(document, document.version))
        set_status(201)
        return version_to_dict(stored)
