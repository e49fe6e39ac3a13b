"""Comparing JSON values as JSON: types included.

Python says ``1 == True == 1.0`` and ``{"a": 0} == {"a": False}``, so comparing decoded
documents with ``==`` would drop a write that only changes a value's JSON type, miss it
in ``changed_keys`` and treat ``{"$unset": 1}`` as the removal marker. Every ConfigDB
comparison of stored values goes through ``json_equal`` instead.
"""
import jsonpointer


def json_equal(a, b):
    """True when ``a`` and ``b`` are the same JSON: same types (boolean, integer, number,
    string, null, array, object) and same values, objects compared regardless of key order.

    Numbers of one type compare by value (``0.0`` equals ``-0.0``, as PostgreSQL stores them).
    Python's ``==`` (in C) answers first: it is JSON's equality but for types, so a difference
    ends there; only equal values are then walked, without recursion, to compare their types.
    """
    try:
        if a != b:
            return False
        values_equal = True
    except RecursionError:  # deeper than C's recursion allows: the walk compares the values too
        values_equal = False
    lefts, rights = [a], [b]  # two stacks rather than one of pairs: no object per value
    while lefts:
        x, y = lefts.pop(), rights.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if len(x) != len(y) or x.keys() != y.keys():
                return False
            for key, item in x.items():
                other = y[key]
                kind = type(item)
                if kind is not type(other):
                    return False
                if kind is dict or kind is list or isinstance(item, (dict, list)):
                    lefts.append(item)
                    rights.append(other)
                elif not values_equal and item != other:
                    return False
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            lefts.extend(x)
            rights.extend(y)
        elif not values_equal and x != y:
            return False
    return True


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
                elif not json_equal(x[key], y[key]):
                    stack.append((x[key], y[key], where))
            patch.extend({"op": "add", "path": path + "/" + jsonpointer.escape(key), "value": y[key]}
                         for key in y if key not in x)
        elif isinstance(x, list) and isinstance(y, list):
            common = min(len(x), len(y))
            changed = [(x[i], y[i], "{0}/{1}".format(path, i)) for i in range(common) if not json_equal(x[i], y[i])]
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
    ``value`` itself when it holds no such number (the usual case: a large document is not copied).
    """
    if not _holds_exponent_integer(value):
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
