"""Hiera 3 and Puppet 7 set-ups over a ConfigDB URL or over local YAML files, for tests and benchmarks."""
import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import yaml

HERE = Path(__file__).parent
#: the configdb Puppet module; its lib/ holds the Hiera 3 backend and the client too
PUPPET_MODULE = HERE.parents[1] / "nailgun_ext_configdb" / "hiera" / "configdb"
FUEL_ORDER = ["override/node", "override/plugins", "override/configuration/node",
              "override/configuration/role", "override/configuration/cluster", "globals", "astute"]
#: a test-only function: Puppet 7 has no to_json without stdlib
TO_JSON = """Puppet::Functions.create_function(:'probe::to_json') do
  def to_json(value)
    require 'json'
    JSON.generate(value)
  end
end
"""
#: looks every key up through Hiera's Ruby API in one process, timing the lookups
HIERA_ALL = """require 'hiera'
require 'json'
require 'yaml'
hiera = Hiera.new(config: ARGV[0])
scope = YAML.load_file(ARGV[1])
keys = JSON.parse(File.read(ARGV[2]))
start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
values = keys.to_h { |key| [key, hiera.lookup(key, nil, scope)] }
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - start
puts JSON.generate('seconds' => seconds, 'values' => values)
"""


def ruby_environ(**extra):
    """For the ``hiera`` command and plain Ruby: the module's lib/ on Ruby's load path, where the RPM puts
    the Hiera 3 backend and its client (Puppet needs none of it: it loads them from the module path)."""
    lib = PUPPET_MODULE / "lib"
    environ = dict(os.environ, RUBYLIB=os.pathsep.join(filter(None, [str(lib), os.environ.get("RUBYLIB")])))
    environ.update(extra)
    return environ


def puppet_environ(**extra):
    """For ``puppet``: no RUBYLIB, as an operator runs it."""
    environ = {k: v for k, v in os.environ.items() if k != "RUBYLIB"}
    environ.update(extra)
    return environ


def write_hiera3(directory, configdb_url=None, yaml_tree=None, **options):
    """A Hiera 3 ``hiera.yaml`` using the configdb backend (given a URL), the yaml backend (given a tree), or
    both, configdb first."""
    directory = Path(directory)
    config = {":backends": [], ":logger": "console"}
    if configdb_url:
        config[":backends"].append("configdb")
        config[":configdb"] = dict({":url": configdb_url, ":environment": "%{fuel_environment}"},
                                   **{":" + k: v for k, v in options.items()})
    if yaml_tree:
        config[":backends"].append("yaml")
        config.update({":hierarchy": FUEL_ORDER, ":yaml": {":datadir": str(yaml_tree)}})
    path = directory / "hiera.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write_scope(directory, fqdn="node-1.domain.tld", environment=1):
    path = Path(directory) / "test_scope.yaml"
    path.write_text(yaml.safe_dump({"fqdn": fqdn, "fuel_environment": str(environment)}))
    return path


