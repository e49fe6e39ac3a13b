"""Effective values: documents merged from the broadest level to the narrowest, with provenance.

Order (the spec's): environment values, environment overrides, then each narrower
level's values and overrides. Objects merge deeply, so a narrow override of one
nested key keeps its siblings; any other value (scalar, list, ``null``) replaces
what a broader document had. A narrower document removes a key, at any depth, by
setting it to the marker ``{"$unset": true}``; markers never appear in the result.
Only that exact JSON is the marker: ``{"$unset": 1}`` is a value like any other.
"""
UNSET = {"$unset": True}


def is_unset(value):
    """Whether ``value`` is the marker (``True`` only: JSON's ``true`` is the one ``bool``, never ``1``)."""
    return isinstance(value, dict) and len(value) == 1 and value.get("$unset") is True


def without_markers(document):
    """``document`` as a merge reads it: every key set to the marker left out (its value absent)."""
    return _fresh(document, None)[0]


def _fresh(value, origin):
    """``value`` without markers, in new objects (the merge fills them), and its provenance tree.

    Other values are shared with the document, never copied: nothing changes them.
    """
    if isinstance(value, dict) and value:
        data, lookup = {}, {}
        for key, item in value.items():
            if not is_unset(item):
                data[key], lookup[key] = _fresh(item, origin)
        return data, lookup
    return ({} if isinstance(value, dict) else value), origin


def _merge_into(target, lookup, doc, origin):
    for key, value in doc.items():
        if is_unset(value):
            target.pop(key, None)
            lookup.pop(key, None)
        elif isinstance(value, dict) and value and isinstance(target.get(key), dict):
            if not isinstance(lookup.get(key), dict):
                lookup[key] = {}
            _merge_into(target[key], lookup[key], value, origin)
        else:
            target[key], lookup[key] = _fresh(value, origin)


def effective(layers):
    """Merge ``(origin, document)`` pairs given broadest first; returns (values, provenance).

    The provenance mirrors the values: a dict for each merged object, the origin
    of the document that set it for everything else.
    """
    merged, lookup = {}, {}
    for origin, doc in layers:
        _merge_into(merged, lookup, doc, origin)
    return merged, lookup


def values(layers, marker_free=()):
    """``effective(layers)``'s values alone: what a read without ``show_lookup`` answers, with no
    provenance tree built.

    Copy on write: the result shares with the layers every object no narrower layer merges into, and
    copies only those it fills (the path from the root to what a narrower layer sets); a layer whose origin
    is in ``marker_free`` (its content holds no marker: ``has_marker``) is shared as it is, the others'
    objects are copied without their markers. Neither the layers nor the result may be changed afterwards
    (``objects.opened`` shares the layers between requests)."""
    merged = {}
    owned = {id(merged)}  # the ids of the objects this merge made, the only ones it fills
    for origin, doc in layers:
        if not merged and origin in marker_free:
            merged.update(doc)  # what the merge of a marker-free layer into nothing does, in one call
        else:
            _merge_values(merged, doc, origin in marker_free, owned)
    return merged


def has_marker(value):
    """Whether ``value`` holds the marker at any depth (lists are values: a marker in one is not one)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if is_unset(value):
                return True
            stack.extend(value.values())
    return False


def _fresh_values(value):
    if isinstance(value, dict):
        return {key: _fresh_values(item) for key, item in value.items() if not is_unset(item)}
    return value


def _merge_values(target, doc, shared, owned):
    for key, value in doc.items():
        if isinstance(value, dict):
            if is_unset(value):
                target.pop(key, None)
                continue
            current = target.get(key)
            if value and isinstance(current, dict):
                if id(current) not in owned:
                    current = target[key] = dict(current)
                    owned.add(id(current))
                _merge_values(current, value, shared, owned)
            elif shared:
                target[key] = value
            else:
                target[key] = fresh = _fresh_values(value)
                owned.add(id(fresh))
        else:
            target[key] = value


def annotate(values, lookup, describe):
    """Values with every non-object leaf replaced by ``[value, *describe(origin)]``."""
    if isinstance(lookup, dict):
        return {key: annotate(values[key], lookup[key], describe) for key in values}
    return [values] + list(describe(lookup))
