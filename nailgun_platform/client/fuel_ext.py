"""``fuel-ext``: the extensions' fuel2 commands, without python-fuelclient.

The commands are registered once, in the ``fuelclient`` entry-point group, so that
``fuel2`` shows them when python-fuelclient is installed. This app loads the same
entries, keeping only this distribution's own, so it never imports fuelclient.
"""
import sys
from importlib import metadata

from cliff import complete
from cliff.app import App
from cliff.commandmanager import CommandManager

from nailgun_platform.client.base import load_settings

#: the distribution whose commands ``fuel-ext`` shows (its extensions' and the platform's sessions commands)
DISTRIBUTION = "fuel-nailgun-extensions"


class OwnCommandManager(CommandManager):
    """The ``fuelclient`` group, filtered to this distribution's commands: the platform names no extension."""

    def load_commands(self, namespace):
        for entry_point in metadata.entry_points(group=namespace):
            if entry_point.dist is None or entry_point.dist.name != DISTRIBUTION:
                continue
            name = entry_point.name.replace("_", " ") if self.convert_underscores else entry_point.name
            self.add_command(name, entry_point.load())


class _CompletionWords(complete.CompleteDictionary):
    """cliff's words to complete, but a command that also begins longer ones (``config upload``, ``config upload
    env``) offers both its next words and its options: cliff's made the longer ``config upload_env``, no command."""

    def add_command(self, command, actions):
        node = self._dictionary
        for word in command:
            node = node.setdefault(word, {})
        node[""] = " ".join(option for action in actions for option in action.option_strings)

    def _get_data_recurse(self, dictionary, path):
        data = []
        for word in sorted(word for word in dictionary if word):
            name = path + "_" + word if path else word
            below = dictionary[word]
            data.append((name, " ".join(sorted(word for word in below if word) + [below.get("", "")]).strip()))
            data += self._get_data_recurse(below, name)
        return data


class CompleteCommand(complete.CompleteCommand):
    """print bash completion command"""

    def take_action(self, parsed_args):
        shell = self._formatters[parsed_args.shell].plugin(parsed_args.name or self.app.NAME, self.app.stdout)
        words = _CompletionWords()
        for name, _ in self.app.command_manager:
            words.add_command(name.split(), self.get_actions(name.split()))
        shell.write(words.get_commands(), words.get_data())
        return 0


#: fuel2's ``--os-*`` options, and the ones of OpenStack's clients that a keystoneauth1 login also reads
OS_OPTIONS = ("auth-url", "username", "password", "project-name", "tenant-name", "user-domain-name",
              "project-domain-name", "cacert")


class FuelExtApp(App):
    #: the command's name whatever argv[0] is (cliff's default): its completion function, help and man page name it
    NAME = "fuel-ext"

    def __init__(self):
        super().__init__(
            description="Fuel environment upgrade and ConfigDB commands (fuel2 compatible)",
            version=metadata.version(DISTRIBUTION),
            command_manager=OwnCommandManager("fuelclient", convert_underscores=True),
            deferred_help=True,
        )
        self.command_manager.add_command("complete", CompleteCommand)

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version, dict(argparse_kwargs or {}, prog=self.NAME))
        for name in OS_OPTIONS:
            variable = "OS_" + name.upper().replace("-", "_")
            parser.add_argument("--os-" + name, dest=variable, metavar="<{0}>".format(name),
                                help="overrides ${0} and the settings file".format(variable))
        return parser

    def client_settings(self):
        """The settings (``load_settings``) with the ``--os-*`` options given on the command line over them."""
        settings = load_settings()
        settings.update({name: value for name, value in vars(self.options).items()
                         if name.startswith("OS_") and value is not None})
        return settings


def build_parser():
    """The whole command line, each command a subcommand of the app's options: what the man page shows
    (``nailgun_host.cmd.man_pages``), as argparse sees it, for cliff parses a command's arguments apart."""
    app = FuelExtApp()
    commands = app.parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, _ in sorted(app.command_manager):
        factory, _, _ = app.command_manager.find_command(name.split())
        own = factory(app, None).get_parser("{0} {1}".format(app.NAME, name))
        commands.add_parser(name, parents=[own], add_help=False, conflict_handler="ignore",
                            description=own.description, epilog=own.epilog,
                            help=(own.description or "").strip().splitlines()[0] if own.description else None)
    return app.parser


def main(argv=None):
    return FuelExtApp().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
