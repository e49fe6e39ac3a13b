"""Reading typed values and documents from the command line, and printing results."""
import json

import yaml

from nailgun_platform.client import JSONValue
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


def sorted_keys(value):
    """``value`` with every object's keys in order, so the same document always prints the same."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value


def plain(value):
    """What ``-f value`` prints for a value: a string bare, anything else compact JSON (``true``, not ``True``)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def output_cell(value, formatter):
    """A value for cliff's formatter ``formatter``: itself in ``-f json|yaml``, a string bare and anything
    else compact JSON in a table and in ``-f value``."""
    if formatter == "value" or isinstance(value, str):
        return plain(value)
    return JSONValue(sorted_keys(value))


class JSONOutput:
    """cliff's ``-f json|yaml|table|value`` on a ShowOne or Lister whose cells are JSON values.

    The default is ``json``, the output these commands had before they took ``-f``: scripts parse it.
    ``plain``, their former ``--format`` for a bare value, is still accepted as ``value``.
    """

    formatter_default = "json"
    OLD_NAMES = {"plain": "value"}

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        for action in parser._actions:
            if action.dest == "formatter":
                action.choices = list(action.choices) + list(self.OLD_NAMES)
        return parser

    def run(self, parsed_args):
        parsed_args.formatter = self.OLD_NAMES.get(parsed_args.formatter, parsed_args.formatter)
        return super().run(parsed_args)


def cell(value):
    """A table cell: a list as comma-separated text."""
    return ", ".join(map(str, value)) if isinstance(value, list) else value
