"""The two rules every JSON input meets, on the host's routes and in the platform alike: how deep
it may nest, and how a schema's refusal reads (``nailgun_host.validation`` builds the rest on them).
"""
import jsonschema

from nailgun_platform import errors

#: how deeply objects and lists may nest in a body or a stored document: deeper ones
#: would exhaust the recursion of merging, diffing, patching and JSON encoding
MAX_DEPTH = 100


def validate_schema(data, schema, validator=None):
    """jsonschema (draft 4) validation; the best-matching error becomes a 400 with a readable message.

    ``validator``, built from ``schema``, replaces the default one (ConfigDB's user schemas need their own).
    """
    validator = validator or jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        message = error.message if not where else "{0} (at '{1}')".format(error.message, where)
        raise errors.InvalidData(message)
    return data
