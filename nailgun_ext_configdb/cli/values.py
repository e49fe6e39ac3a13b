"""``fuel2 config get|set|override|delete|patch|history|diff|revert``: one data source at a level.

The commands follow the spec's "Fuel Client" section and tuning-box's ``config``
commands, minus their faults: an HTTP error prints the server's message on stderr and
exits 1, no option shadows one of cliff's global options (``-v``/``--verbose``,
``--version``), so ``--value`` has no ``-v`` and versions are ``--as-of``/``--to``,
and nothing here imports the server (only requests, cliff and PyYAML). With ``--session`` (or
``$FUEL_SESSION``) get shows, and set/override/delete/patch/revert stage, the session's state.
``get`` and ``diff`` print through cliff's formatters (``-f json|yaml|table|value``, JSON by default); a
write confirms what it did in one line on stdout (fuel2's habit), which cliff's ``-q`` silences.
"""
from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from nailgun_platform.client import MEDIA_TYPE, ClientMixin, PatchFileError, SessionOption, is_masked, read_patch
from nailgun_ext_configdb.cli.formats import TYPES, JSONOutput, cell, output_cell, parse_typed, read_document
from nailgun_ext_configdb.cli.paths import ConfigDBError, parse_levels, resource_path

#: the server's ``UNKNOWN_LEVEL_HEADER`` (nailgun_ext_configdb.api.documents)
UNKNOWN_LEVEL_HEADER = "X-Level-Unknown"
UNKNOWN_LEVEL_NOTE = ("Environment {env} stores nothing at {level} while it stores data for others of that "
                      "level: these are only the values of the levels above it (is the name the one it was "
                      "written under?)\n")
MASKED_NOTE = ("Secret values read as <secret>: this identity may not see them (the roles admin and hiera may). "
               "Writing <secret> back keeps the stored value.\n")


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
        levels = parse_levels(args.level)
        kind = kind or ("overrides" if getattr(args, "override", False) else "values")
        return resource_path(args.env, levels, args.resource, kind) + suffix


class ConfigCommand(ResourceMixin):
    """A command on one resource: reads tell on stderr when secrets were masked, writes confirm on stdout."""

    def fetch(self, path, params, headers=None):
        """The server's JSON; when it masked secrets for this identity, a note on stderr says so (stdout
        stays the data, so that a masked download can be edited and sent back: the mask keeps the value)."""
        data, answer_headers = self.client.get_with_headers(path, params=params, headers=headers)
        if is_masked(answer_headers):
            self.app.stderr.write(MASKED_NOTE)
        return data, answer_headers

    def confirm(self, args, done, kind=None):
        """One line saying what was written (or staged) where, unless cliff's ``-q``/``--quiet`` was given."""
        if getattr(self.app_args, "verbose_level", 1) < 1:
            return
        kind = kind or ("overrides" if getattr(args, "override", False) else "values")
        line = "{0} in the {1} of {2} at {3} (environment {4})".format(
            done, kind, args.resource, args.level or "the environment level", args.env)
        if getattr(args, "session", None):
            line = "Staged in session {0}: {1}{2}".format(args.session, line[0].lower(), line[1:])
        self.app.stdout.write(line + "\n")


class StagedCommand(SessionOption, ConfigCommand):
    """A command that acts through ``--session`` when given one."""

    def fetch_staged(self, args, path, params):
        data, answer_headers = self.fetch(path, params, self.session_headers(args))
        if answer_headers.get(UNKNOWN_LEVEL_HEADER, "").strip().lower() == "true":
            self.app.stderr.write(UNKNOWN_LEVEL_NOTE.format(env=args.env, level=args.level))
        self.note_state(args, answer_headers)
        return data


