"""``fuel-ext config ...`` (fuel2's commands) against a real nailgun-api process.

The commands run through fuel-ext's ``main(argv)`` in this process. The spec's use cases also run
end to end through the real ``fuel2``, and the error reporting (messages, exit codes) through the
``fuel-ext`` script and ``fuel2``.
"""
import copy
import json
import os

import pytest
import yaml

from nailgun_platform.client.base import APIClient
from nailgun_ext_configdb.cli import upload
from nailgun_ext_configdb.cli.paths import ROOT
from tests.commands import IN_PROCESS
from tests.configdb_clients.conftest import FUEL2, FUEL_EXT_SCRIPT, HIERA_TREE, tree_sources
from tests.keystone import USERS


def test_tuning_box_cli_demo(fuel):
    """configdb.md §10, 03-cli: a free-form environment not linked to a Nailgun cluster."""
    fuel("config", "comp", "create", "--name", "comp1", "--resources", "resource1,slashed/resource")
    created = json.loads(fuel("config", "env", "create", "-i", "comp1", "-l", "nodes", "-f", "json").stdout)
    assert created["hierarchy_levels"] == "nodes" and created["id"] == 1
    assert fuel("config", "get", "--env", "1", "--resource", "resource1").stdout == "{}\n"
    assert fuel("config", "get", "--env", "1", "--resource", "resource1", "--format", "yaml").stdout == ""
    fuel("config", "set", "--env", "1", "--resource", "resource1", "--format", "json", stdin='{"a": 1, "b": null}')
    assert json.loads(fuel("config", "get", "--env", "1", "--resource", "resource1", "--level", "nodes=1").stdout) \
        == {"a": 1, "b": None}
    fuel("config", "set", "--env", "1", "--resource", "resource1", "--format", "json", "--level", "nodes=1",
         stdin='{"a": 2}')
    assert json.loads(fuel("config", "get", "--env", "1", "--resource", "resource1", "--level", "nodes=1").stdout) \
        == {"a": 2, "b": None}
    fuel("config", "override", "--env", "1", "--resource", "resource1", "--key", "b", "--value", "s", "--type", "str")
    fuel("config", "set", "--env", "1", "--resource", "resource1", "--format", "json", stdin='{"a": 1, "b": "s3"}')
    assert json.loads(fuel("config", "get", "--env", "1", "--resource", "resource1").stdout) == {"a": 1, "b": "s"}
    assert json.loads(fuel("config", "get", "--env", "1", "--resource", "slashed/resource").stdout) == {}


