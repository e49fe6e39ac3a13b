"""Reading an RFC 6902 JSON patch for ``env model edit`` and ``config patch``: JSON or YAML, a file or ``-``.

``MEDIA_TYPE`` is RFC 6902's; an extension may send its own (the environment model's, seed 000's
``application/env-model-json-patch``, is the upgrade's).
"""
import json

import yaml

MEDIA_TYPE = "application/json-patch+json"


class PatchFileError(Exception):
    """The patch cannot be read; ``str()`` names the file (and the line, for YAML)."""


def read_patch(path, stdin):
    """The patch in ``path`` (``-``: ``stdin``), parsed as JSON, else as YAML (a superset of JSON,
    so a JSON syntax error is reported by YAML with its line)."""
    name = "standard input" if path == "-" else "the patch file {0}".format(path)
    try:
        if path == "-":
            text = stdin.read()
        else:
            with open(path) as stream:
                text = stream.read()
        try:
            return json.loads(text)
        except ValueError:
            if path == "-":
                return yaml.safe_load(text)
            with open(path) as stream:  # parsed from the file, so that errors name it
                return yaml.safe_load(stream)
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        raise PatchFileError("Cannot read {0}: {1}".format(name, exc))
