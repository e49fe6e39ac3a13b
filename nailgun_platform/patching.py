"""RFC 6902 JSON patches checked against a per-path policy and applied all or nothing.

One core for every patchable document (the environment model, ConfigDB values and overrides),
so the same bad patch gets the same answer everywhere. ``jsonpatch`` applies; this module says
what a client's mistake is, never a 500:

- more operations than ``PATCH.max_operations`` (checked first), a body that is not a list of
  operations, an unknown ``op``, a pointer that does not parse,
  ``value`` missing on add/replace/test or ``from`` on move/copy: 400 naming the operation
  (so is what no document could take: removing the whole document, moving a value into itself,
  a result deeper than ``json_rules.MAX_DEPTH`` or larger than ``MAX_VALUES``, a patch walking
  more than ``MAX_WALKED`` values);
- an operation the policy does not allow at its path: 403 naming what is allowed there;
- a ``test`` that fails: 409 (compare-and-swap), never quoting a value (it may be a secret); a
  ``test`` of a location that is not there fails too;
- a path (or ``from``) whose target or parent is missing, an index out of range: 404;
- a pointer through a scalar, a non-numeric list index: 409.

Every location is resolved here before ``jsonpatch`` touches it, so messages name paths, never
values (``jsonpatch``'s own quote the document), and ``test`` compares as RFC 6902 4.6 does
(``true`` is not ``1``).

Policy: ``{pattern: operations}``; a pattern is a JSON pointer whose segment ``*`` matches one
segment and ``**`` one or more; the most specific pattern (longest literal prefix) decides. A
``move`` needs ``remove`` at ``from`` and ``add`` at ``path``; a ``copy`` needs ``add`` at ``path``;
``test`` only reads and is always allowed. ``refused_changes`` judges a write by what it changes
instead (whatever route it took), as the section "what a write changes" says.
"""
import copy
import re

import jsonpatch
import jsonpointer

from nailgun_platform import errors, hosting
from nailgun_platform.json_equality import rfc6902_equal
from nailgun_platform.json_rules import MAX_DEPTH, validate_schema

OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")
#: the member each operation needs besides op and path (RFC 6902, section 4)
ARGUMENT = {"add": "value", "replace": "value", "test": "value", "move": "from", "copy": "from"}
#: the shape of a patch body; what each operation needs besides op and path is checked after it
SCHEMA = {
    "type": "array",
    "items": {
        "type": "object", "required": ["op", "path"],
        "properties": {"op": {"enum": list(OPERATIONS)}, "path": {"type": "string"}, "from": {"type": "string"}},
    },
}
#: what a handler reads a patch body as: a list, whose length (``PATCH.max_operations``) and then each
#: operation (``SCHEMA``) ``check_operations`` checks, so that a huge patch is refused before its
#: operations are looked at
BODY = {"type": "array", "description": "RFC 6902 operations, at most PATCH.max_operations of them"}
#: values (objects, lists and scalars) a patched document may hold: a few ``copy`` operations of a
#: document into itself would otherwise double it each time
MAX_VALUES = 1000000
#: values one patch may walk beyond the document's own (moving a value deeper, copying, replacing and
#: removing walk theirs): what bounds its time, which its number of operations alone does not
MAX_WALKED = 2 * MAX_VALUES

_INDEX = re.compile(r"(0|[1-9][0-9]*)\Z")


# -- the patch itself --------------------------------------------------------------------------

def _where(index, operation):
    return {"index": index, "op": operation.get("op"), "path": operation.get("path")}


def _parts(text, member, index, operation):
    try:
        return jsonpointer.JsonPointer(text).parts
    except jsonpointer.JsonPointerException as exc:
        raise errors.InvalidData("Invalid {0} '{1}' (operation {2}): {3}".format(member, text, index, exc),
                                 [_where(index, operation)])


def max_operations():
    """How many operations one patch may hold (``PATCH.max_operations``)."""
    return int(hosting.settings["PATCH"]["max_operations"])


