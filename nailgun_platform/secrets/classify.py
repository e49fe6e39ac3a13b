"""Which leaves of a document are secret: decided here, and nowhere else.

The answer is a set of JSON pointers (RFC 6901) to leaves (see ``pointers``). It depends on
the document's keys and the schema, never on the values, so a masked document a client sends
back is classified exactly like the stored one it was read from.

- By name (``by_name``): every leaf under a key whose name matches one of the name patterns,
  so that a document uploaded without a schema (an astute.yaml) is covered.
- By schema (``by_schema``): every leaf under a schema node marked ``"format": "password"`` or
  ``"x-secret": true`` (at any depth, through ``properties``, ``patternProperties``, ``additionalProperties``,
  ``items``, ``not``, ``dependencies``, ``additionalItems``, ``allOf``/``anyOf``/``oneOf`` and ``$ref`` inside
  the schema).
  An extension composes the two into its own classifier (ConfigDB's: ``nailgun_ext_configdb.objects.secrets``).
- Nailgun attributes (``attribute_pointers``): the ``value`` of every field of type
  ``password``, or whose key matches a name pattern. Only the value: a field's label, type
  and restrictions stay readable, so a UI can still draw the form.
- A cluster's generated attributes (``every_leaf``): all of them.

``declassified`` compares two versions of a document under one classifier: the secrets a
write would turn into plain values (a password field's type changed), which only an identity
allowed to change what is secret may do.

When in doubt the answer is "secret": a ``$ref`` that does not resolve inside the schema, or a
pattern RE2 cannot run, marks what it might have covered.
"""
import fnmatch
import functools
import re

import re2
import referencing
import referencing.exceptions
from referencing.jsonschema import DRAFT4

from nailgun_platform import user_schemas
from nailgun_platform.secrets import pointers
from nailgun_platform.secrets.pointers import child, leaves

#: shell-style patterns matched against a whole key, case-insensitively. ``token`` only as a
#: word of its own, so that Keystone's ``token/expiration`` or ``service_token_off`` stay
#: readable; ``connection`` and ``transport_url`` carry passwords inside URLs in oslo configs.
DEFAULT_PATTERNS = (
    "*password*", "*passwd*", "*passphrase*", "pass", "*[_./-]pass", "pwd", "*[_./-]pwd", "pw", "*[_./-]pw",
    "*secret*", "*credential_key*",
    "token", "*[_./-]token", "*[_./-]tokens",
    "*private_key*", "*privkey*", "*encryption_key*", "fixed_key", "*api_key*", "*access_key*", "*tempurl_key*",
    "*fernet_key*", "admin_key", "mon_key", "*osd_key", "radosgw_key",
    "cert_data", "erlang_cookie", "connection", "*[_/]connection", "*transport_url",
)
#: schema keywords whose subschemas apply to the very instance their schema applies to (a marker under
#: ``not`` counts too: when in doubt, secret)
_IN_PLACE = ("allOf", "anyOf", "oneOf")


@functools.lru_cache(maxsize=64)
def name_matcher(patterns):
    """A predicate on key names for a tuple of shell-style patterns (an empty tuple matches nothing)."""
    if not all(isinstance(pattern, str) and pattern for pattern in patterns):
        raise ValueError("secret name patterns must be non-empty strings, not {0!r}".format(patterns))
    return _NameMatcher(patterns)


class _NameMatcher:
    """Whether a key name matches the patterns, each string's answer remembered: documents repeat their
    key names, and a large one has tens of thousands of keys. ``plain`` holds the names known to match
    none, so a whole object can be passed over with one set operation."""

    #: names remembered at most, per set (then forgotten all at once)
    REMEMBERED = 65536

    def __init__(self, patterns):
        self._regex = re.compile("|".join(fnmatch.translate(pattern.lower()) for pattern in patterns)) \
            if patterns else None
        self.plain, self._secret = set(), set()

    def __call__(self, name):
        if type(name) is not str:
            return self._matches(name)
        if name in self.plain:
            return False
        if name in self._secret:
            return True
        matched = self._matches(name)
        known = self._secret if matched else self.plain
        if len(known) >= self.REMEMBERED:
            known.clear()
        known.add(name)
        return matched

    def _matches(self, name):
        return self._regex is not None and self._regex.match(str(name).lower()) is not None


