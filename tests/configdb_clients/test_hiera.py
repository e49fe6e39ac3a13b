"""The real ``hiera`` (Hiera 3) and ``puppet`` (Puppet 7, Hiera 5) reading a live ConfigDB."""
import json
import shutil
import subprocess

import pytest

from nailgun_platform.client.base import APIClient
from nailgun_ext_configdb.cli.paths import ROOT
from tests.auth import auth_server, local_settings
from tests.commands import IN_PROCESS
from tests.configdb_clients import puppet_env
from tests.configdb_clients.conftest import FUEL2, HIERA_TREE, hiera_expectation, tree_sources

pytestmark = pytest.mark.skipif(not (shutil.which("hiera") and shutil.which("puppet")),
                                reason="hiera and puppet are installed by run_tests.sh (apt)")
NODE_1 = ("--env", "1", "--level", "node=node-1.domain.tld")
#: the Hiera 5 functions of the configdb module: data_hash (recommended: one call per location) and lookup_key
FUNCTIONS = pytest.mark.parametrize("function", ["data_hash", "lookup_key"])


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
    assert "Connection to ConfigDB at 127.0.0.1:9 refused: nothing listens there" in result.stderr


@FUNCTIONS
def test_use_case_4_through_puppet_lookup_and_hiera_5(uploaded, fuel_ext, tmp_path, function):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, function=function)
    result = puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id")
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    fuel_ext("config", "override", *NODE_1, "--resource", "override/plugins", "--key", "debug", "--value", "false")
    assert json.loads(puppet_env.puppet_lookup(codedir, tmp_path, "debug").stdout) is False
    assert puppet_env.puppet_lookup(codedir, tmp_path, "no_such_key").returncode == 1


@FUNCTIONS
def test_puppet_merges_data_sources_given_as_uris(uploaded, tmp_path, function):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, uris=puppet_env.FUEL_ORDER, function=function)
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


@FUNCTIONS
def test_every_uploaded_key_reads_back_exactly_through_puppet_7(uploaded, tmp_path, function):
    expected = hiera_expectation(tree_sources())
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, function=function)
    assert puppet_env.puppet_lookup_all(codedir, expected, tmp_path / "found.json") == expected


@FUNCTIONS
def test_an_unreachable_server_fails_the_puppet_run(tmp_path, function):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", "http://127.0.0.1:9/api/v1/config", function=function)
    result = puppet_env.puppet_apply(codedir, 'notice(lookup("deployment_id"))')
    assert result.returncode == 1
    assert "Connection to ConfigDB at 127.0.0.1:9 refused: nothing listens there" in result.stderr


# -- with authentication (issue 10): a server in local or keystone mode on the test database ----------------

#: the Puppet master's identity: roles reader and hiera (it sees secrets), in Keystone and the users file
HIERA = {"auth_user": "hiera", "auth_pass": "hiera-pw"}
#: an identity that reads secrets masked
READER = {"auth_user": "reader", "auth_pass": "reader-pw"}
#: one Ruby process: a lookup, the process's Keystone token revoked, the data store emptied, the lookup again
RENEWAL = """require 'hiera'
require 'json'
require 'yaml'
require 'puppet_x/configdb/client'
hiera = Hiera.new(config: ARGV[0])
scope = YAML.load_file(ARGV[1])
first = hiera.lookup('deployment_id', nil, scope)
options = ConfigDB::Client::DEFAULTS.merge(Hiera::Config[:configdb].to_h { |k, v| [k.to_s, v] })
token = ConfigDB::Keystone.token(options)
uri = URI(ConfigDB::Keystone.tokens_url(options))
revoked = Net::HTTP.start(uri.host, uri.port) do |http|
  http.delete(uri.path, 'X-Auth-Token' => token, 'X-Subject-Token' => token).code
end
ConfigDB::Client.lock.synchronize { ConfigDB::Client.store.clear }
second = hiera.lookup('deployment_id', nil, scope)
puts JSON.generate('first' => first, 'revoked' => revoked, 'second' => second,
                   'renewed' => ConfigDB::Keystone.token(options) != token)
"""


