"""``fuel2 config comp|def|env create|list|show|update|delete``: ConfigDB's components,
resource definitions and environments, in tuning-box's command names.

Resource definitions have versions (seed 004): an id names one version, ``def list`` shows the latest
version of each data source (``--all-versions``: every live one), ``def show --name N [--def-version V]``
selects by name, and ``def create`` of a name its component has, or ``def update`` with new content, makes
the next version. ``env show|list`` show the version of each data source an environment is pinned to;
``env pin`` (``cli.pins``) moves a pin.
"""
import json

from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from nailgun_platform.client import ClientMixin
from nailgun_ext_configdb.cli.formats import cell, parse_typed, read_document
from nailgun_ext_configdb.cli.paths import ROOT, ConfigDBError
from nailgun_ext_configdb.cli.pins import Pins


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
        return tuple(cell(obj.get(c)) for c in self.columns)

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
    columns = ("id", "name", "component_id", "version", "latest", "content")

    def row(self, obj):
        return (obj["id"], obj["name"], obj.get("component_id"), obj.get("version"), obj.get("latest"),
                json.dumps(obj.get("content"), sort_keys=True))

    def note_version(self, definition, before=None):
        """On stderr, when a write made a new version: environments stay on theirs until moved."""
        if definition.get("version", 1) > 1 and definition.get("id") != before:
            self.app.stderr.write("Version {0} of {1} (id {2}): environments stay on the version they are "
                                  "pinned to until moved (config env pin)\n".format(
                                      definition["version"], definition["name"], definition["id"]))


class DefinitionList(_Definition, _List):
    """List resource definitions: the latest version of each data source, or every live version."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-i", "--component-id", type=int)
        parser.add_argument("-n", "--name", help="only the versions of this data source")
        parser.add_argument("--all-versions", action="store_true",
                            help="every live version, not only the latest of each data source")
        return parser

    def params(self, args):
        params = {} if args.all_versions else {"only_latest": "true"}
        if args.component_id is not None:
            params["component_id"] = str(args.component_id)
        if args.name is not None:
            params["name"] = args.name
        return params


class DefinitionShow(_Definition, ShowOne):
    """Show a resource definition: one version by id, or by --name (the latest, or --def-version N)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("id", type=int, nargs="?", help="the id of one version")
        parser.add_argument("-n", "--name", help="select by data source name instead of an id")
        parser.add_argument("--def-version", type=int, metavar="N",
                            help="that version of the data source (default: the latest; not --version: cliff's)")
        parser.add_argument("-i", "--component-id", "--component", dest="component_id", type=int,
                            help="with --name: the component defining it (needed when several do)")
        return parser

    def take_action(self, args):
        if args.id is None and args.name is None:
            raise ConfigDBError("Give a resource definition id or --name")
        if args.id is not None and args.name is not None:
            raise ConfigDBError("Give a resource definition id or --name, not both")
        if args.id is not None and args.component_id is not None:
            raise ConfigDBError("--component-id selects a name; an id names one version already")
        if args.id is not None and args.def_version is None:
            return self.shown(self.client.get(self.url(args.id)))
        if args.id is not None:
            by_id = self.client.get(self.url(args.id))
            name, component_id = by_id["name"], by_id["component_id"]
        else:
            name, component_id = args.name, args.component_id
        params = {"name": name}
        if component_id is not None:
            params["component_id"] = str(component_id)
        if args.def_version is not None:
            params["version"] = str(args.def_version)
        else:
            params["only_latest"] = "true"
        found = self.client.get(self.url(), params=params)
        if not found:
            raise ConfigDBError("No resource definition named {0}{1}".format(
                name, "" if component_id is None else " in component {0}".format(component_id)))
        if len(found) > 1:
            raise ConfigDBError("Components {0} define {1}: give --component-id".format(
                ", ".join(str(d["component_id"]) for d in found), name))
        return self.shown(found[0])


class DefinitionDelete(_Definition, _Delete):
    """Delete one version of a resource definition (the last live one: the data source and its values)."""


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
    """Create a resource definition in a component; a name the component has makes its next version."""

    def take_action(self, args):
        created = self.client.post(self.url(), self.body(args))
        self.note_version(created)
        return self.shown(created)


class DefinitionUpdate(_DefinitionWrite, _Update):
    """Rename or move a data source (every version), or give it new content: a new version, shown."""

    required = False
    fields = "--name, --component-id, --content or --data-format"

    def take_action(self, args):
        body = self.body(args)
        if not body:
            raise ConfigDBError("Nothing to update: give {0}".format(self.fields))
        updated = self.client.patch(self.url(args.id), body)
        self.note_version(updated, before=args.id)
        return self.shown(updated)


class _Environment(_Crud):
    collection = "environments"
    columns = ("id", "components", "hierarchy_levels", "revision", "pins")

    def row(self, obj):
        return tuple(Pins(obj.get(c)) if c == "pins" else cell(obj.get(c)) for c in self.columns)


class EnvironmentList(_Environment, _List):
    """List ConfigDB environments."""


class EnvironmentShow(_Environment, _Show):
    """Show an environment: its components, hierarchy levels, revision and the version of each data source
    it is pinned to (``astute=1 (latest 2)``; ``config env pin`` moves one)."""


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