def by_name(document, patterns=DEFAULT_PATTERNS):
    """Every leaf under a key that matches one of ``patterns``.

    Every write and every masked read classifies its whole document, so this walks containers only
    (a leaf's pointer is made when it is secret) and passes over an object whose key names are all
    known to be plain without looking at them one by one.
    """
    matches = name_matcher(tuple(patterns))
    plain = matches.plain
    found = set()
    containers, where = [document], [""]  # two stacks rather than one of pairs: no object per container
    while containers:
        value, pointer = containers.pop(), where.pop()
        if isinstance(value, dict):
            known_plain = plain.issuperset(value)
            for key, item in value.items():
                if not known_plain and matches(key):
                    found.update(leaves(item, child(pointer, key)))
                elif item and isinstance(item, (dict, list)):
                    containers.append(item)
                    where.append(child(pointer, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if item and isinstance(item, (dict, list)):
                    containers.append(item)
                    where.append(child(pointer, index))
    return found


def by_schema(document, schema):
    """Every leaf under a node of ``schema`` (draft 4) marked ``format: password`` or ``x-secret: true``."""
    resource = DRAFT4.create_resource(schema)
    try:
        resolver = user_schemas.REGISTRY.resolver_with_root(resource)
    except (AttributeError, TypeError):  # an "id" that is no URI: resolve against no base
        resolver = user_schemas.REGISTRY.with_resource("", resource).resolver()
    return set(_walk(document, "", [(schema, resolver)]))


def _walk(value, pointer, nodes):
    nodes = _applicable(nodes)
    if nodes == []:
        return  # no schema describes this value: nothing under it is marked
    if nodes is None or any(_marked(schema) for schema, _ in nodes):
        yield from leaves(value, pointer)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, child(pointer, key), [sub for node in nodes for sub in _property(node, key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, child(pointer, index), [sub for node in nodes for sub in _item(node, index)])


def _marked(schema):
    return schema.get("format") == "password" or schema.get("x-secret") is True


def _applicable(nodes):
    """Every schema node that applies to one instance, through ``$ref`` and allOf/anyOf/oneOf
    (any branch counts: a secret in one alternative is a secret); None when a ``$ref`` does not
    resolve. Each node is visited once, so reference cycles end."""
    result, seen, stack = [], set(), list(nodes)
    while stack:
        schema, resolver = stack.pop()
        if not isinstance(schema, dict) or id(schema) in seen:
            continue
        seen.add(id(schema))
        try:
            resolver = resolver.in_subresource(DRAFT4.create_resource(schema))
        except (AttributeError, TypeError):
            pass  # an "id" that is no URI changes no base
        result.append((schema, resolver))
        if isinstance(schema.get("$ref"), str):
            try:
                resolved = resolver.lookup(schema["$ref"])
            except (referencing.exceptions.Unresolvable, LookupError, ValueError, AttributeError, TypeError):
                return None
            stack.append((resolved.contents, resolved.resolver))
        for keyword in _IN_PLACE:
            if isinstance(schema.get(keyword), list):
                stack.extend((sub, resolver) for sub in schema[keyword])
        if isinstance(schema.get("not"), dict):
            stack.append((schema["not"], resolver))
        if isinstance(schema.get("dependencies"), dict):  # schema dependencies apply to the whole object
            stack.extend((sub, resolver) for sub in schema["dependencies"].values() if isinstance(sub, dict))
    return result


def _property(node, key):
    schema, resolver = node
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    patterns = schema.get("patternProperties") if isinstance(schema.get("patternProperties"), dict) else {}
    covered = key in properties
    if covered:
        yield properties[key], resolver
    for pattern, sub in patterns.items():
        match = _search(pattern, str(key))
        if match is not False:
            yield sub, resolver
        covered = covered or match is True
    if not covered and isinstance(schema.get("additionalProperties"), dict):
        yield schema["additionalProperties"], resolver


def _item(node, index):
    schema, resolver = node
    items = schema.get("items")
    if isinstance(items, dict):
        yield items, resolver
    elif isinstance(items, list) and index < len(items):
        yield items[index], resolver
    elif isinstance(schema.get("additionalItems"), dict):
        # also without ``items``, where validation ignores it: a marker is never ignored here
        yield schema["additionalItems"], resolver


def _compiled(pattern):
    try:
        return user_schemas.compiled_pattern(pattern)
    except re2.error:
        return None


def _search(pattern, key):
    """True or False as RE2 matches ``key``; None (taken as a match) when RE2 cannot run the pattern."""
    compiled = _compiled(pattern)
    return None if compiled is None else compiled.search(key) is not None


def attribute_pointers(attributes, patterns=DEFAULT_PATTERNS):
    """The ``value`` of every Nailgun attribute field (a dict with ``type`` and ``value``) of type
    ``password`` or whose key matches ``patterns``, at any depth (plugins nest theirs)."""
    matches = name_matcher(tuple(patterns))

    def walk(value, pointer, key):
        if isinstance(value, dict):
            if "value" in value and "type" in value:
                if value["type"] == "password" or matches(key):
                    yield from leaves(value["value"], child(pointer, "value"))
                return  # a field's value is data, not more fields
            for name, item in value.items():
                yield from walk(item, child(pointer, name), name)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, child(pointer, index), None)
    return set(walk(attributes, "", None))


def declassified(before, after, classifier):
    """The secret leaves of ``before`` whose place ``after`` still holds but no longer calls secret.

    A write from ``before`` to ``after`` would turn these into plain values anyone may read,
    without the writer ever seeing them: a password field whose ``type`` a PATCH changes keeps
    its stored value, now in clear. ``classifier`` is the one that applies to both documents
    (e.g. ``nailgun_platform.secrets.attribute_secrets``). What ``after`` holds at such a place is
    still secret if every leaf there is (a value that became an object of secrets).
    """
    secret = classifier(after)
    found = set()
    for pointer in classifier(before) - secret:
        value = pointers.get(after, pointer, _ABSENT)
        if value is not _ABSENT and not set(leaves(value, pointer)) <= secret:
            found.add(pointer)
    return found


_ABSENT = object()


def every_leaf(document):
    """All leaves: a cluster's generated attributes are credentials (or next to them) throughout."""
    return set(leaves(document))
