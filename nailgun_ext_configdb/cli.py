"""``fuel2 config ...``: read, override and version ConfigDB data sources from a shell.

The commands follow the spec's "Fuel Client" section and tuning-box's ``config``
commands, minus their faults: an HTTP error prints the server's message on stderr and
exits 1, no option shadows one of cliff's global options (``-v``/``--verbose``,
``--version``), so ``--value`` has no ``-v`` and versions are ``--as-of``/``--to``,
and nothing here imports the server (only requests, cliff and PyYAML).
"""
import json

import yaml
from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from nailgun_ext_configdb.client import (ROOT, ConfigDBError, NodeResolver, parse_levels,
                                         resource_path)
from nailgun_host.client import ClientMixin

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


class ResourceMixin(ClientMixin):
    """The arguments that address one resource of an environment at a level, and its URL."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-e", "--env", type=int, required=True, help="environment id")
        parser.add_argument("-l", "--level", help="level path, e.g. nodes=1 or node=node-1.domain.tld "
                            "(omit for the environment-wide level)")
        parser.add_argument("-r", "--resource", required=True, help="data source name or id")
        parser.add_argument("--override", action="store_true",
                            help="act on the overrides instead of the values")
        return parser

    def path(self, args, kind=None, suffix=""):
        levels = NodeResolver(self.client, args.env).levels(parse_levels(args.level))
        kind = kind or ("overrides" if getattr(args, "override", False) else "values")
        return resource_path(args.env, levels, args.resource, kind) + suffix


class ConfigCommand(ResourceMixin, Command):
    """A command on one resource whose output is the server's JSON, rendered as asked."""

    def emit(self, text):
        self.app.stdout.write(text + "\n")


class ConfigGet(ConfigCommand):
    """Print the effective values of a resource, or of one key (--key)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-k", "--key", help="dotted key path, e.g. nova.debug or nodes.0.name")
        parser.add_argument("--format", choices=("json", "yaml", "plain"), default="json")
        parser.add_argument("-s", "--show-lookup", action="store_true",
                            help="tell for every key which level it came from")
        parser.add_argument("--as-of", type=int, metavar="VERSION",
                            help="as the resource stood at this version (not --version: cliff's own)")
        parser.add_argument("--raw", action="store_true",
                            help="the values stored at this level, not the merge (--override: the overrides)")
        return parser

    def take_action(self, args):
        params = {}
        if not (args.raw or args.override):
            params["effective"] = "1"
        if args.show_lookup:
            params["show_lookup"] = "1"
        if args.key:
            params["key"] = args.key
        if args.as_of is not None:
            params["version"] = str(args.as_of)
        data = self.client.get(self.path(args), params=params)
        if args.key and args.format != "plain":
            data = {args.key: data}
        self.emit(render(data, args.format))


class ConfigSet(ConfigCommand):
    """Set one key (--key, typed --value or stdin) or the whole resource (stdin) at a level."""

    kind = "values"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-k", "--key", help="dotted key path; intermediate objects are created")
        parser.add_argument("--value", help="the key's value (no -v: that is cliff's --verbose)")
        parser.add_argument("-t", "--type", choices=TYPES,
                            help="how to read --value or stdin (default: JSON if it parses, else str)")
        parser.add_argument("--format", choices=("json", "yaml"), default="json",
                            help="format of a whole resource on stdin")
        return parser

    def value(self, args):
        if args.type == "null":
            if args.value is not None:
                raise ConfigDBError("--type null takes no --value")
            return None
        if args.value is not None:
            return parse_typed(args.value, args.type)
        if args.type in ("json", "yaml"):
            return read_document(self.app.stdin, args.type)
        if args.type:
            return parse_typed(self.app.stdin.read().strip(), args.type)
        return read_document(self.app.stdin, args.format)

    def take_action(self, args):
        kind = "overrides" if args.override else self.kind
        value = self.value(args)
        if args.key:
            self.client.patch(self.path(args, kind, "/keys/set"), [args.key.split(".") + [value]])
            return
        if args.value is not None:
            raise ConfigDBError("--value needs --key; a whole resource is read from stdin")
        if not isinstance(value, dict):
            raise ConfigDBError("A resource must be an object, got {0}".format(type(value).__name__))
        self.client.put(self.path(args, kind), value)


class ConfigOverride(ConfigSet):
    """Override one key or the whole resource at a level, leaving the uploaded values as they are."""

    kind = "overrides"


class ConfigDelete(ConfigCommand):
    """Remove one key from a resource's values (or --override) at a level."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-k", "--key", required=True, help="dotted key path")
        return parser

    def take_action(self, args):
        self.client.patch(self.path(args, suffix="/keys/delete"), [args.key.split(".")])


