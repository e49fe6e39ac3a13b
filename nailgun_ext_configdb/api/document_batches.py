"""Many documents of one environment written in one request: ``POST /config/environments/<env>/documents``.

``config upload env`` writes 1,400 documents; 1,400 PUTs cost the server a request each (authentication, the
request log, a transaction, the environment's lock, a commit). A batch item says what one PUT of a document says
(its level, data source, kind, body and, optionally, its If-Match) and is checked and stored as that PUT would
be (``objects.document_view``: secrets unmasked then sealed, values validated, patch policies, no new version
for the same JSON), but all the items in one transaction under one lock of the environment, sharing one new
revision, as a session's deploy does: the change feed (an entry per document written, one wake-up) and every
reader see all of them or none. The first item refused refuses the batch with its status and message, naming
it (``errors[0].item``: its index); nothing is written. A batch holds at most
``schemas.MAX_BATCH_DOCUMENTS`` items and ``MAX_REQUEST_BODY`` bytes (413 beyond), names each document at most
once, and is no configuration session's (400: stage documents one by one). Its lock is held from the first item
to the commit, so the environment's other writers wait for a batch as for a session's deploy.
"""
import web

from nailgun_host.public import author, config_sessions, errors
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.api.documents import WRITE_CHECKS, check_view_if_match
from nailgun_ext_configdb.api.patch_rights import bound_by_patch_policy
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import document_view, environment, levels


class Places:
    """What a batch's items name in the locked ``found`` environment, each level and data source resolved once
    (a node of a linked environment and a data source's pin are a query each), and the stored documents they
    name, read in one query per data source (``stored``)."""

    def __init__(self, found):
        self.environment = found
        self._levels = {}
        self._resources = {}
        self._stored = {}

    def view(self, item):
        level = item.get("level", "")
        if level not in self._levels:
            self._levels[level] = levels.resolve(self.environment, level)
        ref = str(item["resource"])
        if ref not in self._resources:
            self._resources[ref] = environment.resource(self.environment, ref)
        return document_view.DocumentView(self.environment, self._resources[ref], self._levels[level],
                                          item.get("kind", "values"))

    def read(self, views):
        """Read the stored documents ``views`` name: one query per data source (``document.chain``)."""
        paths = {}
        for view in views:
            paths.setdefault(view.resource.id, set()).add(view.path)
        for resource_id, level_paths in paths.items():
            for stored in document_obj.chain(self.environment.id, resource_id, sorted(level_paths)):
                self._stored[stored.resource_definition_id, stored.level_path, stored.kind] = stored

    def stored(self, view):
        """The stored document ``view`` names (``read`` first), or None: what ``view.document()`` reads."""
        return self._stored.get((view.resource.id, view.path, view.kind))


def _refused(exc, index, item):
    """``exc`` as the batch's answer: its message after the item's place, ``errors`` first naming the item."""
    place = {"item": index, "level": item.get("level", ""), "resource": item.get("resource"),
             "kind": item.get("kind", "values")}
    exc.message = "Document {0} of the batch ({1} of data source {2} at {3}): {4}".format(
        index, place["kind"], place["resource"], levels.display(levels.join(levels.split(place["level"]))),
        exc.message)
    exc.args = (exc.message,)
    exc.errors = [place] + exc.errors
    return exc


class ConfigDocumentBatchHandler(ConfigHandler):
    """Write many documents of an environment at once, all or none."""

    request_schemas = {"POST": schemas.DOCUMENT_BATCH}
    response_schemas = {"POST": schemas.DOCUMENT_BATCH_ANSWER}
    policy_checks = {"POST": WRITE_CHECKS}

    def POST(self, environment_id):
        if config_sessions.requested():
            raise errors.InvalidData("A batch is not staged in a configuration session: send each document's PUT "
                                     "with X-Configuration-Session, or leave the header out")
        if web.ctx.env.get("HTTP_IF_MATCH") is not None:
            raise errors.InvalidData("If-Match is a document's: give it as the item's if_match")
        environment.get(environment_id)  # 404 first, as a PUT's; the body is read before the lock
        items = self.body(wrapping=schemas.batch_wrapping)["documents"]
        if len(items) > schemas.MAX_BATCH_DOCUMENTS:
            raise errors.RequestTooLarge("A batch writes at most {0} documents, not {1}: send several".format(
                schemas.MAX_BATCH_DOCUMENTS, len(items)))
        found = environment.get(environment_id, lock=True)
        places, bound = Places(found), bound_by_patch_policy()
        views, seen = [], {}
        for index, item in enumerate(items):  # what each names first: the documents are then read at once
            try:
                view = places.view(item)
                key = (view.resource.id, view.path, view.kind)
                if key in seen:
                    raise errors.InvalidData("item {0} names this document too".format(seen[key]))
            except errors.NailgunError as exc:
                raise _refused(exc, index, item)
            seen[key] = index
            views.append(view)
        places.read(views)
        revision, written = found.revision + 1, []
        for index, (item, view) in enumerate(zip(items, views)):
            document = places.stored(view)
            try:
                if "if_match" in item:
                    check_view_if_match(view, document, item["if_match"])
                stored = view.store(view.draft(item["data"], document, bound, storable=True), author, revision)
            except errors.NailgunError as exc:
                raise _refused(exc, index, item)
            written.append({"level": levels.display(view.path), "resource": view.resource.id,
                            "resource_name": view.resource.name, "kind": view.kind,
                            "version": stored.version if stored is not None else document.version,
                            "changed": stored is not None})
        return {"revision": found.revision, "written": sum(w["changed"] for w in written), "documents": written}
