"""The configdb Puppet module and the Hiera 3 backend installed the packaged way (the real spec through rpmbuild,
``rpm --root`` into a scratch root), then the commands of docs/clients/hiera-and-puppet.md with the real ``puppet``
and ``hiera``, given the scratch root's module path and Ruby dir; and hiera-http's habits: timeouts, ``failure: graceful``, ``confine_to_keys``, ``--explain``."""
import json
import os
import shutil
import subprocess
import time
from types import SimpleNamespace

import pytest
import yaml

from tests.configdb_clients import puppet_env
from tests.configdb_clients.conftest import HIERA_TREE

pytestmark = [
    pytest.mark.skipif(not all(map(shutil.which, ("hiera", "puppet", "rpmbuild"))),
                       reason="hiera, puppet and rpm are installed by run_tests.sh (apt)"),
    # What is under test is the package's Ruby, whatever the server's database: the RPM (two minutes to build) is
    # built once, in the SQLite pass; the backends against PostgreSQL are test_hiera.py's.
    pytest.mark.skipif(bool(os.environ.get("NAILGUN_TEST_DB_URL")),
                       reason="built and run once, in the SQLite pass (test_hiera.py runs the backends on PostgreSQL)"),
]
#: a ConfigDB key of the fixture tree that confine_to_keys sends to ConfigDB; every other key stays local
CONFINED = ["mysql", "^nova::.*"]


def _run(command, **kwargs):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-2000:])
    return result.stdout


#: where the spec puts the module and the Hiera 3 backend by default: puppet-agent's module path and Ruby dir
PUPPET_MODULEDIR = "opt/puppetlabs/puppet/modules"
PUPPET_RUBYLIBDIR = "opt/puppetlabs/puppet/lib/ruby/vendor_ruby"


@pytest.fixture(scope="module")
def packaged(packaged_rpm, tmp_path_factory):
    """A scratch root holding the RPM as built for EL's puppet-agent (the run's one build): the module in
    puppet-agent's module path, the Hiera 3 backend in its Ruby's vendor dir. Returns the root-prefixed module dir
    and Ruby dir, which the commands below are given as this machine's Puppet's."""
    work = tmp_path_factory.mktemp("packaged")
    root = work / "root"
    _run(["rpm", "--root", root, "--initdb"])
    _run(["rpm", "--root", root, "-i", "--nodeps", "--noscripts", packaged_rpm["rpm"]])
    return SimpleNamespace(modules=root / PUPPET_MODULEDIR, ruby=root / PUPPET_RUBYLIBDIR)


def lookup(codedir, directory, key, packaged, *options):
    """``puppet lookup`` with the scratch root's module dir as the base module path (no RUBYLIB)."""
    return puppet_env.puppet_lookup(codedir, directory, key, "--basemodulepath", str(packaged.modules), *options)


def packaged_hiera(config, scope, key, packaged):
    """The ``hiera`` command with the scratch root's Ruby dir standing for puppet-agent's vendor dir (the only
    RUBYLIB here: on the real machine puppet-agent's Ruby searches that directory)."""
    return subprocess.run(["hiera", "-c", str(config), "--yaml", str(scope), key], capture_output=True, text=True,
                          env=dict(puppet_env.puppet_environ(), RUBYLIB=str(packaged.ruby)), timeout=120)


