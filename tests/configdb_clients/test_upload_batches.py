"""``config upload env`` writes its documents in batches (``POST .../documents``, issue 27 goal 5), the real
``fuel2`` too, and one PUT each against a server without the batch route; what is stored and said is the same."""
import json
import os
import subprocess
import sys

import pytest

from tests.commands import IN_PROCESS
from tests.configdb_clients.conftest import FUEL2, Runner
from tests.conftest import LiveServer, free_port

NODES = ["node-{0:02d}.domain.tld".format(n) for n in range(1, 6)]
SOURCES = {"astute": "uid: '{0}'\nroles: [compute]\n", "globals": "deployment_mode: ha_compact\nn: {0}\n",
           "override/node": "weight: {0}\n"}


def _tree(root):
    for uid, node in enumerate(NODES, 1):
        for source, text in SOURCES.items():
            path = root / node / (source + ".yaml")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.format(uid))
    return root


def _uploaded(fuel, tmp_path):
    """Uploads the tree into environment 7 (unlinked: the FQDNs are the level values); the environment's feed."""
    result = fuel("config", "upload", "env", "--env", "7", "--dir", _tree(tmp_path / "hiera"))
    assert result.stdout == "Uploaded {0} nodes to environment 7\n".format(len(NODES))
    assert "] {0}/{0} nodes ({1})".format(len(NODES), NODES[-1]) in result.stderr
    for uid, node in enumerate(NODES, 1):
        got = fuel("config", "get", "--env", "7", "--level", "nodes=" + node, "--resource", "globals")
        assert json.loads(got.stdout) == {"deployment_mode": "ha_compact", "n": uid}
    feed = fuel("config", "changes", "--env", "7", "--since", "0", "-f", "json")
    return json.loads(feed.stdout)


def _revisions(changes):
    entries = changes["changes"] if isinstance(changes, dict) else changes
    return sorted({entry["revision"] for entry in entries}), len(entries)


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_an_environment_goes_in_one_batch_at_one_revision(fuel, tmp_path):
    assert _revisions(_uploaded(fuel, tmp_path)) == ([1], len(NODES) * len(SOURCES))


class OlderServer(LiveServer):
    """``nailgun-api`` as it was before the batch route: its URL map without it."""

    CODE = ("from nailgun_ext_configdb import urls; "
            "urls.URLS[:] = [u for u in urls.URLS if not u['template'].endswith('/documents')]; "
            "from nailgun_host.cmd.api import serve; serve()")

    def __init__(self, db_url):  # LiveServer's, with CODE
        self.port = free_port()
        self.url = "http://127.0.0.1:{0}".format(self.port)
        self.log_path = os.devnull
        self.log = open(os.devnull, "w")
        self.process = subprocess.Popen([sys.executable, "-c", self.CODE, "--db-url", db_url, "--port",
                                         str(self.port), "--no-migrate"], stdout=self.log, stderr=subprocess.STDOUT)
        self._wait()


@pytest.fixture
def older_server(migrated_db, db_url):
    server = OlderServer(db_url)
    yield server
    server.stop()


@pytest.mark.parametrize("command", [IN_PROCESS, FUEL2])
def test_a_server_without_the_batch_route_gets_one_put_per_document(older_server, tmp_path, command):
    if command == FUEL2 and not os.environ.get("FUEL2_BIN"):
        pytest.skip("FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
    (tmp_path / "home").mkdir()
    runner = Runner(os.environ["FUEL2_BIN"] if command == FUEL2 else IN_PROCESS, older_server, tmp_path / "home")
    revisions, entries = _revisions(_uploaded(runner, tmp_path))
    assert entries == len(NODES) * len(SOURCES) and revisions == list(range(1, entries + 1))
