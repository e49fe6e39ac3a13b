"""ConfigDB's JSON values: the linear diff, the form every database stores, and their canonical text made from
the text of kept documents' members.

Values compare with the platform's ``type_strict_equal`` (``nailgun_platform.json_equality``).
"""
import itertools
import json
import operator

import jsonpointer

from nailgun_platform.public import type_strict_equal


def diff(old, new):
    """An RFC 6902 patch turning ``old`` into ``new``, in time linear in their sizes.

    Objects are compared key by key; arrays position by position (``replace`` at the
    positions both have, then ``add`` or ``remove`` at the end), so a reordered list
    is a run of replaces rather than the search for moves that makes a general
    minimal diff (jsonpatch.make_patch) take quadratic time and more. Values that
    differ only in JSON type are replaced. Applying the patch to ``old`` gives ``new``.
    """
    patch = []
    stack = [(old, new, "")]
    while stack:
        x, y, path = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            for key in x:
                where = path + "/" + jsonpointer.escape(key)
                if key not in y:
                    patch.append({"op": "remove", "path": where})
                elif not type_strict_equal(x[key], y[key]):
                    stack.append((x[key], y[key], where))
            patch.extend({"op": "add", "path": path + "/" + jsonpointer.escape(key), "value": y[key]}
                         for key in y if key not in x)
        elif isinstance(x, list) and isinstance(y, list):
            common = min(len(x), len(y))
            changed = [(x[i], y[i], "{0}/{1}".format(path, i)) for i in range(common)
                       if not type_strict_equal(x[i], y[i])]
            stack.extend(reversed(changed))
            patch.extend({"op": "remove", "path": "{0}/{1}".format(path, i)}
                         for i in range(len(x) - 1, common - 1, -1))
            patch.extend({"op": "add", "path": "{0}/-".format(path), "value": item} for item in y[common:])
        else:
            patch.append({"op": "replace", "path": path, "value": y})
    return patch


def stored_form(value):
    """``value`` as every database gives it back: a whole number written with an exponent is an integer.

    Python writes 1e16 as ``1e+16``, which PostgreSQL's jsonb keeps as the integer
    10000000000000000 (SQLite keeps the text); storing that form everywhere lets a
    rewrite of the same document compare equal on both. ``1.0`` stays a number.
    ``value`` itself when it holds no such number (the usual case: a large document is not copied). Python
    writes such a number ``<digits>e+<digits>``: a document whose JSON text has no ``e+`` (written in C) is
    not walked.
    """
    if "e+" not in json.dumps(value) or not _holds_exponent_integer(value):
        return value
    return _converted(value)


def _exponent_integer(number):
    return number.is_integer() and "e" in repr(number)


#: the types of JSON's other scalars, as decoded
_OTHER_SCALARS = frozenset((str, int, bool, type(None)))


def _holds_exponent_integer(value):
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _OTHER_SCALARS:
            continue
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and _exponent_integer(item):
            return True
    return False


def _converted(value):
    if isinstance(value, float):
        return int(value) if _exponent_integer(value) else value
    if isinstance(value, dict):
        return {key: _converted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_converted(item) for item in value]
    return value


def canonical(value):
    """The JSON text of ``value`` that answers and their ETags are made from."""
    return json.dumps(value, sort_keys=True)


def members(document):
    """``{key: '"key": <canonical text of its value>'}`` of an object decoded from JSON (its keys strings): what
    ``spliced`` takes the text of the members it shares with ``document`` from."""
    return {key: json.dumps(key) + ": " + canonical(item) for key, item in document.items()}


#: what a document's ``get`` answers for a key it lacks (no value is it)
_ABSENT = object()


def spliced(value, kept):
    """``canonical(value)``, byte for byte, where ``value`` is an object decoded from JSON: the text of each
    member whose value *is* (the same object as) the one under that key of an object of ``kept`` (pairs of an
    object and its ``members``, which must never change) is taken from there, the others' encoded.

    An effective answer shares most of its members with the documents it merges (``merge.values`` copies on
    write, masking copies what it masks), which are kept with their members (``opened.members``): encoding it
    whole took a fifth of a computed read. The same object has the same text, so the result is ``canonical``'s
    whatever the object came from.
    """
    if not isinstance(value, dict) or not kept:
        return canonical(value)
    keys = sorted(value)
    values = list(map(value.__getitem__, keys))
    texts = None
    left = range(len(keys))  # the positions whose text is still to be found
    for document, known in kept:
        found = list(map(operator.is_, map(document.get, map(keys.__getitem__, left), itertools.repeat(_ABSENT)),
                         map(values.__getitem__, left)))
        if texts is None:  # right where found; the others are written below
            texts = list(map(known.get, keys))
        else:
            for position in itertools.compress(left, found):
                texts[position] = known[keys[position]]
        left = list(itertools.compress(left, map(operator.not_, found)))
    for position in left:
        texts[position] = json.dumps(keys[position]) + ": " + canonical(values[position])
    return "{" + ", ".join(texts) + "}"