@pytest.fixture
def uploaded(fuel_ext, linked_env, live_server):
    fuel_ext("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    return live_server.url + "/api/v1/config"


def test_the_packaged_module_and_backend_serve_puppet_7_and_hiera(uploaded, packaged, tmp_path):
    assert (packaged.modules / "configdb" / "metadata.json").is_file()
    assert (packaged.modules / "configdb" / "lib" / "puppet_x" / "configdb" / "client.rb").is_file()
    for function in ("data_hash", "lookup_key"):
        codedir = puppet_env.write_puppet_code(tmp_path / function, uploaded, function=function, link_module=False)
        result = lookup(codedir, tmp_path, "deployment_id", packaged)
        assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
        # the module is really what Puppet found: without it on the module path, the function is unknown
        unlinked = puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id", "--basemodulepath", str(tmp_path))
        assert unlinked.returncode == 1 and unlinked.stdout == ""
    # Hiera 3 under Puppet 7 (global layer, hiera3_backend): the backend comes from the module, too
    global_layer = tmp_path / "hiera.yaml"
    global_layer.write_text(yaml.safe_dump({"version": 5, "hierarchy": [
        {"name": "ConfigDB", "hiera3_backend": "configdb", "options": {"url": uploaded, "environment": "1"}}]}))
    codedir = puppet_env.write_puppet_code(tmp_path / "hiera3", link_module=False)
    result = lookup(codedir, tmp_path, "deployment_id", packaged, "--hiera_config", str(global_layer))
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    scope = puppet_env.write_scope(tmp_path)
    result = packaged_hiera(puppet_env.write_hiera3(tmp_path, uploaded), scope, "deployment_id", packaged)
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr


def explained(result):
    """The lines the lookup functions added to ``puppet lookup --explain --render-as json``'s explanation."""
    def texts(node):
        if isinstance(node, dict):
            return node.get("texts", []) + [t for child in node.values() for t in texts(child)]
        return [t for child in node for t in texts(child)] if isinstance(node, list) else []
    assert result.returncode == 0, result.stderr
    return texts(json.loads(result.stdout.splitlines()[-1]))  # after the notices of a --compile


@pytest.mark.parametrize("function", ["data_hash", "lookup_key"])
def test_explain_shows_the_urls_and_the_cache(uploaded, tmp_path, function):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, function=function)
    lines = explained(puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id", "--explain"))
    sources = uploaded + "/environments/1/nodes/node-1.domain.tld/resources/"
    assert lines == ["ConfigDB {0}{1}/values?effective: fetched (200)".format(sources, source)
                     for source in puppet_env.FUEL_ORDER], lines
    # a key looked up after the manifest's lookups (--compile): the location was read once in the compilation
    (codedir / "environments" / "production" / "manifests").mkdir()
    (codedir / "environments" / "production" / "manifests" / "site.pp").write_text("notice(lookup('debug'))\n")
    lines = explained(puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id", "--explain", "--compile"))
    # data_hash is not called again at all: Puppet keeps the Hash it returned for the compilation
    assert lines == (["ConfigDB: cache used (this location was read earlier in the compilation)"]
                     if function == "lookup_key" else []), lines


def test_a_node_without_the_fqdn_fails_instead_of_reading_the_environment(uploaded, tmp_path):
    codedir = puppet_env.write_puppet_code(tmp_path / "code", uploaded, node="%{facts.fuel_node}")
    result = puppet_env.puppet_apply(codedir, 'notice(lookup("deployment_id"))')
    assert result.returncode == 1
    assert "Error: ConfigDB: no node to look up: the node option is empty in this scope" in result.stderr
    scope = tmp_path / "no_fqdn.yaml"
    scope.write_text(yaml.safe_dump({"fuel_environment": "1"}))
    result = subprocess.run(["hiera", "-c", str(puppet_env.write_hiera3(tmp_path, uploaded)), "--yaml", str(scope),
                             "deployment_id"], capture_output=True, text=True, env=puppet_env.ruby_environ())
    assert result.returncode != 0 and "ConfigDB: no node to look up: the fqdn fact is empty" in result.stderr


def test_with_configdb_down_confine_to_keys_lets_other_keys_resolve_from_yaml(packaged, tmp_path):
    down = puppet_env.refused_url()
    scope = puppet_env.write_scope(tmp_path)
    for name, options in (("confined", {"confine_to_keys": CONFINED}),
                          ("graceful", {"confine_to_keys": CONFINED, "failure": "graceful"}), ("plain", {})):
        (tmp_path / name).mkdir()
        codedir = puppet_env.write_puppet_code(tmp_path / name / "code", down, yaml_tree=HIERA_TREE,
                                               function="lookup_key", link_module=False, **options)
        hiera_3 = puppet_env.write_hiera3(tmp_path / name, down, yaml_tree=HIERA_TREE, **options)
        unrelated = (lookup(codedir, tmp_path, "deployment_id", packaged),
                     packaged_hiera(hiera_3, scope, "deployment_id", packaged))
        confined = (lookup(codedir, tmp_path, "mysql", packaged), packaged_hiera(hiera_3, scope, "mysql", packaged))
        if name == "plain":  # every key asks ConfigDB first, and it is down
            assert all(r.returncode != 0 and r.stdout == "" for r in unrelated), unrelated
        else:
            assert [(r.returncode, r.stdout) for r in unrelated] == [(0, "1\n")] * 2, unrelated
        if name == "graceful":  # a confined key too falls through to YAML
            assert all(r.returncode == 0 and "Mv1yTbAk" in r.stdout for r in confined), confined
        else:
            assert all(r.returncode != 0 and "Mv1yTbAk" not in r.stdout for r in confined), confined
            assert "refused: nothing listens there; check the url option (ConfigDB::Unavailable)" in confined[1].stderr


def _timed(run):
    started = time.monotonic()
    result = run()
    return result, time.monotonic() - started


@pytest.mark.parametrize("graceful", [False, True])
def test_a_hung_server_fails_a_lookup_in_about_the_read_timeout(packaged, tmp_path, graceful):
    """One read timeout (3 s here), no silent retry (one connection), not one timeout per data source; the time
    is compared with the same command against a refused port, which costs no waiting."""
    timeout = 3
    options = dict(http_read_timeout=timeout, **({"failure": "graceful"} if graceful else {}))
    scope = puppet_env.write_scope(tmp_path)
    for tool in ("hiera", "puppet"):
        results = {}
        for server in ("refused", "hung"):
            directory = tmp_path / tool / server
            directory.mkdir(parents=True)
            with puppet_env.HungServer() as hung:
                url = hung.url if server == "hung" else puppet_env.refused_url()
                if tool == "hiera":
                    config = puppet_env.write_hiera3(directory, url, yaml_tree=HIERA_TREE, **options)
                    results[server] = _timed(lambda: packaged_hiera(config, scope, "deployment_id", packaged))
                else:
                    codedir = puppet_env.write_puppet_code(directory / "code", url, yaml_tree=HIERA_TREE,
                                                           link_module=False, uris=puppet_env.FUEL_ORDER, **options)
                    results[server] = _timed(lambda: lookup(codedir, directory, "deployment_id", packaged))
                connections = len(hung.held)
        (result, hung_seconds), (_, refused_seconds) = results["hung"], results["refused"]
        assert connections == 1, (tool, connections)
        if graceful:  # the YAML level answers after the one timeout
            assert (result.returncode, result.stdout) == (0, "1\n"), (tool, result.stderr)
        else:
            assert result.returncode != 0 and result.stdout == "", (tool, result.stdout)
        if tool == "hiera" and not graceful:
            assert "did not answer within {0} s: it is hung or overloaded".format(timeout) in result.stderr
        assert timeout <= hung_seconds < refused_seconds + 2 * timeout, (tool, hung_seconds, refused_seconds)