def check_size(patch):
    """400 when ``patch`` holds more operations than ``PATCH.max_operations``: checked before anything
    else, so a huge patch costs neither its checks nor its application under the writer's lock."""
    limit = max_operations()
    if isinstance(patch, list) and len(patch) > limit:
        raise errors.InvalidData("A patch may hold at most {0} operations (PATCH.max_operations); this one holds "
                                 "{1}".format(limit, len(patch)))
    return patch


def check_operations(patch):
    """400 unless ``patch`` is a well-formed RFC 6902 document (see the module) of at most
    ``PATCH.max_operations`` operations."""
    check_size(patch)
    validate_schema(patch, SCHEMA)
    for index, operation in enumerate(patch):
        op, path = operation["op"], operation["path"]
        argument = ARGUMENT.get(op)
        if argument and argument not in operation:
            raise errors.InvalidData("Operation '{0}' on '{1}' needs a '{2}' member (operation {3})".format(
                op, path, argument, index), [_where(index, operation)])
        parts = _parts(path, "path", index, operation)
        if op == "remove" and not parts:
            raise errors.InvalidData("Operation 'remove' on '' would remove the whole document (operation "
                                     "{0})".format(index), [_where(index, operation)])
        if argument == "from":
            source = _parts(operation["from"], "from", index, operation)
            if op == "move" and len(parts) > len(source) and parts[:len(source)] == source:
                raise errors.InvalidData("Operation 'move' from '{0}' to '{1}' would move a value into "
                                         "itself (operation {2})".format(operation["from"], path, index),
                                         [_where(index, operation)])
    return patch


# -- the policy --------------------------------------------------------------------------------

def _pattern(pattern):
    if not isinstance(pattern, str) or (pattern and not pattern.startswith("/")) or re.search("~([^01]|$)", pattern):
        raise errors.InvalidData("Patch policy pattern {0!r} is not a JSON pointer".format(pattern))
    return [part.replace("~1", "/").replace("~0", "~") for part in pattern.split("/")[1:]]


def _match(segments, parts):
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(_match(rest, parts[cut:]) for cut in range(1, len(parts) + 1))
    return bool(parts) and head in ("*", parts[0]) and _match(rest, parts[1:])


def _specificity(segments):
    literal = [segment not in ("*", "**") for segment in segments]
    prefix = literal.index(False) if False in literal else len(literal)
    return prefix, sum(literal), -segments.count("**"), len(segments)


def check_policy_patterns(policy):
    """400 unless ``policy`` maps JSON-pointer patterns to lists of operations (for whoever stores one)."""
    if not isinstance(policy, dict):
        raise errors.InvalidData("A patch policy maps path patterns to lists of operations")
    for pattern, operations in policy.items():
        _pattern(pattern)
        if not isinstance(operations, (list, tuple)) or any(op not in OPERATIONS for op in operations):
            raise errors.InvalidData("The operations of patch policy pattern '{0}' must be a list of {1}".format(
                pattern, ", ".join(OPERATIONS)))
    return policy


def allowed(policy, pointer, default=OPERATIONS):
    """The operations ``policy`` allows at ``pointer`` (``default`` where no pattern matches)."""
    try:
        parts = jsonpointer.JsonPointer(pointer).parts
    except jsonpointer.JsonPointerException as exc:
        raise errors.InvalidData("Invalid path '{0}': {1}".format(pointer, exc))
    decided = _Rules(policy, default).deciding(parts)
    return tuple(default if decided is None else decided)


def _needs(operation):
    """The (operation, path) pairs the policy must allow for ``operation``."""
    op = operation["op"]
    if op == "move":
        return [("remove", operation["from"]), ("add", operation["path"])]
    if op == "copy":
        return [("add", operation["path"])]
    return [] if op == "test" else [(op, operation["path"])]