def _upload_node_1(fuel):
    fuel("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)


@pytest.mark.parametrize("fuel, auth_mode", [
    (IN_PROCESS, "none"), (FUEL2, "none"), (FUEL2, "keystone"), (FUEL2, "local"), (IN_PROCESS, "keystone"),
], indirect=True)
def test_use_cases_1_to_3(fuel, auth_mode, linked_env):
    """The spec's use cases; with authentication, fuel2 logs in with OS_USERNAME/OS_PASSWORD and fuel-ext
    with a Keystone session, and the override's recorded author is that user."""
    _upload_node_1(fuel)
    astute = tree_sources()["astute"]
    # 1: all deployment data of a node, addressed by FQDN
    whole = fuel("config", "get", "--env", "1", "--level", "node=node-1.domain.tld", "--resource", "astute")
    assert json.loads(whole.stdout) == astute
    as_yaml = fuel("config", "get", "--env", "1", "--level", "node=node-1.domain.tld", "--resource", "astute",
                   "--format", "yaml")
    assert yaml.safe_load(as_yaml.stdout) == astute
    # 2: one key, in each format
    key = ("config", "get", "--env", "1", "--level", "node=node-1.domain.tld", "--resource", "astute",
           "--key", "deployment_id")
    assert json.loads(fuel(*key).stdout) == {"deployment_id": 1}
    assert fuel(*key, "--format", "plain").stdout == "1\n"
    assert fuel(*key, "--format", "yaml").stdout == "deployment_id: 1\n"
    # 3: override it at the node's level; the uploaded value stays
    fuel("config", "override", "--env", "1", "--level", "node=node-1.domain.tld", "--resource", "astute",
         "--key", "deployment_id", "--value", "2")
    assert json.loads(fuel(*key).stdout) == {"deployment_id": 2}
    assert json.loads(fuel(*key, "--raw").stdout) == {"deployment_id": 1}
    assert json.loads(fuel(*key[:-2], "--override").stdout) == {"deployment_id": 2}
    other_node = fuel("config", "get", "--env", "1", "--level", "nodes=2", "--resource", "astute")
    assert json.loads(other_node.stdout) == {}
    if auth_mode != "none":
        history = fuel("config", "history", *key[2:-2], "--override", "-f", "json")
        assert [row["author"] for row in json.loads(history.stdout)] == ["admin"]


def test_keys_of_every_type_and_from_stdin(fuel, linked_env):
    base = ("--env", "1", "--level", "nodes=2", "--resource", "astute")
    _upload_node_1(fuel)
    fuel("config", "set", *base, "--key", "nova.quota.cores", "--value", "20", "--type", "int")
    fuel("config", "set", *base, "--key", "nova.debug", "--value", "yes", "--type", "bool")
    fuel("config", "set", *base, "--key", "release", "--value", "9.0", "--type", "str")
    fuel("config", "set", *base, "--key", "gone", "--type", "null")
    fuel("config", "set", *base, "--key", "servers", "--type", "yaml", stdin="- ntp1\n- {name: ntp2}\n")
    fuel("config", "set", *base, "--key", "limits", "--type", "json", stdin='{"max": 3}')
    assert json.loads(fuel("config", "get", *base).stdout) == {
        "nova": {"quota": {"cores": 20}, "debug": True}, "release": "9.0", "gone": None,
        "servers": ["ntp1", {"name": "ntp2"}], "limits": {"max": 3}}
    fuel("config", "delete", *base, "--key", "nova.quota")
    assert json.loads(fuel("config", "get", *base, "--key", "nova").stdout) == {"nova": {"debug": True}}
    assert fuel("config", "get", *base, "--key", "nova.debug", "--format", "plain").stdout == "true\n"


def test_a_string_key_reads_back_as_a_string(fuel, linked_env):
    base = ("--env", "1", "--level", "nodes=1", "--resource", "astute")
    _upload_node_1(fuel)
    assert fuel("config", "get", *base, "--key", "nodes.1.fqdn", "--format", "plain").stdout == "node-2.domain.tld\n"
    assert json.loads(fuel("config", "get", *base, "--key", "uid").stdout) == {"uid": "1"}


def test_whole_resource_from_yaml_on_stdin_and_override(fuel, linked_env):
    base = ("--env", "1", "--resource", "globals")
    _upload_node_1(fuel)
    fuel("config", "set", *base, "--format", "yaml", stdin="debug: false\nlevels: {a: 1}\n")
    fuel("config", "override", *base, "--format", "json", stdin='{"levels": {"b": 2}}')
    node = fuel("config", "get", *base, "--level", "nodes=1", "--key", "levels")
    assert json.loads(node.stdout) == {"levels": {"a": 1, "b": 2}}
    assert json.loads(fuel("config", "get", *base, "--level", "nodes=1", "--key", "debug").stdout) == {"debug": False}


def test_history_diff_and_revert(fuel, linked_env):
    base = ("--env", "1", "--level", "nodes=1", "--resource", "astute")
    _upload_node_1(fuel)
    fuel("config", "set", *base, "--key", "deployment_id", "--value", "5")
    fuel("config", "set", *base, "--key", "debug", "--value", "true")
    history = json.loads(fuel("config", "history", *base, "-f", "json").stdout)
    assert [row["version"] for row in history] == [1, 2, 3]
    assert history[1]["changed_keys"] == "/deployment_id"
    diff = json.loads(fuel("config", "diff", *base, "--from", "1", "--to", "3").stdout)
    assert sorted(diff, key=lambda op: op["path"]) == [
        {"op": "replace", "path": "/debug", "value": True},
        {"op": "replace", "path": "/deployment_id", "value": 5}]
    fuel("config", "revert", *base, "--to", "1")
    assert json.loads(fuel("config", "get", *base, "--raw").stdout) == tree_sources()["astute"]
    assert len(json.loads(fuel("config", "history", *base, "-f", "json").stdout)) == 4
    as_of_2 = fuel("config", "get", *base, "--as-of", "2", "--key", "deployment_id")
    assert json.loads(as_of_2.stdout) == {"deployment_id": 5}


def test_components_definitions_and_environments(fuel):
    comp = json.loads(fuel("config", "comp", "create", "--name", "lcm", "-f", "json").stdout)
    definition = json.loads(fuel("config", "def", "create", "--name", "override/plugins", "--component-id",
                                 comp["id"], "--content", '{"type": "object"}', "-f", "json").stdout)
    assert definition["name"] == "override/plugins" and json.loads(definition["content"]) == {"type": "object"}
    from_stdin = json.loads(fuel("config", "def", "create", "-n", "astute", "-i", comp["id"], "-d", "yaml",
                                 "-f", "json", stdin="type: object\n").stdout)
    listed = json.loads(fuel("config", "def", "list", "--component-id", comp["id"], "-f", "json").stdout)
    assert [d["name"] for d in listed] == ["override/plugins", "astute"]
    updated = json.loads(fuel("config", "def", "update", from_stdin["id"], "--name", "globals", "-f", "json").stdout)
    assert updated["name"] == "globals"
    shown = json.loads(fuel("config", "comp", "show", comp["id"], "-f", "json").stdout)
    assert shown["resource_definitions"] == "override/plugins, globals"
    renamed = json.loads(fuel("config", "comp", "update", comp["id"], "--name", "lcm2", "-f", "json").stdout)
    assert renamed["name"] == "lcm2"
    environment = json.loads(fuel("config", "env", "create", "--id", "7", "-i", comp["id"], "-f", "json").stdout)
    assert environment["id"] == 7 and environment["components"] == str(comp["id"])
    nothing = fuel("config", "env", "update", "7", ok=False)
    assert nothing.returncode == 1 and "Nothing to update: give --components or --levels" in nothing.stderr
    changed = json.loads(fuel("config", "env", "update", "7", "--levels", "rack,nodes", "-f", "json").stdout)
    assert changed["hierarchy_levels"] == "rack, nodes"
    assert [e["id"] for e in json.loads(fuel("config", "env", "list", "-f", "json").stdout)] == [7]
    assert fuel("config", "env", "delete", "7").stdout == "Deleted environment 7\n"
    fuel("config", "def", "delete", definition["id"])
    fuel("config", "comp", "delete", comp["id"])
    assert json.loads(fuel("config", "comp", "list", "-f", "json").stdout) == []
    assert json.loads(fuel("config", "env", "list", "-f", "json").stdout) == []


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL_EXT_SCRIPT, FUEL2], indirect=True)
def test_an_http_error_prints_the_servers_message_and_exits_non_zero(fuel, linked_env):
    _upload_node_1(fuel)
    missing = fuel("config", "get", "--env", "1", "--resource", "no-such-source", ok=False)
    assert missing.returncode == 1 and missing.stdout == ""
    assert "(404)" in missing.stderr and "no-such-source" in missing.stderr
    absent_key = fuel("config", "get", "--env", "1", "--level", "nodes=1", "--resource", "astute",
                      "--key", "nope", ok=False)
    assert absent_key.returncode == 1 and "(404)" in absent_key.stderr
    not_a_node = fuel("config", "get", "--env", "1", "--level", "node=node-9.domain.tld", "--resource", "astute",
                      ok=False)
    assert not_a_node.returncode == 1
    assert "Cannot find a node with the given identifier node-9.domain.tld (404)" in not_a_node.stderr
    bad_value = fuel("config", "set", "--env", "1", "--resource", "astute", "--key", "a", "--value", "x",
                     "--type", "int", ok=False)
    assert bad_value.returncode == 1 and "Cannot read 'x' as int" in bad_value.stderr
    no_short_value = fuel("config", "set", "--env", "1", "--resource", "astute", "--key", "a", "-v", "5", ok=False)
    assert no_short_value.returncode == 2 and "unrecognized arguments: 5" in no_short_value.stderr


