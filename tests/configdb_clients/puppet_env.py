"""Hiera 3 and Puppet 7 set-ups over a ConfigDB URL or over local YAML files, for tests and benchmarks."""
import json
import os
import subprocess
from pathlib import Path

import yaml

HERE = Path(__file__).parent
HIERA_LIB = HERE.parents[1] / "nailgun_ext_configdb" / "hiera" / "lib"
PUPPET_MODULE = HERE.parents[1] / "nailgun_ext_configdb" / "hiera" / "puppet" / "modules" / "configdb"
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
    environ = dict(os.environ, RUBYLIB=os.pathsep.join(filter(None, [str(HIERA_LIB), os.environ.get("RUBYLIB")])))
    environ.update(extra)
    return environ


def write_hiera3(directory, configdb_url=None, yaml_tree=None, **options):
    """A Hiera 3 ``hiera.yaml`` using the configdb backend (given a URL) or the yaml backend (given a tree)."""
    directory = Path(directory)
    if configdb_url:
        config = {":backends": ["configdb"], ":logger": "console",
                  ":configdb": dict({":url": configdb_url, ":environment": "%{fuel_environment}"},
                                    **{":" + k: v for k, v in options.items()})}
    else:
        config = {":backends": ["yaml"], ":logger": "console", ":hierarchy": FUEL_ORDER,
                  ":yaml": {":datadir": str(yaml_tree)}}
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
                      **options):
    """A Puppet code dir whose production environment's Hiera 5 layer reads ConfigDB (through
    ``configdb::data_hash`` or ``configdb::lookup_key``, with the function's ``options``) or local YAML."""
    production = Path(codedir) / "environments" / "production"
    modules = production / "modules"
    (modules / "probe" / "lib" / "puppet" / "functions" / "probe").mkdir(parents=True, exist_ok=True)
    (modules / "probe" / "lib" / "puppet" / "functions" / "probe" / "to_json.rb").write_text(TO_JSON)
    if not (modules / "configdb").exists():
        (modules / "configdb").symlink_to(PUPPET_MODULE)
    if configdb_url:
        hierarchy = [{"name": "ConfigDB", function: "configdb::" + function,
                      "options": dict({"url": configdb_url, "environment": str(environment)}, **options)}]
        if uris:
            hierarchy[0]["uris"] = uris
    else:
        hierarchy = [{"name": "Fuel YAML", "datadir": str(yaml_tree),
                      "paths": [source + ".yaml" for source in FUEL_ORDER]}]
    (production / "hiera.yaml").write_text(yaml.safe_dump({"version": 5, "hierarchy": hierarchy}))
    return Path(codedir)


def puppet_apply(codedir, manifest, fqdn="node-1.domain.tld"):
    """``puppet apply`` of a manifest as node ``fqdn``, with only the environment's Hiera layer."""
    return subprocess.run(["puppet", "apply", "--codedir", str(codedir),
                           "--hiera_config", str(Path(codedir) / "no-global-layer.yaml"),
                           "--vardir", str(Path(codedir) / "var"), "-e", manifest],
                          capture_output=True, text=True, env=ruby_environ(FACTER_fqdn=fqdn), timeout=300)


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