def _identity(mode, request, user):
    """The backends' options for ``user`` (HIERA or READER) in ``mode``: Keystone tokens or HTTP Basic."""
    if mode == "keystone":
        return dict(user, keystone_url=request.getfixturevalue("keystone").auth_url)
    return dict(user)


@pytest.fixture(params=["local", "keystone"])
def secured(request, uploaded, db_url):
    """(the ConfigDB URL of a server in that mode, the credentials the backends are given, the mode)."""
    settings = request.getfixturevalue("keystone").settings() if request.param == "keystone" else local_settings()
    server = auth_server(db_url, settings)
    yield server.url + "/api/v1/config", _identity(request.param, request, HIERA), request.param
    server.stop()


def test_hiera_3_and_puppet_7_read_with_credentials(secured, tmp_path):
    url, credentials, mode = secured
    scope = puppet_env.write_scope(tmp_path)
    variants = [credentials] + ([HIERA] if mode == "keystone" else [])  # keystone mode takes Basic too
    for number, options in enumerate(variants):
        directory = tmp_path / str(number)
        directory.mkdir()
        result = hiera(puppet_env.write_hiera3(directory, url, **options), scope, "deployment_id")
        assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
        result = puppet_env.puppet_lookup(puppet_env.write_puppet_code(directory / "code", url, **options), directory,
                               "deployment_id")
        assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr


def test_no_or_wrong_credentials_fail_the_lookup(secured, tmp_path):
    url, credentials, mode = secured
    scope = puppet_env.write_scope(tmp_path)
    anonymous = hiera(puppet_env.write_hiera3(tmp_path, url), scope, "deployment_id")
    assert anonymous.returncode != 0 and anonymous.stdout == ""
    assert "ConfigDB refused the credentials of a request without credentials" in anonymous.stderr
    (tmp_path / "wrong").mkdir()
    wrong = dict(credentials, auth_pass="not-the-password")
    refused = hiera(puppet_env.write_hiera3(tmp_path / "wrong", url, **wrong), scope, "deployment_id")
    assert refused.returncode != 0 and refused.stdout == ""
    assert ("Keystone at {0}/auth/tokens refused user 'hiera'".format(credentials["keystone_url"])
            if mode == "keystone" else "ConfigDB refused the credentials of user 'hiera' (HTTP Basic) (401)") \
        in refused.stderr
    assert "not-the-password" not in refused.stderr
    run = puppet_env.puppet_apply(puppet_env.write_puppet_code(tmp_path / "code", url, **wrong),
                                  'notice(lookup("deployment_id"))')
    assert run.returncode == 1 and "refused" in run.stderr and "not-the-password" not in run.stderr


def test_a_revoked_keystone_token_is_renewed_once(uploaded, db_url, keystone, tmp_path):
    server = auth_server(db_url, keystone.settings())
    try:
        config = puppet_env.write_hiera3(tmp_path, server.url + "/api/v1/config", keystone_url=keystone.auth_url,
                                         **HIERA)
        script = tmp_path / "renewal.rb"
        script.write_text(RENEWAL)
        result = subprocess.run(["ruby", str(script), str(config), str(puppet_env.write_scope(tmp_path))],
                                capture_output=True, text=True, env=puppet_env.ruby_environ(), timeout=120)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"first": 1, "revoked": "204", "second": 1, "renewed": True}