def test_reuploading_unchanged_data_makes_no_new_version(fuel, linked_env):
    _upload_node_1(fuel)
    _upload_node_1(fuel)
    for source in tree_sources():
        history = fuel("config", "history", "--env", "1", "--level", "nodes=1", "--resource", source, "-f", "json")
        assert len(json.loads(history.stdout)) == 1, source


def test_upload_creates_what_is_missing_and_adds_new_data_sources(fuel, linked_env, tmp_path):
    (tmp_path / "astute.yaml").write_text("deployment_id: 1\n")
    fuel("config", "upload", "--env", "1", "--node", "2", "--dir", tmp_path)
    assert json.loads(fuel("config", "env", "show", "1", "-f", "json").stdout)["hierarchy_levels"] == "nodes"
    _upload_node_1(fuel)
    components = json.loads(fuel("config", "comp", "list", "-f", "json").stdout)
    assert [c["name"] for c in components] == ["fuel"]
    assert sorted(components[0]["resource_definitions"].split(", ")) == sorted(tree_sources())


def test_malformed_yaml_uploads_nothing(fuel, linked_env, tmp_path):
    (tmp_path / "astute.yaml").write_text("deployment_id: 1\n")
    (tmp_path / "globals.yaml").write_text("a: 1\nb: [1, 2\nc: 3\n")
    result = fuel("config", "upload", "--env", "1", "--node", "1", "--dir", tmp_path, ok=False)
    assert result.returncode == 1
    assert "{0}, line 3, column 2".format(tmp_path / "globals.yaml") in result.stderr
    assert json.loads(fuel("config", "comp", "list", "-f", "json").stdout) == []
    assert json.loads(fuel("config", "env", "list", "-f", "json").stdout) == []


