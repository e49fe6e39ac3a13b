"""One ConfigDB document as a request sees it: through its configuration session, and merged with
the levels above it (effective values), now or as of one of its versions; and written or staged.

The handlers (``api.documents``) address the document (the URL, its 404s, the 308 of a name) and
answer ETags and conditional requests; what the document holds for a request is decided here, from
the stores (``objects.document``, ``objects.staging``), never from a storage driver. A read runs the
same statements whatever the depth of levels, the nodes or the versions
(``tests/configdb/test_query_counts.py``).
"""
from nailgun_ext_configdb.models import OVERRIDES, VALUES
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import json_values, levels, merge, opened, resource_definition, secrets, staging
from nailgun_ext_configdb.objects import write_policy


class DocumentView:
    """The ``kind`` document of ``resource`` at the level ``pairs`` of ``environment``, as seen in the
    configuration ``session`` (None: the stored documents only)."""

    def __init__(self, environment, resource, pairs, kind, session=None):
        self.environment = environment
        self.resource = resource
        self.pairs = pairs
        self.path = levels.join(pairs)
        self.kind = VALUES if kind == VALUES else OVERRIDES
        self.session = session
        self._staged_changes = None  # the session's, read once (``_staged``)
        self._heads_read = None  # ``_heads``

    def document(self, with_data=True, for_write=False):
        """The stored document, or None (``for_write``: read for a write, ``document.find``)."""
        return document_obj.find(self.environment.id, self.resource.id, self.path, self.kind, with_data, for_write)

    def data(self, document):
        """The document's content as this request sees it, clear: the session's staged one, or the stored."""
        return staging.view(self.session, self.resource, self.path, self.kind, document)

    def version(self, number):
        """The stored version ``number`` of the document (404 without one)."""
        return document_obj.version(self.document(), number)

    def edited(self, document):
        """What a keys operation or a patch starts from: the staged document as sent, or the stored one."""
        return staging.as_sent(self.session, self.resource, self.path, self.kind, document)

    def keep_staged(self, patched):
        """A patch's result with the masks it left alone put back to what the session stages there."""
        return staging.keep_staged(self.session, self.resource, self.path, self.kind, patched)

    def descriptor(self):
        """What a session's change of this document says it is."""
        return staging.descriptor(self.environment, self.resource, self.path, self.kind)

    def tagged(self, data):
        """What an ETag of ``data`` read in this view is the hash of: ``data``, with the session and
        when it last changed (a staged answer is not the stored one)."""
        if self.session is None:
            return data
        return [self.session.id, self.session.updated_at.isoformat(), data]

    def save(self, data, document, author, bound):
        """Write ``data``, or stage it in the session; the stored version, the staged change or None
        (nothing changed). ``author`` and ``bound`` as ``write``."""
        if self.session is not None:
            return staging.stage(self.session, self.environment, self.resource, self.path, self.kind, data,
                                 document, bound=bound)
        return self.write(data, document, author, bound)

    def write(self, data, document, author, bound):
        """Store ``data`` over ``document`` (``draft``, then ``store``)."""
        return self.store(self.draft(data, document, bound), author)

    def draft(self, data, document, bound, storable=False):
        """The new version ``data`` makes of ``document`` (``document.Draft``, ``storable`` as there); the mask
        at a secret leaf keeps the stored value. What it changes, in it and in the effective values at its
        level, must be what the definition's patch policy allows when the writer is ``bound`` by it
        (``write_policy``)."""
        stored = document.data if document is not None else {}
        data = secrets.unmask(self.resource, data, stored)
        if bound:
            write_policy.check(self.environment, self.resource, self.path, self.kind, stored, data)
        if self.kind == VALUES:
            resource_definition.validate_values(self.resource, data)
        return document_obj.Draft(self.resource, document, data, storable)

    def current(self, draft):
        """Whether ``draft`` is still of the stored document (``document.Draft.current``)."""
        return draft.current(self.environment.id, self.resource.id, self.path, self.kind)

    def store(self, draft, author, revision=None):
        """Store ``draft``; the stored version, or None (nothing changed). ``author()``: whom the version is
        recorded as written by, asked once every check has passed; ``revision``: the environment's new revision
        when the documents of one request share it (a batch), else each write bumps it."""
        return document_obj.store(self.environment, self.resource, self.path, self.kind, draft, author(), revision)

    def effective_state(self):
        """What the effective values here are a function of, read without their content (one light
        query): what the data source marks secret, the environment (``created_at`` tells a re-created one
        apart), the level, and the version of every document merged."""
        return [self.resource.secret_schemas, self.environment.id, self.environment.created_at.isoformat(),
                self.path, [list(head[:3]) for head in self._heads()]]

    def _heads(self):
        """The merged documents' ``document.heads``, read once per view (the ETag's state, then the merge)."""
        if self._heads_read is None:
            self._heads_read = document_obj.heads(self.environment.id, self.resource.id,
                                                  levels.prefixes(self.pairs))
        return self._heads_read

    def holding(self):
        """``(mine, level)``: whether the environment stores documents at or below this level's value, and
        under any value of that level (``document.holding_and_heads``, which reads the heads with it); None at the
        environment level. What the ETag of an effective GET names for its ``X-Level-Unknown``, with the
        session's last change (``tagged``)."""
        if not self.pairs:
            return None
        deepest = len(self.pairs) == len(self.environment.hierarchy_levels)
        held, heads = document_obj.holding_and_heads(self.environment.id, self.resource.id,
                                                     levels.prefixes(self.pairs), self.path,
                                                     levels.join(self.pairs[:-1]), deepest)
        if self._heads_read is None:  # read with it (``_heads``)
            self._heads_read = heads
        return held

    def unknown_level(self, holding):
        """Whether, ``holding`` (``holding()``) and the session's staged documents said, nothing is at or below
        this level's value while something is under other values of that level: a node the environment has no
        documents for, among nodes it has some for. Its effective values are then only the levels above: a
        client must not take them for the node's. A session's staged documents count as stored, as its reads
        show them."""
        if holding is None:
            return False
        mine, level = holding
        deepest = len(self.pairs) == len(self.environment.hierarchy_levels)
        parent = levels.join(self.pairs[:-1])
        for path in staging.staged_paths(self._staged(), self.environment):
            mine = mine or path == self.path or (not deepest and path.startswith(self.path + "/"))
            level = level or (path.startswith(parent + "/") if parent else path != "")
        return bool(level and not mine)

    def _staged(self):
        """The session's staged changes, read once per view."""
        if self._staged_changes is None:
            self._staged_changes = staging.session_changes(self.session)
        return self._staged_changes

    def effective(self, version=None, lookup=True):
        """``(merged, lookup, layers)``: the merged values, their provenance (None unless ``lookup``) and
        the documents merged (broadest level first, values before overrides), as the session sees them
        now or, stored only, as they were when this document had its ``version``."""
        paths = levels.prefixes(self.pairs)
        marker_free = set()
        if version is None:
            contents, free = document_obj.current(self.environment, self._heads())
            documents = [staging.Layer(head[0], head[3], head[4], contents[head[0]]) for head in self._heads()
                         if head[0] in contents]  # one deleted since its head was read is not merged
            staged = staging.chain(self._staged(), self.environment, self.resource, paths, documents)
            placed = {(d.level_path, d.kind): d.data for d in staged}
            marker_free = {(d.level_path, d.kind) for d in documents if d.id in free
                           and placed[d.level_path, d.kind] is d.data}
        else:
            documents = document_obj.chain(self.environment.id, self.resource.id, paths)
            mine = next((d for d in documents if d.level_path == self.path and d.kind == self.kind), None)
            data = document_obj.data_as_of(documents, document_obj.version(mine, version).revision)
            placed = {(d.level_path, d.kind): data.get(d.id, {}) for d in documents}
        layers = [((path, kind), placed[path, kind]) for path in paths for kind in (VALUES, OVERRIDES)
                  if (path, kind) in placed]
        merged, provenance = merge.effective(layers) if lookup else (merge.values(layers, marker_free), None)
        return merged, provenance, [layer for _, layer in layers]

    @staticmethod
    def canonical(answer, layers):
        """``json_values.canonical(answer)`` of an answer made from ``layers`` (``effective``'s), with the text of
        the members it shares with the kept ones taken from them (``opened.members``)."""
        kept = [(layer, known) for layer, known in ((layer, opened.members(layer)) for layer in layers)
                if known is not None]
        return json_values.spliced(answer, kept)
