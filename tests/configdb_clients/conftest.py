"""Fixtures for the ConfigDB clients: ``fuel-ext`` (in this process or as a script) or the real ``fuel2``
against a live server."""
import os
from pathlib import Path

import pytest
import yaml

from tests.auth_servers import (  # noqa: F401 (fixtures, for server_and_login)
    keystone_server, local_server, server_and_login)
from tests.commands import FUEL_EXT, IN_PROCESS, run_command
from tests.configdb_clients.puppet_env import FUEL_ORDER

FIXTURES = Path(__file__).parent / "fixtures"
HIERA_TREE = FIXTURES / "hiera"


def tree_sources(root=HIERA_TREE):
    """{data source: parsed YAML} of a fixture Hiera tree, the way Python reads it."""
    return {str(p.relative_to(root))[:-len(".yaml")]: yaml.safe_load(p.read_text()) or {}
            for p in sorted(root.rglob("*.yaml"))}


def hiera_expectation(sources, order=FUEL_ORDER):
    """What a priority lookup of every key returns: the first data source in order that has it."""
    expected = {}
    for source in reversed(order):
        expected.update(sources.get(source, {}))
    return expected


class Runner:
    """Runs a fuel2-like command line against the live server, like an operator's shell.

    The server is named in the operator's fuel2 settings file (``~/.config/fuel/fuel_client.yaml``),
    the way fuel2 finds it; fuel2 would otherwise write that file on its first run. ``command``
    is an executable or ``IN_PROCESS`` (fuel-ext's ``main(argv)``, same environment and stdin).
    """

    def __init__(self, command, server, home, login=None):
        self.command = command
        (home / "fuel").mkdir()
        (home / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump(
            {"SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": str(server.port)}))
        self.environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")
                        and k not in ("FUELCLIENT_CUSTOM_SETTINGS", "SERVER_ADDRESS", "SERVER_PORT")}
        self.environ.update(login or {}, XDG_CONFIG_HOME=str(home), HOME=str(home))

    def __call__(self, *args, stdin=None, ok=True):
        result = run_command(self.command, args, self.environ, stdin=stdin)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result


@pytest.fixture
def fuel_ext(live_server, tmp_path_factory):
    """fuel-ext's ``main(argv)`` in this process: the Hiera tests need its upload and override, not a process."""
    return Runner(IN_PROCESS, live_server, tmp_path_factory.mktemp("home"))


# Values of ``fuel``'s parameter for a test that also runs end to end, in subprocesses, e.g.
# ``@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)``.
FUEL2 = "fuel2"  # the real fuel2 of python-fuelclient 11, $FUEL2_BIN
FUEL_EXT_SCRIPT = "fuel-ext"  # this package's fuel-ext script


@pytest.fixture
def auth_mode(request):
    """The AUTH method of the server ``fuel`` runs against: ``none`` unless a test is parametrized with another."""
    return getattr(request, "param", "none")


@pytest.fixture
def fuel(request, migrated_db, tmp_path_factory, auth_mode):
    """The command lines of a test, run the way ``request.param`` says (default ``IN_PROCESS``).

    ``"fuel-ext"`` is this package's stand-in for fuel2 and ``"fuel2"`` the real one of
    python-fuelclient 11 (``$FUEL2_BIN``), both in subprocesses. A fuel2 test skips before the
    live server is asked for, so a skipped test starts no server; ``migrated_db`` is named here so
    that ``clean_db`` still sees a database test and empties the tables first. With ``auth_mode``
    ``keystone`` or ``local`` the server authenticates and the client logs in as the admin user,
    as its users do (``server_and_login``).
    """
    how = getattr(request, "param", IN_PROCESS)
    command = {FUEL_EXT_SCRIPT: FUEL_EXT, FUEL2: os.environ.get("FUEL2_BIN")}.get(how, IN_PROCESS)
    if not command:
        pytest.skip("FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
    server, login = server_and_login(request, auth_mode, how)
    return Runner(command, server, tmp_path_factory.mktemp("home"), login)


@pytest.fixture
def linked_env(env):
    """A Nailgun cluster (id 1) with node-1.domain.tld (a controller) and node-2.domain.tld (a compute)."""
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    assert [n["fqdn"] for n in env.nodes] == ["node-1.domain.tld", "node-2.domain.tld"]
    return cluster