def test_bulk_upload_of_an_environment(fuel, linked_env, tmp_path):
    for node, deployment_id in (("node-1.domain.tld", 1), ("2", 2)):
        (tmp_path / node / "override").mkdir(parents=True)
        (tmp_path / node / "astute.yaml").write_text("deployment_id: {0}\nuid: '{1}'\n".format(deployment_id, node))
        (tmp_path / node / "override" / "node.yaml").write_text("node_only: true\n")
    result = fuel("config", "upload", "env", "--env", "1", "--dir", tmp_path)
    assert result.stdout == "Uploaded 2 nodes to environment 1\n"
    assert "] 2/2 nodes (node-1.domain.tld)\n" in result.stderr
    for node_id, deployment_id in (("1", 1), ("2", 2)):
        got = fuel("config", "get", "--env", "1", "--level", "nodes=" + node_id, "--resource", "astute",
                   "--key", "deployment_id", "--format", "plain")
        assert got.stdout == "{0}\n".format(deployment_id)


class _RacingClient(APIClient):
    """A real client that lets another node create each resource definition just before it does."""

    def __init__(self, root, rival):
        super().__init__(root=root)
        self.rival = rival

    def post(self, path, data=None, **kwargs):
        if path.endswith("resource_definitions"):
            self.rival.post(path, data)
        return super().post(path, data, **kwargs)


