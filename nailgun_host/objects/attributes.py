"""Cluster attributes: generated credentials made once from the release's template, and
the values of the editable tree (each field a ``{"value": ..., "type": ...}`` with metadata).
"""
import copy
import random
import secrets
import string
import uuid

from nailgun_host import errors
from nailgun_host.settings import settings
from nailgun_platform import secrets as host_secrets
from nailgun_platform.secrets import classify, pointers

#: the generators a release's ``generated`` template may name
GENERATORS = ("password", "hexstring", "uuid4", "random_int", "from_settings")
#: the only settings ``from_settings`` reads: what Fuel's releases used it for, nothing secret
SETTINGS_FOR_RELEASES = ("MASTER_IP", "DNS_DOMAIN")
#: the largest ``length`` of a password or hexstring: credentials, not bulk data
MAX_GENERATED_LENGTH = 4096
#: characters all generators of one template make together, so creating a cluster stays cheap
MAX_GENERATED_TOTAL = 64 * 1024
_DEFAULT_LENGTHS = {"password": 24, "hexstring": 32, "uuid4": 36, "random_int": 10, "from_settings": 0}


def _generate(spec):
    kind = spec.get("generator")
    length = spec.get("length", _DEFAULT_LENGTHS.get(kind))
    if kind in ("password", "hexstring") and not (
            type(length) is int and 1 <= length <= MAX_GENERATED_LENGTH):
        raise errors.InvalidData("Generator length must be an integer from 1 to {0}, not {1!r}".format(
            MAX_GENERATED_LENGTH, length))
    if kind == "password":
        return _password(length)
    if kind == "hexstring":
        return secrets.token_hex((length + 1) // 2)[:length]
    if kind == "uuid4":
        return str(uuid.uuid4())
    if kind == "random_int":
        return random.SystemRandom().randint(1, 2 ** 31 - 1)
    if kind == "from_settings" and spec.get("generator_arg") in SETTINGS_FOR_RELEASES:
        return settings.get(spec["generator_arg"])
    raise errors.InvalidData("The release's generated attributes name an unknown generator ({0!r}) "
                             "or a setting it may not read".format(kind))


_ALPHABET = string.ascii_letters + string.digits
#: random bytes below 248 (4 x 62) map evenly onto the alphabet; the others are dropped
_TO_ALPHABET = bytes(ord(_ALPHABET[b % len(_ALPHABET)]) for b in range(256))
_UNEVEN = bytes(range(4 * len(_ALPHABET), 256))


def _password(length):
    """``length`` uniformly random letters and digits, made in bulk: secrets.choice per
    character took half a second for a template's largest total."""
    result = b""
    while len(result) < length:
        result += secrets.token_bytes(length - len(result) + 16).translate(_TO_ALPHABET, _UNEVEN)
    return result[:length].decode("ascii")


def generators(template):
    """Every generator spec of a ``generated`` template (a dict with a ``generator`` key)."""
    stack = [template]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "generator" in value:
                yield value
            else:
                stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def check_generated(template):
    """What the schema cannot say of a ``generated`` template: from_settings names its setting,
    and all the values together stay small."""
    for spec in generators(template):
        if spec["generator"] == "from_settings" and "generator_arg" not in spec:
            raise errors.InvalidData("The from_settings generator needs a generator_arg, one of {0}".format(
                ", ".join(SETTINGS_FOR_RELEASES)))
    total = sum(spec.get("length", _DEFAULT_LENGTHS.get(spec.get("generator"), 0))
                for spec in generators(template))
    if total > MAX_GENERATED_TOTAL:
        raise errors.InvalidData(
            "The generated attributes would take {0} characters; at most {1} are allowed".format(
                total, MAX_GENERATED_TOTAL))


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


def value_secrets(editable):
    """The secret pointers of ``attribute_values(editable)``: a field's ``/section/key/value/...``
    there is ``/section/key/...``."""
    found = set()
    for pointer in host_secrets.attribute_secrets(editable):
        parts = pointers.tokens(pointer)
        if len(parts) >= 3 and parts[2] == "value":
            found.add("".join("/" + pointers.escape(part) for part in parts[:2] + parts[3:]))
    return found


def declassified(before, after):
    """The secret values of the editable tree ``before`` that ``after`` would hold as plain ones
    (``classify.declassified``): a write to ``after`` needs the right to change what is secret."""
    return classify.declassified(before, after, host_secrets.attribute_secrets)


def merge_dicts(base, update):
    """A deep merge: dicts merge key by key, anything else is replaced."""
    result = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge_dicts(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
