"""Reading typed values and documents from the command line, and printing results."""
import json

import yaml

from nailgun_ext_configdb.cli.paths import ConfigDBError

TYPES = ("null", "int", "str", "json", "yaml", "bool")
BOOLEANS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def parse_typed(text, value_type):
    """A ``--value`` (or stdin) string as ``--type`` says; no type: JSON if it parses, else a string."""
    try:
        if value_type == "int":
            return int(text)
        if value_type == "str":
            return text
        if value_type == "bool":
            return BOOLEANS[text.strip().lower()]
        if value_type == "json":
            return json.loads(text)
        if value_type == "yaml":
            return yaml.safe_load(text)
    except (ValueError, KeyError, yaml.YAMLError) as exc:
        raise ConfigDBError("Cannot read {0!r} as {1}: {2}".format(text, value_type, exc))
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_document(stream, data_format):
    """One JSON or YAML document from stdin."""
    text = stream.read()
    try:
        return json.loads(text) if data_format == "json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigDBError("Cannot read the {0} on stdin: {1}".format(data_format, exc))


def render(data, output_format):
    """``plain`` prints a string bare and anything else as JSON."""
    if output_format == "yaml":
        return yaml.safe_dump(data, default_flow_style=False, sort_keys=True).rstrip("\n")
    if output_format == "plain" and isinstance(data, str):
        return data
    return json.dumps(data, indent=None if output_format == "plain" else 2, sort_keys=True)


def cell(value):
    """A table cell: a list as comma-separated text."""
    return ", ".join(map(str, value)) if isinstance(value, list) else value