def test_two_nodes_uploading_at_once_share_the_new_resource_definitions(live_server, linked_env):
    root = live_server.url
    APIClient(root=root).post(ROOT + "components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    uploader = upload.Uploader(_RacingClient(root, APIClient(root=root)), 1)
    uploader.prepare({"astute": {}, "globals": {}, "override/node": {}})
    component, = APIClient(root=root).get(ROOT + "components")
    assert uploader.definition_ids == {d["name"]: d["id"] for d in component["resource_definitions"]}
    assert sorted(uploader.definition_ids) == ["astute", "globals", "override/node"]
    assert APIClient(root=root).get(ROOT + "environments/1")["components"] == [component["id"]]


@pytest.mark.parametrize("auth_mode", ["keystone", "local"], indirect=True)
@pytest.mark.parametrize("fuel", [FUEL2], indirect=True)
def test_fuel2_logs_our_commands_in_as_fuelclient_does(fuel, auth_mode, tmp_path):
    """fuel2's --os-username/--os-password and its settings file log our commands in too; a wrong password
    or no user fails with a message naming the login, not a traceback."""
    user, password = fuel.environ.pop("OS_USERNAME"), fuel.environ.pop("OS_PASSWORD")
    with open(os.path.join(fuel.environ["HOME"], "fuel", "fuel_client.yaml")) as stream:
        server = yaml.safe_load(stream)
    listed = fuel("--os-username", user, "--os-password", password, "config", "comp", "list", "-f", "json")
    assert json.loads(listed.stdout) == []
    settings = tmp_path / "fuel_client.yaml"
    settings.write_text(yaml.safe_dump(dict(server, OS_USERNAME=user, OS_PASSWORD=password)))
    fuel.environ["FUELCLIENT_CUSTOM_SETTINGS"] = str(settings)
    fuel("config", "comp", "create", "--name", "comp1", "--resources", "resource1")
    del fuel.environ["FUELCLIENT_CUSTOM_SETTINGS"]
    login = "fuel2 could not log in at http://127.0.0.1:{0}/keystone/v2.0".format(server["SERVER_PORT"])
    wrong = fuel("--os-username", user, "--os-password", "not-its-password", "config", "comp", "list", ok=False)
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert "{0} as '{1}': ".format(login, user) in wrong.stderr and "(HTTP 401)" in wrong.stderr, wrong.stderr
    nobody = fuel("config", "comp", "list", ok=False)
    assert nobody.returncode == 1
    assert "{0} (no user: set --os-username/--os-password or OS_USERNAME/OS_PASSWORD)".format(login) \
        in nobody.stderr, nobody.stderr


# -- secrets (issue 11): fuel2 shows the mask to whoever may not see secrets, and a masked download goes back ------

MASK = "<secret>"
#: the secret leaves of the fixture tree's node-1 data sources (key names matching the secret patterns)
SECRET_LEAVES = {"astute": [("mysql", "root_password"), ("mysql", "wsrep_password"), ("nova", "db_password"),
                            ("nova", "user_password")],
                 "globals": [("keystone_hash", "admin_token")]}
NODE_1 = ("--env", "1", "--level", "node=node-1.domain.tld")


def as_user(fuel, user):
    """The same command lines, logged in as ``user`` (one password in Keystone and in the users file)."""
    other = copy.copy(fuel)
    other.environ = dict(fuel.environ, OS_USERNAME=user, OS_PASSWORD=USERS[user])
    return other


def masked(source):
    """The fixture tree's ``source`` as an identity that may not see secrets reads it."""
    data = copy.deepcopy(tree_sources()[source])
    for parent, key in SECRET_LEAVES.get(source, []):
        data[parent][key] = MASK
    return data


def secret_values():
    sources = tree_sources()
    return [sources[source][parent][key] for source, leaves in SECRET_LEAVES.items() for parent, key in leaves]


@pytest.mark.parametrize("fuel, auth_mode", [(FUEL2, "keystone"), (FUEL2, "local")], indirect=True)
def test_fuel2_shows_the_mask_to_a_reader_and_the_values_to_admin_and_hiera(fuel, auth_mode, linked_env):
    _upload_node_1(fuel)
    astute = ("config", "get", *NODE_1, "--resource", "astute")
    fuel("config", "set", *NODE_1, "--resource", "astute", "--key", "mysql.root_password", "--value", "n3wRoot")
    fuel("config", "override", *NODE_1, "--resource", "astute", "--key", "nova.db_password", "--value", "0verDb")
    changed = dict(tree_sources()["astute"], mysql=dict(tree_sources()["astute"]["mysql"], root_password="n3wRoot"))
    effective = dict(changed, nova=dict(changed["nova"], db_password="0verDb"))
    whole = fuel(*astute)  # as admin
    assert json.loads(whole.stdout) == effective and MASK not in whole.stderr
    hiera = as_user(fuel, "hiera")
    assert json.loads(hiera(*astute).stdout) == effective
    assert hiera(*astute, "--key", "nova.db_password", "--format", "plain").stdout == "0verDb\n"
    assert json.loads(hiera(*astute, "--raw").stdout) == changed
    assert json.loads(hiera(*astute, "--as-of", "1").stdout) == tree_sources()["astute"]
    diff = json.loads(hiera("config", "diff", *NODE_1, "--resource", "astute", "--from", "1").stdout)
    assert diff == [{"op": "replace", "path": "/mysql/root_password", "value": "n3wRoot"}]
    secrets = secret_values() + ["n3wRoot", "0verDb"]
    run = as_user(fuel, "reader")  # a member reads as a reader does: the round trip below
    whole = run(*astute)
    assert json.loads(whole.stdout) == masked("astute")
    assert "Secret values read as <secret>: this identity may not see them" in whole.stderr
    outputs = [whole.stdout,
               run(*astute, "--key", "nova.db_password", "--format", "plain").stdout,
               run(*astute, "--key", "mysql", "--format", "yaml").stdout,
               run(*astute, "--raw").stdout,
               run(*astute, "--override").stdout,
               run(*astute, "--show-lookup").stdout,
               run(*astute, "--as-of", "1").stdout,
               run("config", "diff", *NODE_1, "--resource", "astute", "--from", "1").stdout,
               run("config", "history", *NODE_1, "--resource", "astute", "-f", "json").stdout,
               run("config", "get", *NODE_1, "--resource", "globals").stdout]
    assert outputs[1] == MASK + "\n"
    assert json.loads(outputs[7]) == [{"op": "replace", "path": "/mysql/root_password", "value": MASK}]
    assert json.loads(outputs[9]) == masked("globals")
    for output in outputs:
        assert not [value for value in secrets if value in output], output


@pytest.mark.parametrize("fuel, auth_mode", [(FUEL2, "local")], indirect=True)
def test_a_masked_download_uploaded_again_changes_nothing(fuel, auth_mode, linked_env, tmp_path):
    """A member downloads node-1's data sources (secrets masked), uploads the files back: every stored value,
    secrets included, stays as it was, and no source gets a new version."""
    _upload_node_1(fuel)
    member = as_user(fuel, "member")
    for source in tree_sources():
        target = tmp_path / (source + ".yaml")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(member("config", "get", *NODE_1, "--resource", source, "--raw", "--format", "yaml").stdout)
    assert yaml.safe_load((tmp_path / "astute.yaml").read_text()) == masked("astute")
    uploaded = member("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", tmp_path)
    assert uploaded.stdout == "Uploaded {0} data sources of node node-1.domain.tld to environment 1\n".format(
        len(tree_sources()))
    for source, data in tree_sources().items():
        assert json.loads(fuel("config", "get", *NODE_1, "--resource", source, "--raw").stdout) == data, source
        history = fuel("config", "history", *NODE_1, "--resource", source, "-f", "json")
        assert len(json.loads(history.stdout)) == 1, source
