"""The real ``hiera`` (Hiera 3) and ``puppet`` (Puppet 7, Hiera 5) reading a live ConfigDB."""
import json
import shutil
import subprocess

import pytest

from tests.configdb_clients import puppet_env
from tests.configdb_clients.conftest import HIERA_TREE, hiera_expectation, tree_sources

pytestmark = pytest.mark.skipif(not (shutil.which("hiera") and shutil.which("puppet")),
                                reason="hiera and puppet are installed by run_tests.sh (apt)")
NODE_1 = ("--env", "1", "--level", "node=node-1.domain.tld")


@pytest.fixture
def uploaded(fuel_ext, linked_env, live_server):
    fuel_ext("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    return live_server.url + "/api/v1/config"


def hiera(config, scope, *args):
    return subprocess.run(["hiera", "-c", str(config), "--yaml", str(scope), *args],
                          capture_output=True, text=True, env=puppet_env.ruby_environ(), timeout=60)


def test_use_case_4_hiera_deployment_id(uploaded, fuel_ext, tmp_path):
    config = puppet_env.write_hiera3(tmp_path, uploaded)
    scope = puppet_env.write_scope(tmp_path)
    result = hiera(config, scope, "deployment_id")
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    fuel_ext("config", "override", *NODE_1, "--resource", "astute", "--key", "deployment_id", "--value", "2")
    assert hiera(config, scope, "deployment_id").stdout == "2\n"
    assert hiera(config, scope, "no_such_key").stdout == "nil\n"


def test_every_uploaded_key_reads_back_exactly_through_hiera_3(uploaded, tmp_path):
    expected = hiera_expectation(tree_sources())
    scope = puppet_env.write_scope(tmp_path)
    through_configdb = puppet_env.hiera_all(puppet_env.write_hiera3(tmp_path, uploaded), scope, expected,
                                            tmp_path)["values"]
    assert through_configdb == expected
    (tmp_path / "yaml").mkdir()
    local = puppet_env.write_hiera3(tmp_path / "yaml", yaml_tree=HIERA_TREE)
    assert puppet_env.hiera_all(local, scope, expected, tmp_path)["values"] == through_configdb


def test_hiera_3_merges_across_data_sources(uploaded, tmp_path):
    config = puppet_env.write_hiera3(tmp_path, uploaded)
    scope = puppet_env.write_scope(tmp_path)
    merged = hiera(config, scope, "--hash", "configuration")
    assert merged.returncode == 0, merged.stderr
    assert '"keystone_config"=>{"token/expiration"' in merged.stdout
    assert '"nova_config"=>{"DEFAULT/debug"' in merged.stdout  # a native merge is shallow: node over role
    (tmp_path / "yaml").mkdir()
    local = puppet_env.write_hiera3(tmp_path / "yaml", yaml_tree=HIERA_TREE)
    assert hiera(local, scope, "--hash", "configuration").stdout == merged.stdout
    gathered = hiera(config, scope, "--array", "openstack_version").stdout
    assert gathered == hiera(local, scope, "--array", "openstack_version").stdout == '["mitaka-9.0"]\n'


def test_an_unreachable_server_fails_the_hiera_lookup(tmp_path):
    config = puppet_env.write_hiera3(tmp_path, "http://127.0.0.1:9/api/v1/config")
    result = hiera(config, puppet_env.write_scope(tmp_path), "deployment_id")
    assert result.returncode != 0 and result.stdout == ""
    assert "ConfigDB at http://127.0.0.1:9/api/v1/config cannot be reached" in result.stderr


def test_use_case_4_through_puppet_lookup_and_hiera_5(uploaded, fuel_ext, tmp_path):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded)
    command = ["puppet", "lookup", "--codedir", str(codedir), "--environment", "production",
               "--node", "node-1.domain.tld", "--facts", str(puppet_env.puppet_facts(tmp_path)),
               "--render-as", "json"]
    result = subprocess.run(command + ["deployment_id"], capture_output=True, text=True,
                            env=puppet_env.ruby_environ(), timeout=120)
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    fuel_ext("config", "override", *NODE_1, "--resource", "override/plugins", "--key", "debug", "--value", "false")
    debug = subprocess.run(command + ["debug"], capture_output=True, text=True, env=puppet_env.ruby_environ())
    assert json.loads(debug.stdout) is False
    missing = subprocess.run(command + ["no_such_key"], capture_output=True, text=True, env=puppet_env.ruby_environ())
    assert missing.returncode == 1


def test_puppet_merges_data_sources_given_as_uris(uploaded, tmp_path):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, uris=puppet_env.FUEL_ORDER)
    yaml_codedir = puppet_env.write_puppet_code(tmp_path / "yaml", yaml_tree=HIERA_TREE)
    manifest = ("file {{ '{0}': content => probe::to_json([lookup('configuration', Hash, 'deep'), "
                "lookup('idle_timeout'), lookup('mongo_roles', Array, 'unique')]) }}")
    for code, out in ((codedir, tmp_path / "configdb.json"), (yaml_codedir, tmp_path / "yaml.json")):
        result = puppet_env.puppet_apply(code, manifest.format(out))
        assert result.returncode == 0, result.stderr
    deep, idle_timeout, roles = json.loads((tmp_path / "configdb.json").read_text())
    assert deep == {"nova_config": {"DEFAULT/debug": {"value": "true"}, "DEFAULT/cpu_allocation_ratio": {"value": "8.0"}},
                    "keystone_config": {"token/expiration": {"value": "7200"}}}
    assert (idle_timeout, roles) == (1800, ["primary-mongo", "mongo"])
    assert json.loads((tmp_path / "yaml.json").read_text()) == [deep, idle_timeout, roles]


def test_every_uploaded_key_reads_back_exactly_through_puppet_7(uploaded, tmp_path):
    expected = hiera_expectation(tree_sources())
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded)
    assert puppet_env.puppet_lookup_all(codedir, expected, tmp_path / "found.json") == expected


def test_an_unreachable_server_fails_the_puppet_run(tmp_path):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", "http://127.0.0.1:9/api/v1/config")
    result = puppet_env.puppet_apply(codedir, 'notice(lookup("deployment_id"))')
    assert result.returncode == 1
    assert "Error: ConfigDB at http://127.0.0.1:9/api/v1/config cannot be reached" in result.stderr
