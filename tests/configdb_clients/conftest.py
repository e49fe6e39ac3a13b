"""Fixtures for the ConfigDB clients: the ``fuel-ext`` (or real ``fuel2``) command against a live server."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.configdb_clients.puppet_env import FUEL_ORDER

FIXTURES = Path(__file__).parent / "fixtures"
HIERA_TREE = FIXTURES / "hiera"
FUEL_EXT = str(Path(sys.executable).parent / "fuel-ext")


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
    the way fuel2 finds it; fuel2 would otherwise write that file on its first run.
    """

    def __init__(self, command, server, home):
        self.command = command
        (home / "fuel").mkdir()
        (home / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump(
            {"SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": str(server.port)}))
        self.environ = {k: v for k, v in os.environ.items()
                        if k not in ("FUELCLIENT_CUSTOM_SETTINGS", "SERVER_ADDRESS", "SERVER_PORT")}
        self.environ.update(XDG_CONFIG_HOME=str(home), HOME=str(home))

    def __call__(self, *args, stdin=None, ok=True):
        result = subprocess.run([self.command, *map(str, args)], input=stdin, capture_output=True,
                                text=True, env=self.environ, timeout=120)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result


@pytest.fixture
def fuel_ext(live_server, tmp_path_factory):
    """``fuel-ext``, this package's stand-in for ``fuel2``."""
    return Runner(FUEL_EXT, live_server, tmp_path_factory.mktemp("home"))


@pytest.fixture(params=["fuel-ext", "fuel2"])
def fuel(request, live_server, tmp_path_factory):
    """``fuel-ext``, then the real ``fuel2`` of python-fuelclient 11 when ``$FUEL2_BIN`` names it."""
    command = FUEL_EXT
    if request.param == "fuel2":
        command = os.environ.get("FUEL2_BIN")
        if not command:
            pytest.skip("FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
    return Runner(command, live_server, tmp_path_factory.mktemp("home"))


@pytest.fixture
def linked_env(env):
    """A Nailgun cluster (id 1) with node-1.domain.tld (a controller) and node-2.domain.tld (a compute)."""
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    assert [n["fqdn"] for n in env.nodes] == ["node-1.domain.tld", "node-2.domain.tld"]
    return cluster