def hiera_all(config, scope, keys, directory):
    """{"values": {key: value}, "seconds": time spent in the lookups} from one Ruby process."""
    keys_file = Path(directory) / "keys.json"
    keys_file.write_text(json.dumps(sorted(keys)))
    script = Path(directory) / "hiera_all.rb"
    script.write_text(HIERA_ALL)
    result = subprocess.run(["ruby", str(script), str(config), str(scope), str(keys_file)],
                            capture_output=True, text=True, env=ruby_environ(), timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def write_puppet_code(codedir, configdb_url=None, yaml_tree=None, environment=1, uris=None, function="data_hash",
                      link_module=True, **options):
    """A Puppet code dir whose production environment's Hiera 5 layer reads ConfigDB (through
    ``configdb::data_hash`` or ``configdb::lookup_key``, with the function's ``options``), local YAML, or
    both, ConfigDB first. The configdb module is linked into the environment (as r10k would put it) unless
    ``link_module`` is false (it is then found on the base module path, where the RPM installs it)."""
    production = Path(codedir) / "environments" / "production"
    modules = production / "modules"
    (modules / "probe" / "lib" / "puppet" / "functions" / "probe").mkdir(parents=True, exist_ok=True)
    (modules / "probe" / "lib" / "puppet" / "functions" / "probe" / "to_json.rb").write_text(TO_JSON)
    if link_module and not (modules / "configdb").exists():
        (modules / "configdb").symlink_to(PUPPET_MODULE)
    hierarchy = []
    if configdb_url:
        hierarchy.append({"name": "ConfigDB", function: "configdb::" + function,
                          "options": dict({"url": configdb_url, "environment": str(environment)}, **options)})
        if uris:
            hierarchy[0]["uris"] = uris
    if yaml_tree:
        hierarchy.append({"name": "Fuel YAML", "datadir": str(yaml_tree),
                          "paths": [source + ".yaml" for source in FUEL_ORDER]})
    (production / "hiera.yaml").write_text(yaml.safe_dump({"version": 5, "hierarchy": hierarchy}))
    return Path(codedir)


def puppet_apply(codedir, manifest, fqdn="node-1.domain.tld"):
    """``puppet apply`` of a manifest as node ``fqdn``, with only the environment's Hiera layer."""
    return subprocess.run(["puppet", "apply", "--codedir", str(codedir),
                           "--hiera_config", str(Path(codedir) / "no-global-layer.yaml"),
                           "--vardir", str(Path(codedir) / "var"), "-e", manifest],
                          capture_output=True, text=True, env=puppet_environ(FACTER_fqdn=fqdn), timeout=300)


def lookup_all_manifest(keys, out_file):
    """A manifest looking every key up and writing {key: value} as JSON; it notices how long the lookups
    took (``lookups took N seconds``, from Puppet's clock: the first lookup loads the Hiera layer)."""
    return ("$names = {0}\n$started = Timestamp()\n"
            "$found = $names.reduce({{}}) |$memo, $key| {{ $memo + {{ $key => lookup($key) }} }}\n"
            "notice(\"lookups took ${{Float(Timestamp() - $started)}} seconds\")\n"
            "file {{ '{1}': content => probe::to_json($found) }}\n").format(json.dumps(sorted(keys)), out_file)


def puppet_lookup_all(codedir, keys, out_file):
    """Every key looked up by one ``puppet apply``: {key: value}."""
    result = puppet_apply(codedir, lookup_all_manifest(keys, out_file))
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(Path(out_file).read_text())


def puppet_facts(directory, fqdn="node-1.domain.tld"):
    hostname, _, domain = fqdn.partition(".")
    path = Path(directory) / "facts.json"
    path.write_text(json.dumps({"fqdn": fqdn, "hostname": hostname, "domain": domain, "clientcert": fqdn}))
    return path


def puppet_lookup(codedir, directory, key, *options, fqdn="node-1.domain.tld"):
    """``puppet lookup`` of ``key`` as docs/clients/hiera-and-puppet.md runs it (no RUBYLIB), with extra ``options``."""
    return subprocess.run(["puppet", "lookup", "--codedir", str(codedir), "--environment", "production",
                           "--node", fqdn, "--facts", str(puppet_facts(directory, fqdn)), "--render-as", "json",
                           *options, key], capture_output=True, text=True, env=puppet_environ(), timeout=300)


class HungServer:
    """A ConfigDB that accepts connections and never answers; counts them (a silent retry opens a second)."""

    def __init__(self):
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:{0}/api/v1/config".format(self._socket.getsockname()[1])
        self.held = []
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self):
        while True:
            try:
                self.held.append(self._socket.accept()[0])
            except OSError:  # closed
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._socket.close()
        for connection in self.held:
            connection.close()


def refused_url():
    """A ConfigDB URL where nothing listens (ConfigDB down): a port just bound and released."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return "http://127.0.0.1:{0}/api/v1/config".format(probe.getsockname()[1])
