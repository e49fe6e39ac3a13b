"""``fuel-ext``: the extensions' fuel2 commands, without python-fuelclient.

The commands are registered once, in the ``fuelclient`` entry-point group, so that
``fuel2`` shows them when python-fuelclient is installed. This app loads the same
entries, keeping only this distribution's own, so it never imports fuelclient.
"""
import sys
from importlib import metadata

from cliff.app import App
from cliff.commandmanager import CommandManager

OWN_MODULES = ("nailgun_ext_upgrade", "nailgun_ext_configdb", "nailgun_host")


class OwnCommandManager(CommandManager):
    """The ``fuelclient`` group, filtered to this distribution's commands."""

    def load_commands(self, namespace):
        for entry_point in metadata.entry_points(group=namespace):
            if entry_point.value.split(":")[0].split(".")[0] not in OWN_MODULES:
                continue
            name = entry_point.name.replace("_", " ") if self.convert_underscores else entry_point.name
            self.add_command(name, entry_point.load())


class FuelExtApp(App):
    def __init__(self):
        super().__init__(
            description="Fuel environment upgrade and ConfigDB commands (fuel2 compatible)",
            version=metadata.version("fuel-nailgun-extensions"),
            command_manager=OwnCommandManager("fuelclient", convert_underscores=True),
            deferred_help=True,
        )


def main(argv=None):
    return FuelExtApp().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
