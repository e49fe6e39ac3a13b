"""Cluster attributes: generated credentials made once from the release's template, and
the values of the editable tree (each field a ``{"value": ..., "type": ...}`` with metadata).
"""
import copy
import random
import secrets
import string
import uuid

from nailgun_host.settings import settings


def _generate(spec):
    kind = spec["generator"]
    if kind == "password":
        alphabet = string.ascii_letters + string.digits
        return "".join(secrets.choice(alphabet) for _ in range(int(spec.get("length", 24))))
    if kind == "hexstring":
        return secrets.token_hex(int(spec.get("length", 32)) // 2)
    if kind == "uuid4":
        return str(uuid.uuid4())
    if kind == "random_int":
        return random.SystemRandom().randint(1, 2 ** 31 - 1)
    if kind == "from_settings":
        return settings.get(spec["generator_arg"])
    raise ValueError("unknown attribute generator {0!r}".format(kind))


def generate_attributes(template, context):
    """Fill a ``generated`` template: generators run once, ``{settings.X}`` strings expand."""
    if isinstance(template, dict):
        if "generator" in template:
            return _generate(template)
        return {key: generate_attributes(value, context) for key, value in template.items()}
    if isinstance(template, list):
        return [generate_attributes(value, context) for value in template]
    if isinstance(template, str) and "{" in template:
        return _expand(template, context)
    return template


def _expand(text, context):
    for name, value in context.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def attribute_values(editable):
    """{section: {key: value}} of editable attributes (metadata left out)."""
    return {section: {key: field.get("value") for key, field in fields.items()
                      if key != "metadata" and isinstance(field, dict)}
            for section, fields in editable.items() if isinstance(fields, dict)}


def merge_dicts(base, update):
    """A deep merge: dicts merge key by key, anything else is replaced."""
    result = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge_dicts(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