class ConfigGet(JSONOutput, StagedCommand, ShowOne):
    """Print the effective values of a resource, or of one key (--key): a field per top-level key."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-k", "--key", help="dotted key path, e.g. nova.debug or nodes.0.name")
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
        data = self.fetch_staged(args, self.path(args), params)
        if args.key or not isinstance(data, dict):
            data = {args.key or "value": data}
        columns = tuple(sorted(data))
        return columns, tuple(output_cell(data[column], args.formatter) for column in columns)


class ConfigSet(StagedCommand, Command):
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
            self.client.patch(self.path(args, kind, "/keys/set"), [args.key.split(".") + [value]],
                              headers=self.session_headers(args))
            self.confirm(args, "Set {0}".format(args.key), kind)
            return
        if args.value is not None:
            raise ConfigDBError("--value needs --key; a whole resource is read from stdin")
        if not isinstance(value, dict):
            raise ConfigDBError("A resource must be an object, got {0}".format(type(value).__name__))
        self.client.put(self.path(args, kind), value, headers=self.session_headers(args))
        self.confirm(args, "Replaced the whole resource", kind)


class ConfigOverride(ConfigSet):
    """Override one key or the whole resource at a level, leaving the uploaded values as they are."""

    kind = "overrides"


class ConfigDelete(StagedCommand, Command):
    """Remove one key from a resource's values (or --override) at a level."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-k", "--key", required=True, help="dotted key path")
        return parser

    def take_action(self, args):
        self.client.patch(self.path(args, suffix="/keys/delete"), [args.key.split(".")],
                          headers=self.session_headers(args))
        self.confirm(args, "Deleted {0}".format(args.key))


class ConfigPatch(StagedCommand, Command):
    """Apply an RFC 6902 JSON patch (JSON or YAML, a file or - for stdin) to a resource at a level.

    All or nothing: a failed ``test`` operation is 409 (a compare-and-swap), an operation the resource
    definition's policy forbids 403 (naming the allowed ones), a result its schema refuses 400."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("file", metavar="FILE", help="the patch: a JSON or YAML list of operations, - for stdin")
        return parser

    def take_action(self, args):
        try:
            patch = read_patch(args.file, self.app.stdin)
        except PatchFileError as exc:
            raise ConfigDBError(str(exc))
        headers = dict(self.session_headers(args), **{"Content-Type": MEDIA_TYPE})
        self.client.patch(self.path(args), patch, headers=headers)
        self.confirm(args, "Applied {0} patch operation{1}".format(len(patch), "" if len(patch) == 1 else "s"))


class ConfigHistory(ResourceMixin, Lister):
    """List the versions of a resource's values (or --override) at a level."""

    def take_action(self, args):
        columns = ("version", "revision", "created_at", "author", "changed_keys")
        rows = self.client.get(self.path(args, suffix="/history"))
        return columns, [tuple(cell(row.get(c)) for c in columns) for row in rows]


class ConfigDiff(JSONOutput, ConfigCommand, Lister):
    """Print the change between two versions: an RFC 6902 operation per row (``-f json``: a patch
    ``config patch`` takes back; a ``remove`` has ``"value": null``, which RFC 6902 ignores)."""

    COLUMNS = ("op", "path", "value")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--from", dest="from_version", type=int, required=True)
        parser.add_argument("--to", dest="to_version", type=int, help="default: the latest version")
        return parser

    def take_action(self, args):
        params = {"from": str(args.from_version)}
        if args.to_version is not None:
            params["to"] = str(args.to_version)
        patch = self.fetch(self.path(args, suffix="/diff"), params)[0]
        return self.COLUMNS, [tuple(output_cell(operation.get(column), args.formatter) for column in self.COLUMNS)
                              for operation in patch]


class ConfigRevert(StagedCommand, Command):
    """Write a new version equal to an older one."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--to", type=int, required=True, metavar="VERSION", help="the version to go back to")
        return parser

    def take_action(self, args):
        self.client.post(self.path(args, suffix="/revert"), {"version": args.to},
                         headers=self.session_headers(args))
        self.confirm(args, "Reverted to version {0}".format(args.to))