class ConfigHistory(ResourceMixin, Lister):
    """List the versions of a resource's values (or --override) at a level."""

    def take_action(self, args):
        columns = ("version", "revision", "created_at", "author", "changed_keys")
        rows = self.client.get(self.path(args, suffix="/history"))
        return columns, [tuple(_cell(row.get(c)) for c in columns) for row in rows]


def _cell(value):
    return ", ".join(map(str, value)) if isinstance(value, list) else value


class ConfigDiff(ConfigCommand):
    """Print the change between two versions as an RFC 6902 JSON patch."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--from", dest="from_version", type=int, required=True)
        parser.add_argument("--to", dest="to_version", type=int, help="default: the latest version")
        parser.add_argument("--format", choices=("json", "yaml"), default="json")
        return parser

    def take_action(self, args):
        params = {"from": str(args.from_version)}
        if args.to_version is not None:
            params["to"] = str(args.to_version)
        self.emit(render(self.client.get(self.path(args, suffix="/diff"), params=params), args.format))


class ConfigRevert(ConfigCommand):
    """Write a new version equal to an older one."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--to", type=int, required=True, metavar="VERSION", help="the version to go back to")
        return parser

    def take_action(self, args):
        self.client.post(self.path(args, suffix="/revert"), {"version": args.to})


# -- components, resource definitions, environments ----------------------------------------

def _ids(text):
    """``1,2`` → [1, 2]; names stay names; ``[]`` (tuning-box's spelling) → []."""
    if text.strip() in ("", "[]"):
        return []
    return [int(x) if x.strip().isdigit() else x.strip() for x in text.split(",")]


class _Crud(ClientMixin):
    collection = None
    columns = ()

    def url(self, obj_id=None):
        return ROOT + self.collection + ("" if obj_id is None else "/{0}".format(obj_id))

    def row(self, obj):
        return tuple(_cell(obj.get(c)) for c in self.columns)

    def shown(self, obj):
        return self.columns, self.row(obj)


class _List(_Crud, Lister):
    def take_action(self, args):
        return self.columns, [self.row(o) for o in self.client.get(self.url(), params=self.params(args))]

    def params(self, args):
        return None


class _Show(_Crud, ShowOne):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("id", type=int)
        return parser

    def take_action(self, args):
        return self.shown(self.client.get(self.url(args.id)))


class _Delete(_Crud, Command):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("id", type=int)
        return parser

    def take_action(self, args):
        self.client.delete(self.url(args.id))
        self.app.stdout.write("Deleted {0} {1}\n".format(self.collection.rstrip("s").replace("_", " "), args.id))


class _Update(_Crud, ShowOne):
    """PATCH the given fields (``body``), then show the object as stored."""

    fields = ""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("id", type=int)
        return parser

    def take_action(self, args):
        body = self.body(args)
        if not body:
            raise ConfigDBError("Nothing to update: give {0}".format(self.fields))
        self.client.patch(self.url(args.id), body)
        return self.shown(self.client.get(self.url(args.id)))


class _Component(_Crud):
    collection = "components"
    columns = ("id", "name", "resource_definitions")

    def row(self, obj):
        return (obj["id"], obj["name"], ", ".join(d["name"] for d in obj.get("resource_definitions", [])))


class ComponentList(_Component, _List):
    """List ConfigDB components with their resource definitions."""


class ComponentShow(_Component, _Show):
    """Show a component."""


class ComponentDelete(_Component, _Delete):
    """Delete a component and its resource definitions."""