def check_policy(patch, policy, default=OPERATIONS):
    """403 listing ``{"op", "path", "allowed"}`` for every operation the policy refuses."""
    refused = []
    for operation in patch:
        for op, path in _needs(operation):
            operations = allowed(policy, path, default)
            if op not in operations:
                refused.append({"op": op, "path": path, "allowed": list(operations)})
    if refused:
        first = refused[0]
        raise errors.NotAllowed("Operation '{0}' is not allowed on '{1}'; allowed operations: {2}".format(
            first["op"], first["path"], ", ".join(first["allowed"]) or "none"), refused)


# -- what a write changes ----------------------------------------------------------------------
#
# A write of any kind (a patch, a whole new document, a keys operation, a revert, a session's
# deploy) is judged by its effect, the stored document against the new one, so that no other
# route to the same change escapes the policy:
#
# 1. the diff's own locations (``changes``: where a value appears, disappears, or a leaf or the
#    kind of a value changes; an object or a list that keeps its kind changes only within) are
#    each judged by the deepest location, itself or above it, that a pattern matches: by the
#    operation itself there, or as a ``replace`` of the protected value it changes within; by the
#    default where no pattern matches it or anything above it;
# 2. a location inside a value that appears, disappears or changes kind is judged by the pattern
#    that matches it, if any, for what happens to it: ``add`` if it appears, ``remove`` if it
#    disappears, ``replace`` if it holds another value (``/keystone`` replaced by a value without
#    ``admin_token`` removes ``/keystone/admin_token``).
#
# Whatever a write changes where a pattern protects it is thereby judged by that pattern.

MAX_REFUSED = 100
_ABSENT = object()


class _Rules:
    """A policy's patterns, read once for a whole judgement."""

    def __init__(self, policy, default):
        self.patterns = [(_pattern(pattern), tuple(operations)) for pattern, operations in policy.items()]
        self.default = tuple(default)

    def deciding(self, parts):
        """The operations of the most specific pattern matching ``parts``, None when none does."""
        best, result = None, None
        for segments, operations in self.patterns:
            if _match(segments, parts) and (best is None or _specificity(segments) > best):
                best, result = _specificity(segments), operations
        return result

    def reaches_below(self, parts):
        """Whether a pattern may match a location strictly below ``parts``."""
        return any(_extends(segments, parts) for segments, _ in self.patterns)


def _extends(segments, parts):
    if not parts:
        return bool(segments)
    if not segments:
        return False
    if segments[0] == "**":
        return True
    return segments[0] in ("*", parts[0]) and _extends(segments[1:], parts[1:])


def _same(first, second):
    """JSON equality (``json_equality.rfc6902_equal``), Python's ``==`` in C answering first when it says they
    differ."""
    return first == second and rfc6902_equal(first, second)


def _children(value):
    if isinstance(value, dict):
        return value.items()
    if isinstance(value, list):
        return ((str(index), item) for index, item in enumerate(value))
    return ()


def _member(value, token):
    if isinstance(value, dict):
        return value.get(token, _ABSENT)
    if isinstance(value, list) and _INDEX.match(token) and int(token) < len(value):
        return value[int(token)]
    return _ABSENT


def _fate(before, after):
    """What happens at a location holding ``before`` and then ``after`` (either ``_ABSENT``)."""
    if before is _ABSENT:
        return None if after is _ABSENT else "add"
    if after is _ABSENT:
        return "remove"
    return None if _same(before, after) else "replace"


def changes(before, after):
    """``(operation, parts)`` of the locations where ``after`` differs from ``before``, as deep as both
    hold an object (or a list) there: a value added, removed, or replaced by another (a leaf, or a value
    of another kind). Lists are compared position by position."""
    found, stack = [], [(before, after, ())]
    while stack:
        old, new, where = stack.pop()
        kinds = type(old), type(new)
        if kinds in ((dict, dict), (list, list)):
            tokens = list(old) + [key for key in new if key not in old] if kinds[0] is dict else [
                str(index) for index in range(max(len(old), len(new)))]
            for token in reversed(tokens):
                first, second = _member(old, token), _member(new, token)
                if first is _ABSENT or second is _ABSENT or not _same(first, second):
                    stack.append((first, second, where + (token,)))
            continue
        operation = _fate(old, new)
        if operation is not None:
            found.append((operation, where))
    return found


