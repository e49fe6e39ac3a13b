"""Addressing keys inside a document, and tuning-box's batch keys operations.

A key is given as ``a.b.0`` (tuning-box's dotted form) or as an RFC 6901 pointer
(``/a/b/0``, which also reaches keys containing dots). Operations work on a copy
and apply every path or none.
"""
import copy

import jsonpointer

from nailgun_host.public import errors


def parse_key(key):
    """The tokens of a dotted key or of a JSON pointer."""
    if key.startswith("/"):
        try:
            return jsonpointer.JsonPointer(key).parts
        except jsonpointer.JsonPointerException as exc:
            raise errors.InvalidData("Invalid key pointer {0!r}: {1}".format(key, exc))
    return key.split(".")


def _index(container, token):
    """The list index ``token`` names in ``container``, or None when it names none."""
    if isinstance(token, bool):
        return None
    try:
        index = int(token)
    except (TypeError, ValueError):
        return None
    return index if 0 <= index < len(container) else None


def _find(doc, tokens):
    """(the value at ``tokens``, the JSON pointer naming it); 404 when any step is missing or goes through a scalar."""
    node, path = doc, ""
    for depth, token in enumerate(tokens):
        if isinstance(node, dict) and str(token) in node:
            node = node[str(token)]
            path += "/" + jsonpointer.escape(str(token))
        elif isinstance(node, list) and _index(node, token) is not None:
            index = _index(node, token)
            node = node[index]
            path += "/{0}".format(index)
        else:
            raise errors.ObjectNotFound("Key {0} is not found".format(
                ".".join(str(t) for t in tokens[:depth + 1])))
    return node, path


def lookup(doc, tokens):
    """The value at ``tokens``; 404 when any step is missing or goes through a scalar."""
    return _find(doc, tokens)[0]


def pointer(doc, tokens):
    """The JSON pointer of what ``lookup`` finds at ``tokens``, spelt as the document's keys and indexes."""
    return _find(doc, tokens)[1]


def _check_path(path, minimum):
    """400 unless ``path`` is a key path; the message quotes its keys, never a value to set (it may be a secret)."""
    if not isinstance(path, list) or len(path) < minimum:
        raise errors.InvalidData("Every key path must be a list of at least {0} items{1}".format(
            minimum, ": {0}".format(path) if isinstance(path, list) and minimum == 1 else ""))
    keys = path[:-1] if minimum == 2 else path
    for key in keys:
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise errors.InvalidData("Keys must be strings or integers, not {0}".format(type(key).__name__))


def _parent(doc, keys, create):
    node = doc
    for depth, key in enumerate(keys):
        where = keys[:depth + 1]
        if isinstance(node, dict):
            if str(key) not in node:
                if not create:
                    raise errors.ObjectNotFound("Key path {0} is not found".format(where))
                node[str(key)] = {}
            node = node[str(key)]
        elif isinstance(node, list):
            index = _index(node, key)
            if index is None:
                raise errors.ObjectNotFound("Key path {0} is not found".format(where))
            node = node[index]
        else:
            raise errors.Conflict("Key path {0} goes through a value that is not an object or a list".format(where))
    return node


def _apply(doc, keys, operation, value=None):
    parent = _parent(doc, keys[:-1], create=operation == "set")
    last = keys[-1]
    if isinstance(parent, dict):
        if operation == "set":
            parent[str(last)] = value
        elif str(last) in parent:
            del parent[str(last)]
        else:
            raise errors.ObjectNotFound("Key path {0} is not found".format(keys))
    elif isinstance(parent, list):
        index = _index(parent, last)
        if index is None:
            raise errors.ObjectNotFound("Key path {0} is not found".format(keys))
        if operation == "set":
            parent[index] = value
        else:
            del parent[index]
    else:
        raise errors.Conflict("Key path {0} goes through a value that is not an object or a list".format(keys))


def apply_operation(doc, operation, paths):
    """A new document with every ``set`` ([k1, ..., kN, value]) or ``delete`` ([k1, ..., kN]) applied."""
    if not isinstance(paths, list):
        raise errors.InvalidData("The body must be a list of key paths")
    minimum = 2 if operation == "set" else 1
    for path in paths:
        _check_path(path, minimum)
    result = copy.deepcopy(doc)
    for path in paths:
        if operation == "set":
            _apply(result, path[:-1], "set", path[-1])
        else:
            _apply(result, path, "delete")
    return result


def lookup_annotated(tree, tokens):
    """``lookup`` in a ``show_lookup`` tree, whose leaves are ``[value, level, source]``."""
    node = tree
    for depth, token in enumerate(tokens):
        if isinstance(node, list):
            return [lookup(node[0], tokens[depth:])] + node[1:]
        node = lookup(node, [token])
    return node