class ComponentCreate(_Component, ShowOne):
    """Create a component, optionally with resource definitions by name."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-n", "--name", required=True)
        parser.add_argument("--resources", default="", help="comma-separated resource names to define")
        return parser

    def take_action(self, args):
        definitions = [{"name": n, "content": {}} for n in args.resources.split(",") if n.strip()]
        return self.shown(self.client.post(self.url(), {"name": args.name, "resource_definitions": definitions}))


class ComponentUpdate(_Component, _Update):
    """Rename a component or set which resource definitions (ids) it has."""

    fields = "--name or --resource-definitions"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-n", "--name")
        parser.add_argument("--resource-definitions", help="comma-separated ids ('[]' for none)")
        return parser

    def body(self, args):
        body = {}
        if args.name:
            body["name"] = args.name
        if args.resource_definitions is not None:
            body["resource_definitions"] = [{"id": i} for i in _ids(args.resource_definitions)]
        return body


class _Definition(_Crud):
    collection = "resource_definitions"
    columns = ("id", "name", "component_id", "content")

    def row(self, obj):
        return (obj["id"], obj["name"], obj.get("component_id"), json.dumps(obj.get("content"), sort_keys=True))


class DefinitionList(_Definition, _List):
    """List resource definitions, optionally of one component."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-i", "--component-id", type=int)
        return parser

    def params(self, args):
        return None if args.component_id is None else {"component_id": str(args.component_id)}


class DefinitionShow(_Definition, _Show):
    """Show a resource definition."""


class DefinitionDelete(_Definition, _Delete):
    """Delete a resource definition and its values."""


class _DefinitionWrite(_Definition, ShowOne):
    required = True

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-n", "--name", required=self.required)
        parser.add_argument("-i", "--component-id", type=int, required=self.required)
        content = parser.add_mutually_exclusive_group()
        content.add_argument("-p", "--content", help="content (e.g. a JSON schema), read as --type")
        content.add_argument("-d", "--data-format", choices=("json", "yaml"),
                             help="read the content from stdin in this format")
        parser.add_argument("-t", "--type", choices=("json", "yaml"), default="json",
                            help="format of --content")
        return parser

    def body(self, args):
        body = {k: v for k, v in (("name", args.name), ("component_id", args.component_id)) if v is not None}
        if args.content is not None:
            body["content"] = parse_typed(args.content, args.type)
        elif args.data_format:
            body["content"] = read_document(self.app.stdin, args.data_format)
        return body


class DefinitionCreate(_DefinitionWrite):
    """Create a resource definition in a component."""

    def take_action(self, args):
        return self.shown(self.client.post(self.url(), self.body(args)))


class DefinitionUpdate(_DefinitionWrite, _Update):
    """Change a resource definition's name, component or content."""

    required = False
    fields = "--name, --component-id, --content or --data-format"


class _Environment(_Crud):
    collection = "environments"
    columns = ("id", "components", "hierarchy_levels")


class EnvironmentList(_Environment, _List):
    """List ConfigDB environments."""


class EnvironmentShow(_Environment, _Show):
    """Show an environment: its components and hierarchy levels."""


class EnvironmentDelete(_Environment, _Delete):
    """Delete an environment and all its values."""


class EnvironmentCreate(_Environment, ShowOne):
    """Create an environment; give --id to link it to the Nailgun cluster of that id."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--id", type=int, help="the Nailgun cluster id to link to")
        parser.add_argument("-i", "--components", default="", help="comma-separated component ids or names")
        parser.add_argument("-l", "--levels", default="nodes", help="comma-separated hierarchy levels")
        return parser

    def take_action(self, args):
        body = {"components": _ids(args.components), "hierarchy_levels": _ids(args.levels)}
        if args.id is not None:
            body["id"] = args.id
        return self.shown(self.client.post(self.url(), body))


class EnvironmentUpdate(_Environment, _Update):
    """Change an environment's components or hierarchy levels ('[]' for none)."""

    fields = "--components or --levels"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-i", "--components")
        parser.add_argument("-l", "--levels")
        return parser

    def body(self, args):
        body = {}
        if args.components is not None:
            body["components"] = _ids(args.components)
        if args.levels is not None:
            body["hierarchy_levels"] = _ids(args.levels)
        return body