def _inside(before, after, parts, rules, judge):
    """Rule 2 for the locations strictly inside ``parts``, walked only where a pattern may match."""
    stack = [(before, after, parts)]
    while stack:
        old, new, where = stack.pop()
        if not rules.reaches_below(where):
            continue
        tokens = dict.fromkeys([token for token, _ in _children(old)] + [token for token, _ in _children(new)])
        for token in tokens:
            first, second, inner = _member(old, token), _member(new, token), where + (token,)
            operations = rules.deciding(inner)
            operation = _fate(first, second)
            if operations is not None and operation is not None:
                judge(operation, inner, operations)
            stack.append((first, second, inner))


def refused_changes(before, after, policy, default=OPERATIONS):
    """``[{"op", "path", "allowed"}]`` of what the write ``before`` -> ``after`` changes where ``policy`` does
    not allow it (see above); at most MAX_REFUSED."""
    rules = _Rules(policy, default)
    if not rules.patterns and {"add", "remove", "replace"} <= set(rules.default):
        return []
    refused = {}

    def judge(operation, parts, operations):
        if operation not in operations and len(refused) < MAX_REFUSED:
            path = _pointer(list(parts))
            refused.setdefault((operation, path), {"op": operation, "path": path, "allowed": list(operations)})

    for operation, parts in changes(before, after):
        for depth in range(len(parts), -1, -1):
            operations = rules.deciding(parts[:depth])
            if operations is not None:
                judge(operation if depth == len(parts) else "replace", parts[:depth], operations)
                break
        else:
            judge(operation, parts, rules.default)
        _inside(_locate_or_absent(before, parts), _locate_or_absent(after, parts), parts, rules, judge)
    return list(refused.values())


def _locate_or_absent(document, parts):
    for token in parts:
        document = _member(document, token)
        if document is _ABSENT:
            break
    return document


# -- applying ----------------------------------------------------------------------------------

class _Refused(Exception):
    """Where and why a location cannot be used; ``apply`` turns it into the operation's error."""

    def __init__(self, error, reason):
        super().__init__(reason)
        self.error, self.reason = error, reason


def _pointer(parts):
    return jsonpointer.JsonPointer.from_parts(parts).path


def _child(node, parts, depth, exists):
    """``node``'s member named by ``parts[depth]``; with ``exists`` it must be there, else (an
    ``add``) it may be a new member or the end of a list, and None is answered."""
    token, where = parts[depth], _pointer(parts[:depth + 1])
    if isinstance(node, dict):
        if token in node:
            return node[token]
        if exists:
            raise _Refused(errors.ObjectNotFound, "'{0}' does not exist".format(where))
        return None
    if isinstance(node, list):
        if token == "-":
            if not exists:
                return None
            raise _Refused(errors.ObjectNotFound, "'{0}' names the end of a list, where nothing is".format(where))
        if _INDEX.match(token) is None:
            raise _Refused(errors.Conflict, "'{0}' is not a list index (at '{1}')".format(
                token, _pointer(parts[:depth])))
        index = int(token)
        if index < len(node):
            return node[index]
        if index == len(node) and not exists:
            return None
        raise _Refused(errors.ObjectNotFound, "'{0}' is past the end of a list of {1}".format(where, len(node)))
    raise _Refused(errors.Conflict, "'{0}' is neither an object nor a list".format(_pointer(parts[:depth])))


def _locate(document, parts, exists=True):
    """The value at ``parts`` (must be there with ``exists``; an ``add`` needs only its parent)."""
    node = document
    for depth in range(len(parts)):
        node = _child(node, parts, depth, exists or depth < len(parts) - 1)
    return node


def _measure(value):
    """(values, depth) of a JSON value, without recursion."""
    count, deepest, stack = 0, 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        count, deepest = count + 1, max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((item, depth + 1) for item in node.values())
        elif isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)
    return count, deepest