def test_hiera_and_puppet_over_https_trust_only_the_ssl_ca_cert(uploaded, db_url, tls, tmp_path):
    server = auth_server(db_url, local_settings(), tls=tls)
    try:
        url = server.url + "/api/v1/config"
        assert url.startswith("https://")
        scope = puppet_env.write_scope(tmp_path)
        for name, ca_file in (("right", tls.ca_file), ("wrong", tls.wrong_ca_file)):
            directory = tmp_path / name
            directory.mkdir()
            options = dict(HIERA, ssl_ca_cert=str(ca_file))
            looked_up = hiera(puppet_env.write_hiera3(directory, url, **options), scope, "deployment_id")
            applied = puppet_env.puppet_apply(puppet_env.write_puppet_code(directory / "code", url, **options),
                                              'notice("deployment_id=${lookup("deployment_id")}")')
            if name == "right":
                assert (looked_up.returncode, looked_up.stdout) == (0, "1\n"), looked_up.stderr
                assert applied.returncode == 0 and "deployment_id=1" in applied.stdout, applied.stderr
            else:
                untrusted = "is signed by a CA not in the CA file {0} (ssl_ca_cert)".format(ca_file)
                assert looked_up.returncode != 0 and untrusted in looked_up.stderr
                assert applied.returncode == 1 and untrusted in applied.stderr
    finally:
        server.stop()


# -- secrets (issue 11): only an identity with the hiera role gets clear values; others fail the lookup ------

ROOT_PASSWORD = "Mv1yTbAk"  # astute.yaml's mysql.root_password in the fixture tree


def test_a_password_reads_in_clear_with_the_hiera_role_and_fails_with_a_reader(secured, request, tmp_path):
    """Hiera 3 and Puppet 7 (Hiera 5), in local and keystone mode: the hiera identity gets the password, a reader's
    lookup fails naming the fix, and neither the value nor the mask reaches Puppet."""
    url, hiera_identity, mode = secured
    scope = puppet_env.write_scope(tmp_path)
    for name, options in (("hiera", hiera_identity), ("reader", _identity(mode, request, READER))):
        directory = tmp_path / name
        directory.mkdir()
        hiera_3 = hiera(puppet_env.write_hiera3(directory, url, **options), scope, "mysql")
        codedir = puppet_env.write_puppet_code(directory / "code", url, **options)
        hiera_5 = puppet_env.puppet_lookup(codedir, directory, "mysql.root_password")
        manifest = 'notice("root=${lookup("mysql")["root_password"]}")'
        applied = puppet_env.puppet_apply(codedir, manifest)
        by_key = puppet_env.puppet_apply(puppet_env.write_puppet_code(directory / "code-lookup-key", url,
                                                                      function="lookup_key", **options), manifest)
        if name == "hiera":
            assert hiera_3.returncode == 0 and '"root_password"=>"{0}"'.format(ROOT_PASSWORD) in hiera_3.stdout, \
                hiera_3.stderr
            assert (hiera_5.returncode, json.loads(hiera_5.stdout)) == (0, ROOT_PASSWORD), hiera_5.stderr
            for result in (applied, by_key):
                assert result.returncode == 0 and "root=" + ROOT_PASSWORD in result.stdout, result.stderr
            continue
        message = "the identity 'reader' may not read secrets: give it the hiera role"
        assert "Error: ConfigDB: " + message in by_key.stderr, by_key.stderr
        for result in (hiera_3, hiera_5, applied, by_key):
            assert result.returncode != 0, (result.stdout, result.stderr)
            assert ROOT_PASSWORD not in result.stdout + result.stderr
            assert "<secret>" not in result.stdout and "root=" not in result.stdout
        # puppet lookup keeps a failed lookup's message for --explain; a catalog's compilation shows it
        assert message in hiera_3.stderr and "Error: ConfigDB: " + message in applied.stderr, applied.stderr
        # a key that is no secret fails too: the backend of a reader is a misconfiguration, found at once
        plain = hiera(puppet_env.write_hiera3(directory, url, **options), scope, "deployment_id")
        assert plain.returncode != 0 and message in plain.stderr


# -- node names (issue 26): one rule, the server's; a node stored nothing for is no silent nil ---------------

