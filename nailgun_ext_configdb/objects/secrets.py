"""Which leaves of a ConfigDB document are secret, and the views of a document that follow from it.

One rule for values and overrides alike: the host's classifier (key-name patterns from the
settings, ``format: password`` / ``x-secret: true`` in the resource definition's
``content.schema``). Overrides are classified with their definition's schema too: they
override the same keys. Everything here works on JSON pointers (RFC 6901) to leaves.
"""
import json

from nailgun_platform.public import classify, masking, pointers, sealing, secrets


def of(resource, document):
    """The secret pointers of a values or overrides ``document`` of ``resource`` (an
    ``resource_definition.Resource``: what any of its live versions makes secret)."""
    return classifier(resource.secret_schemas)(document)


def secret_pointers(document, schemas=(), patterns=classify.DEFAULT_PATTERNS):
    """ConfigDB's classifier: the secret leaves of a values or overrides document, by key name
    (``patterns``) and by each of its definition's ``schemas``."""
    found = classify.by_name(document, patterns)
    for schema in schemas:
        if isinstance(schema, dict):
            found.update(classify.by_schema(document, schema))
    return found


def classifier(schemas):
    """The secret pointers of a document of a data source whose live versions have ``schemas`` (None: no schema)."""
    patterns = secrets.patterns()
    schemas = [schema for schema in schemas if isinstance(schema, dict)]
    return lambda document: secret_pointers(document, schemas, patterns)


def seal(resource, document, stored=None, tokens=None):
    """``document`` as it is stored: each secret leaf a Fernet token under the primary key.

    A leaf that the ``stored`` document (clear) holds with the same JSON text at the same place keeps its
    token there (``tokens``: ``sealing.loads``'), when that token is under the primary key: a write encrypts
    only the secrets it changes, and the stored rows tell no more than ``changed_keys`` does."""
    keyset = secrets.keyset()
    kept = None
    if tokens:
        def kept(pointer, text):
            token = tokens.get(text)
            if token is None or not keyset.is_current(token):
                return None
            before = pointers.get(stored, pointer, _ABSENT)
            if before is _ABSENT or json.dumps(before, separators=(",", ":")).encode("utf-8") != text:
                return None
            return token
    return sealing.seal(document, of(resource, document), keyset, kept)


def unmask(resource, document, stored):
    """``document`` with each mask at one of its secret pointers replaced by the value ``stored`` has
    there, so that writing back what a reader was shown changes nothing (400 where nothing is stored).

    ``document`` itself when it holds no mask: most writes come from identities that see secrets, and
    need no classification here.
    """
    if not masking.holds_mask(document):
        return document
    return masking.unmask(document, stored, of(resource, document))


def of_merged(resource, layers, merged):
    """The secret pointers of the effective values ``merged`` from ``layers`` (documents).

    What any layer says is secret stays secret once merged, whatever the merged document looks like;
    the result names leaves of ``merged`` only (a layer's leaf filled in by a narrower layer: its leaves).
    """
    found = of(resource, merged)
    for document in layers:
        found |= of(resource, document)
    return leaves_of(merged, found)


def leaves_of(document, secret):
    """The leaves of ``document`` at or under one of the pointers ``secret`` (absent ones dropped)."""
    result = set()
    for pointer in secret:
        value = pointers.get(document, pointer, _ABSENT)
        if value is not _ABSENT:
            result.update(pointers.leaves(value, pointer))
    return result


def under(secret, prefix):
    """The pointers of ``secret`` at or below ``prefix``, relative to it (``""``: ``prefix`` itself)."""
    if prefix == "":
        return set(secret)
    return {pointer[len(prefix):] for pointer in secret
            if pointer == prefix or pointer.startswith(prefix + "/")}


def masked(document, secret):
    """``document`` with ``MASK`` at each of the ``secret`` leaves (the same object when there is none)."""
    return masking.mask(document, secret) if secret else document


def masked_patch(patch, old, secret):
    """(``patch`` from ``old`` with the secret parts of its values masked, whether any was masked).

    ``secret``: the secret pointers of both documents. An op still says that a secret changed, was
    added or removed; its value reads as the mask (an object value: its secret leaves do).
    Appends (``/list/-``) are located at the index they land on, as ``json_values.diff`` orders them.
    """
    result, changed, appended = [], False, {}
    for op in patch:
        if "value" not in op:
            result.append(op)
            continue
        path = op["path"]
        if path.endswith("/-"):
            parent = path[:-2]
            appended[parent] = appended.get(parent, len(pointers.get(old, parent, [])))
            path = "{0}/{1}".format(parent, appended[parent])
            appended[parent] += 1
        if any(path.startswith(s + "/") for s in secret):
            value = masking.MASK  # inside what one of the documents has as a secret leaf
        else:
            value = masked(op["value"], under(secret, path))
        changed = changed or value != op["value"]
        result.append(dict(op, value=value))
    return result, changed


_ABSENT = object()