class _Size:
    """How many values the document holds so far, and how many the patch has walked (measured, copied)
    beyond the document's own: an insertion past a limit, or a patch walking more than MAX_WALKED values
    (moving, copying, replacing or removing a large value again and again), is a 400."""

    def __init__(self, document):
        self.values = _measure(document)[0]
        self.walked = 0

    def _measure(self, value):
        values, depth = _measure(value)
        self.walked += values
        if self.walked > MAX_WALKED:
            raise _Refused(errors.InvalidData, "the patch would move, copy, replace or remove more than {0} "
                                               "values in all".format(MAX_WALKED))
        return values, depth

    def insert(self, parts, value, moved=False):
        values, depth = self._measure(value)
        if not moved:
            self.values += values
        if len(parts) + depth - 1 > MAX_DEPTH:
            raise _Refused(errors.InvalidData, "the result would nest deeper than {0} levels".format(MAX_DEPTH))
        if self.values > MAX_VALUES:
            raise _Refused(errors.InvalidData, "the result would hold more than {0} values".format(MAX_VALUES))

    def remove(self, value):
        self.values -= self._measure(value)[0]


def _run(document, operation):
    return jsonpatch.JsonPatch([operation]).apply(document, in_place=True)


def _place(document, parts, value):
    """``document`` with ``value`` itself (not a copy: a moved value) added at ``parts``, resolved already."""
    if not parts:
        return value
    parent, token = _locate(document, parts[:-1]), parts[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif token == "-":
        parent.append(value)
    else:
        parent.insert(int(token), value)
    return document


def _apply_one(document, operation, size):
    op, parts = operation["op"], jsonpointer.JsonPointer(operation["path"]).parts
    if op == "test":
        try:
            equal = rfc6902_equal(_locate(document, parts), operation["value"])
        except _Refused:
            equal = False
        if not equal:
            raise _Refused(errors.Conflict, None)
        return document
    if op in ("move", "copy"):
        source = jsonpointer.JsonPointer(operation["from"]).parts
        value = _locate(document, source)
        if op == "move":
            if source == parts:
                return document
            document = _run(document, {"op": "remove", "path": operation["from"]})
            _locate(document, parts, exists=False)
            if len(parts) > len(source):  # only deeper can it nest too deep: it held no deeper before
                size.insert(parts, value, moved=True)
            return _place(document, parts, value)
        _locate(document, parts, exists=False)
        size.insert(parts, value)
        return _run(document, {"op": "add", "path": operation["path"], "value": value})
    if op == "add":
        _locate(document, parts, exists=False)
        parent = _locate(document, parts[:-1]) if parts else {None: document}
        key = parts[-1] if parts else None
        if isinstance(parent, dict) and key in parent:
            size.remove(parent[key])
    else:
        size.remove(_locate(document, parts))
    if op != "remove":
        size.insert(parts, operation["value"])
    return _run(document, operation)


def apply(document, patch, checked=False):
    """The patched copy of ``document`` (never changed in place), errors mapped as the module says;
    ``checked``: ``check_operations`` passed it already."""
    if not checked:
        check_operations(patch)
    result, size = copy.deepcopy(document), _Size(document)
    for index, operation in enumerate(patch):
        try:
            result = _apply_one(result, copy.deepcopy(operation), size)
        except _Refused as refused:
            if refused.reason is None:
                raise errors.Conflict("A test operation of the patch failed at '{0}' (operation {1})".format(
                    operation["path"], index), [_where(index, operation)])
            raise refused.error("The patch cannot apply operation {0} ('{1}' on '{2}'): {3}".format(
                index, operation["op"], operation["path"], refused.reason), [_where(index, operation)])
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            # every location was resolved above: a refusal here is a case this module missed
            raise errors.Conflict("The patch cannot apply operation {0} ('{1}' on '{2}'): unexpected {3}".format(
                index, operation["op"], operation["path"], type(exc).__name__), [_where(index, operation)])
    return result
