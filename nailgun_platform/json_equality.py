"""JSON equality, two ways, side by side: Python's ``==`` says ``1 == True == 1.0``, JSON does not.

- ``rfc6902_equal``: what a JSON patch's ``test`` operation compares (RFC 6902 4.6): numbers by
  value whatever their type (``1`` equals ``1.0``), literals only with themselves (``true`` is not ``1``).
- ``type_strict_equal``: what ConfigDB compares stored values with: the JSON type must match too
  (``1`` is not ``1.0``), so a write that only changes a value's type is a change. Comparing decoded
  documents with ``==`` would drop such a write, miss it in ``changed_keys`` and treat
  ``{"$unset": 1}`` as the removal marker.
"""
import json


def rfc6902_equal(first, second):
    """RFC 6902 4.6: numbers by value, literals only with themselves (Python's ``True == 1``)."""
    if isinstance(first, bool) or isinstance(second, bool) or first is None or second is None:
        return type(first) is type(second) and first == second
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(rfc6902_equal(first[k], second[k]) for k in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(rfc6902_equal(a, b) for a, b in zip(first, second))
    numbers = (int, float)
    if isinstance(first, numbers) and isinstance(second, numbers):
        return first == second
    return type(first) is type(second) and first == second


def type_strict_equal(a, b):
    """True when ``a`` and ``b`` are the same JSON: same types (boolean, integer, number,
    string, null, array, object) and same values, objects compared regardless of key order.

    Numbers of one type compare by value (``0.0`` equals ``-0.0``, as PostgreSQL stores them).
    Python's ``==`` (in C) answers first: it is JSON's equality but for types, so a difference
    ends there; equal values are then written as JSON (in C too), which writes ``1``, ``1.0`` and
    ``true`` apart: the same text is the same types. Only values whose texts differ anyway (``-0.0``,
    keys in another order) are walked, without recursion, to compare their types.
    """
    try:
        if a != b:
            return False
        values_equal = True
        if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
            return True
    except RecursionError:  # deeper than C's recursion allows: the walk compares the values too
        values_equal = False
    except (TypeError, ValueError):  # not JSON's own values (keys of several types, NaN): the walk decides
        pass
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
