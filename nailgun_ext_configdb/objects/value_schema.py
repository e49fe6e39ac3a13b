"""The JSON schema (draft 4) a resource definition may give its values, checked when it is written.

A definition's schema is user input that runs on every values PUT, so it must not be
able to make the server fetch, loop or backtrack:

- references stay inside the schema: the registry's ``retrieve`` refuses every URI, so
  no ``$ref`` reaches the network or a file, and every ``$ref`` must resolve when the
  definition is written (the draft-4 meta-schema itself is known without retrieval);
- no reference cycles (``{"$ref": "#"}``, ``allOf: [{"$ref": "#"}]``, recursion through
  ``properties``): a cycle that does not descend into the data loops forever, and one that
  does costs exponential time on nested data; at most MAX_SCHEMA_NODES schema nodes once
  references are expanded and MAX_SCHEMA_DEPTH levels, so validation is bounded by
  schema size times data size;
- ``pattern`` and ``patternProperties`` are matched by RE2 (google-re2), whose matching
  time is linear in the input: ``^(a+)+$`` cannot backtrack. Patterns RE2 cannot run
  (backreferences, lookaround) are refused.
"""

import jsonschema
import re2
import referencing
import referencing.exceptions
from referencing.jsonschema import DRAFT4

from nailgun_host.public import errors
from nailgun_platform.public import masking, pointers, user_schemas


def schema_of(content):
    """The values schema of a resource definition's ``content`` (its ``schema`` key), or None."""
    return content.get("schema") if isinstance(content, dict) else None


#: schema nodes once every ``$ref`` is expanded: bounds the work per validated value
MAX_SCHEMA_NODES = 10000
#: nesting of schema nodes through subschemas and references (jsonschema recurses on it)
MAX_SCHEMA_DEPTH = 100


def _search(pattern, text):
    return user_schemas.compiled_pattern(pattern).search(text) is not None


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield jsonschema.ValidationError("{0!r} does not match {1!r}".format(instance, pattern))


def _pattern_properties(validator, patterns, instance, schema):
    if validator.is_type(instance, "object"):
        for pattern, subschema in patterns.items():
            for key, value in instance.items():
                if _search(pattern, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, allowed, instance, schema):
    """jsonschema's own keyword, given only the keys no property or pattern (matched by RE2) covers."""
    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = {key: value for key, value in instance.items()
              if key not in properties and not any(_search(p, key) for p in patterns)}
    yield from jsonschema.Draft4Validator.VALIDATORS["additionalProperties"](
        validator, allowed, extras, {k: v for k, v in schema.items() if k != "patternProperties"})


ValueValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {
    "pattern": _pattern, "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties})


def _refuse(message):
    raise errors.InvalidData("content.schema {0}".format(message))


def _check_patterns(contents):
    patterns = list(contents.get("patternProperties", {}))
    if isinstance(contents.get("pattern"), str):
        patterns.append(contents["pattern"])
    for pattern in patterns:
        try:
            user_schemas.compiled_pattern(pattern)
        except re2.error as exc:
            _refuse("has a pattern RE2 cannot run ({0}): {1!r}".format(
                exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc,
                pattern))


def check(schema):
    """``schema`` when it is a draft-4 schema that validation can use safely (see above); 400 otherwise."""
    try:
        jsonschema.Draft4Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        _refuse("is not a valid JSON schema: {0}".format(exc.message))
    root = DRAFT4.create_resource(schema)
    resolver = user_schemas.REGISTRY.resolver_with_root(root)
    # iterative depth-first walk; a node is left (its id popped from the path) once its children are done
    nodes, on_path = 0, set()
    stack = [(schema, resolver, 0, False)]
    while stack:
        contents, resolver, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(contents))
            continue
        if not isinstance(contents, dict):
            continue
        if id(contents) in on_path:
            _refuse("has a reference cycle: a $ref leads back to a schema that contains it")
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            _refuse("is too large once its references are expanded (more than {0} schemas)".format(
                MAX_SCHEMA_NODES))
        if depth > MAX_SCHEMA_DEPTH:
            _refuse("nests deeper than {0} levels once its references are expanded".format(MAX_SCHEMA_DEPTH))
        _check_patterns(contents)
        on_path.add(id(contents))
        stack.append((contents, resolver, depth, True))
        resource = DRAFT4.create_resource(contents)
        resolver = resolver.in_subresource(resource)
        if isinstance(contents.get("$ref"), str):
            try:
                resolved = resolver.lookup(contents["$ref"])
            except referencing.exceptions.Unresolvable as exc:
                _refuse("has a $ref that does not resolve inside the schema: {0!r} ({1}; references "
                        "to URLs or files are never followed)".format(contents["$ref"], type(exc).__name__))
            stack.append((resolved.contents, resolved.resolver, depth + 1, False))
            continue  # in draft 4, $ref replaces its siblings
        for sub in resource.subresources():
            stack.append((sub.contents, resolver, depth + 1, False))
    return schema


def validate(data, schema, secret_of=set):
    """400 when ``data`` does not follow ``schema`` (checked by ``check``): RE2 patterns, no retrieval.

    jsonschema's messages quote the instance (``'hunter2' is not of type 'integer'``): where it
    holds one of the secret leaves (JSON pointers ``secret_of()`` names), the message quotes it masked.
    """
    validator = ValueValidator(schema, registry=user_schemas.REGISTRY, format_checker=jsonschema.FormatChecker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return data
    where = "/".join(str(p) for p in error.absolute_path)
    message = _scrubbed(error, secret_of())
    raise errors.InvalidData(message if not where else "{0} (at '{1}')".format(message, where))


def _scrubbed(error, secret):
    """``error.message`` without the value of any secret leaf of its instance."""
    pointer = "".join("/" + pointers.escape(p) for p in error.absolute_path)
    inside = {s[len(pointer):] for s in secret if s == pointer or s.startswith(pointer + "/")}
    if any(pointer.startswith(s + "/") for s in secret):
        inside = {""}  # the instance lies inside a secret
    if not inside:
        return error.message
    message = error.message.replace(repr(error.instance), repr(masking.mask(error.instance, inside)))
    leaked = [pointers.get(error.instance, s) for s in inside]
    if any(repr(value) in message for value in leaked if value != masking.MASK):
        # quoted some other way: say which rule failed, never with what
        return "a secret value does not follow the schema (its {0!r} rule)".format(error.validator)
    return message