NODE_2 = "node-2.domain.tld"


@pytest.fixture
def unlinked(fuel_ext, env, live_server):
    """The issue's environment: ConfigDB environment 1 created before cluster 1 (``"linked": false``), so its
    ``nodes`` values are the names they are written under, whatever nodes cluster 1 has."""
    api = APIClient(root=live_server.url)
    component = api.post(ROOT + "components", {"name": "fuel"})
    api.post(ROOT + "environments", {"id": 1, "components": [component["id"]], "hierarchy_levels": ["nodes"],
                                     "linked": False})
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    assert cluster["id"] == 1 and [n["fqdn"] for n in env.nodes] == ["node-1.domain.tld", NODE_2]
    return live_server.url + "/api/v1/config"


def _unknown(url, node):
    return ("ConfigDB stores nothing for the node of {0}/environments/1/nodes/{1}/resources/override/node/values"
            "?effective in its environment, only for other nodes").format(url, node)


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_hiera_3_reads_an_unlinked_environment_by_the_name_uploaded_under(fuel, unlinked, tmp_path):
    """``upload --node <fqdn>`` writes where the backend reads (it wrote ``nodes/1``, and ``hiera`` printed nil);
    a node stored nothing for fails the lookup, or with ``unknown_node: warn`` warns: never a silent nil."""
    fuel("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    config = puppet_env.write_hiera3(tmp_path, unlinked)
    result = hiera(config, puppet_env.write_scope(tmp_path), "deployment_id")
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    other = hiera(config, puppet_env.write_scope(tmp_path, fqdn=NODE_2), "deployment_id")
    assert other.returncode != 0 and other.stdout == "", other.stdout
    assert _unknown(unlinked, NODE_2) in other.stderr, other.stderr
    (tmp_path / "warn").mkdir()
    warned = hiera(puppet_env.write_hiera3(tmp_path / "warn", unlinked, unknown_node="warn"),
                   puppet_env.write_scope(tmp_path, fqdn=NODE_2), "deployment_id")
    assert (warned.returncode, warned.stdout) == (0, "nil\n"), warned.stderr
    assert _unknown(unlinked, NODE_2) + ": is the node" in warned.stderr and "unknown_node: warn" in warned.stderr


@FUNCTIONS
def test_puppet_7_fails_a_lookup_for_a_node_an_unlinked_environment_has_no_data_for(
        fuel_ext, unlinked, tmp_path, function):
    """The issue's case: the data uploaded under ``nodes/1`` (what fuel2 did), Puppet looking node-1 up by FQDN."""
    fuel_ext("config", "upload", "--env", "1", "--node", "1", "--dir", HIERA_TREE)
    codedir = puppet_env.write_puppet_code(tmp_path / "code", unlinked, function=function)
    looked_up = puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id")
    assert (looked_up.returncode, looked_up.stdout) == (1, ""), looked_up.stderr  # no value, no nil
    # puppet lookup tells a data provider's error only when asked to explain (a compilation shows it as an Error)
    explained = puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id", "--explain", "--render-as", "s")
    assert _unknown(unlinked, "node-1.domain.tld") in explained.stdout, explained.stdout + explained.stderr
    applied = puppet_env.puppet_apply(codedir, 'notice(lookup("deployment_id"))')
    assert applied.returncode == 1 and "Error: " + _unknown(unlinked, "node-1.domain.tld") in applied.stderr, \
        applied.stderr
    warned = puppet_env.puppet_apply(puppet_env.write_puppet_code(tmp_path / "warn", unlinked, function=function,
                                                                  unknown_node="warn"),
                                     'notice("deployment_id=${lookup("deployment_id", undef, undef, "none")}")')
    assert warned.returncode == 0 and "deployment_id=none" in warned.stdout, warned.stderr
    assert _unknown(unlinked, "node-1.domain.tld") in warned.stderr
