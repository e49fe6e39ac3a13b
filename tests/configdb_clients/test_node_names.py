"""One rule for what a ``nodes`` level value names, the server's, whichever client writes and reads (issue 26).

The clients send a node as they were given it; the server alone decides what it names: in an environment
linked to a cluster one of its nodes (by id or FQDN, stored as its id), otherwise the text itself. The test
walks the whole class (linked or not × node written by id or FQDN × writer × node read by id or FQDN ×
reader): what is read back is what was written exactly when the server's rule says the two names are the
same node, and otherwise every reader is told the node is unknown, never handed the levels above it as the
node's. The clients used to decide linking by whether a cluster of the environment's id exists, so
``upload --node node-1.domain.tld`` wrote an unlinked environment's node under ``nodes/1``.
"""
import json
import shutil
import subprocess

import pytest

from nailgun_platform.client.base import APIClient
from nailgun_ext_configdb.cli.paths import ROOT
from tests.configdb_clients import puppet_env

NAMES = {"id": "1", "fqdn": "node-1.domain.tld"}
#: each writer puts {"value": text} into one data source of the node named ``node``
WRITERS = {
    "set": lambda fuel, tmp, source, node, text: fuel(
        "config", "set", "--env", "1", "--level", "nodes=" + node, "--resource", source, "--key", "value",
        "--value", text),
    "upload": lambda fuel, tmp, source, node, text: fuel(
        "config", "upload", "--env", "1", "--node", node, "--dir", _tree(tmp / node, source, text)),
    "upload env": lambda fuel, tmp, source, node, text: fuel(
        "config", "upload", "env", "--env", "1", "--dir", _tree(tmp / "env" / node, source, text).parent),
}
#: the Ruby client of both Hiera backends: every (node, data source) read, or the error it raised
RUBY_READER = """require 'json'
require 'puppet_x/configdb/client'
client = ConfigDB::Client.new('url' => ARGV[0])
read = JSON.parse(ARGV[1]).to_h do |node, source|
  [node, begin
    client.effective('1', node, source)
  rescue ConfigDB::Error => e
    { 'error' => e.message }
  end]
end
puts JSON.generate(read)
"""


def _tree(directory, source, text):
    directory.mkdir(parents=True)
    (directory / (source + ".yaml")).write_text("value: {0}\n".format(text))
    return directory


def _environment(api, linked):
    """ConfigDB environment 1 afresh, linked to cluster 1 or not, with one data source per case."""
    if any(e["id"] == 1 for e in api.get(ROOT + "environments")):
        api.delete(ROOT + "environments/1")
    components = api.get(ROOT + "components")
    if not components:
        components = [api.post(ROOT + "components", {"name": "fuel", "resource_definitions": [
            {"name": "{0}-{1}".format(writer, name).replace(" ", "-")} for writer in WRITERS for name in NAMES]})]
    api.post(ROOT + "environments", {"id": 1, "components": [components[0]["id"]], "hierarchy_levels": ["nodes"],
                                     "linked": linked})


def _read_through_ruby(url, source):
    pairs = [[name, source] for name in NAMES.values()]
    result = subprocess.run(["ruby", "-e", RUBY_READER, url, json.dumps(pairs)], capture_output=True, text=True,
                            env=puppet_env.ruby_environ(), timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not shutil.which("ruby"), reason="ruby is installed by run_tests.sh (apt)")
@pytest.mark.parametrize("linked", [True, False], ids=["linked", "unlinked"])
def test_every_client_addresses_a_node_by_the_servers_rule(fuel_ext, linked_env, live_server, tmp_path, linked):
    api = APIClient(root=live_server.url)
    url = live_server.url + "/api/v1/config"
    for writer, write in WRITERS.items():
        for written_as, node in NAMES.items():
            _environment(api, linked)
            source = "{0}-{1}".format(writer, written_as).replace(" ", "-")
            text = "by {0} as {1}".format(writer, written_as)
            write(fuel_ext, tmp_path / source, source, node, text)
            ruby = _read_through_ruby(url, source)
            for read_as, read_node in NAMES.items():
                case = (linked, writer, written_as, read_as)
                got = fuel_ext("config", "get", "--env", "1", "--level", "nodes=" + read_node, "--resource", source)
                if linked or read_as == written_as:
                    assert json.loads(got.stdout) == {"value": text}, case
                    assert got.stderr == "", case
                    assert ruby[read_node] == {"value": text}, case
                else:
                    assert json.loads(got.stdout) == {}, case  # the environment level's values, and a note
                    assert "Environment 1 stores nothing at nodes={0}".format(read_node) in got.stderr, case
                    assert ruby[read_node] == {"error": (
                        "ConfigDB stores nothing for the node of {0}/environments/1/nodes/{1}/resources/{2}/values"
                        "?effective in its environment, only for other nodes: is the node (the node option or the "
                        "fqdn fact) the name its data was uploaded under?").format(
                            url, read_node, source)}, case
