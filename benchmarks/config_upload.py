#!/usr/bin/env python3
"""Time ``fuel-ext config upload env`` of N nodes x 7 data sources, as on a Fuel master.

For each N and each way of running the command, a fresh database (a SQLite file, or with ``--pg-url`` a scratch
PostgreSQL database next to it) served by the production recipe (docs/operator/production.md: ``waitress-serve``
with its flags, the request log at INFO to a file, statistics, ``local`` authentication: the command sends HTTP
Basic); a Nailgun cluster of N nodes created through the API, and a Hiera tree of one directory per node FQDN
holding the 7 Fuel data sources (astute.yaml ~100 KB, globals.yaml ~20 KB and five small overrides, made from
tests/configdb_clients/fixtures/hiera). Every node's documents have the same size whatever N is, so the time
should grow linearly in N. The command is timed as a user runs it (a new process: Python's start and imports
included), with the CPU seconds it took (its parsing processes included) and those the server took meanwhile.

Each ``--jobs`` value given is one way. ``--single-puts`` also times the command with one PUT per document, as it
uploads to a server without the batch route (and as it did before issue 27's batches); ``--before`` also times the
command as it was before issue 27 (libyaml's loader composing and constructing every document), ``--reference``
as it was before issue 14 (PyYAML's pure-Python loader, one PUT at a time). The ways run in ``--rounds``
interleaved rounds (the order turned each round); each round prints every way's time and its ratio to the first
way's.

    python benchmarks/config_upload.py [--nodes 200] [--jobs 4] [--single-puts] [--before] [--reference] \\
        [--rounds 2] [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres]
"""
import argparse
import contextlib
import copy
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests
import yaml

from references import interleaved, load_average, median, waitress
from servers import ROOT, database

FIXTURES = Path(ROOT) / "tests" / "configdb_clients" / "fixtures" / "hiera"
SMALL_SOURCES = ["override/plugins", "override/configuration/cluster", "override/configuration/node",
                 "override/configuration/role", "override/node"]
#: the nodes listed in every astute.yaml's network_metadata: a fixed count keeps each document ~100 KB
LISTED_NODES = 150
FAST_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: ``fuel-ext`` as it was before issue 14: the pure-Python YAML loader (and ``--jobs 1`` on the command line)
REFERENCE = ("import sys; from nailgun_ext_configdb.cli import upload; upload.Loader = upload.HieraLoader; "
             "from nailgun_platform.client.fuel_ext import main; sys.exit(main())")
#: ``fuel-ext`` as it was before issue 27: every document composed and constructed by libyaml's loader
BEFORE = """import sys
from nailgun_ext_configdb.cli import plain_yaml
def composed(stream, loader):
    raise plain_yaml.Unusual
plain_yaml.load = composed
from nailgun_platform.client.fuel_ext import main
sys.exit(main())
"""

#: ``fuel-ext`` as it was before issue 27's batch route: one PUT per document (as against a server without it)
SINGLE_PUTS = """import sys
from nailgun_ext_configdb.cli import upload
def no_batches(items, encode):
    raise upload.NoBatchRoute()
    yield
upload.in_batches = no_batches
from nailgun_platform.client.fuel_ext import main
sys.exit(main())
"""


def fixture(name):
    with open(FIXTURES / (name + ".yaml")) as stream:
        return yaml.safe_load(stream) or {}


def network_metadata():
    """What Nailgun writes about every node of the environment into each node's astute.yaml."""
    roles = ["keystone/api", "neutron/api", "mgmt/database", "mgmt/messaging", "heat/api", "ceilometer/api",
             "swift/api", "glance/api", "nova/api", "ex", "management", "storage", "mgmt/vip", "admin/pxe"]
    nodes = {}
    for index in range(1, LISTED_NODES + 1):
        nodes["node-{0}".format(index)] = {
            "uid": str(index), "fqdn": "node-{0}.domain.tld".format(index), "name": "node-{0}".format(index),
            "node_roles": ["controller"] if index <= 3 else ["compute"], "swift_zone": str(index),
            "user_node_name": "Untitled ({0:02x}:{1:02x})".format(index // 256, index % 256),
            "network_roles": {role: "192.168.{0}.{1}".format(k, index % 250) for k, role in enumerate(roles)}}
    return {"nodes": nodes, "vips": {"management": {"ipaddr": "192.168.0.2", "namespace": "haproxy"},
                                     "public": {"ipaddr": "172.16.0.3", "namespace": "haproxy"}}}


def node_tree(directory, index, astute, globals_, small, metadata):
    """One node's /etc/hiera: the fixtures' documents made this node's, written as Nailgun writes YAML."""
    fqdn = "node-{0}.domain.tld".format(index)
    mine = dict(astute, uid=str(index), fqdn=fqdn, role="compute" if index > 3 else "controller",
                network_metadata=metadata)
    mine["network_scheme"] = copy.deepcopy(astute["network_scheme"])
    mine["network_scheme"]["endpoints"]["br-mgmt"]["IP"] = ["192.168.0.{0}/24".format(index % 250)]
    documents = {"astute": mine, "globals": dict(globals_, role=mine["role"]), **small}
    for name, data in documents.items():
        path = directory / fqdn / (name + ".yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump(data, Dumper=FAST_DUMPER, default_flow_style=False))
    return fqdn


def hiera_tree(directory, count):
    """DIR/<fqdn>/... for nodes 1..count (the FQDNs Nailgun gives a fresh database's nodes); the bytes written."""
    astute, globals_ = fixture("astute"), fixture("globals")
    globals_["node_volumes"] = [{"id": "disk-{0}".format(i), "size": 102400 + i, "type": "disk",
                                 "volumes": [{"mount": "/var/lib/nova", "size": 51200, "type": "lv", "vg": "vm"},
                                             {"mount": "/", "size": 15360, "type": "lv", "vg": "os"}]}
                                for i in range(115)]
    small = {name: fixture(name) for name in SMALL_SOURCES}
    metadata = network_metadata()
    for index in range(1, count + 1):
        node_tree(directory, index, astute, globals_, small, metadata)
    return sum(p.stat().st_size for p in directory.rglob("*.yaml"))


def linked_cluster(api, count):
    """A Nailgun cluster with nodes 1..count, FQDNs node-<id>.domain.tld; its id (the environment's)."""
    with requests.Session() as http:
        http.auth = (USER, PASSWORD)
        release = http.post(api + "/releases/", json={
            "name": "Mitaka", "version": "mitaka-9.0", "operating_system": "Ubuntu"}).json()
        cluster = http.post(api + "/clusters/", json={"name": "bench", "release_id": release["id"]}).json()
        for index in range(count):
            mac = "52:54:02:{0:02x}:{1:02x}:01".format(index // 256, index % 256)
            node = http.post(api + "/nodes/", json={"mac": mac, "meta": {"interfaces": [
                {"name": "eth0", "mac": mac, "pxe": True}]}}).json()
            http.put(api + "/nodes/{0}/".format(node["id"]),
                     json={"cluster_id": cluster["id"], "roles": ["compute"]}).raise_for_status()
            assert node["fqdn"] == "node-{0}.domain.tld".format(index + 1), node["fqdn"]
    return cluster["id"]


USER, PASSWORD = "admin", "bench-password"


@contextlib.contextmanager
def production_api(db_url, directory):
    """``nailgun_host.wsgi`` as docs/operator/production.md runs it: ``waitress-serve`` with the recipe's flags,
    its settings file (the request log at INFO to a file, statistics on, ``local`` authentication with a users
    file, a key repository), migrated by ``nailgun-syncdb`` and with an admin added by ``nailgun-users``."""
    root = Path(directory) / "production"
    root.mkdir()
    settings = root / "settings.yaml"
    settings.write_text(yaml.safe_dump({
        "DATABASE_URL": db_url, "LOG": {"file": str(root / "api.log"), "level": "INFO"},
        "AUTH": {"method": "local", "users_file": str(root / "users.yaml")},
        "SECRETS": {"key_repository": str(root / "fernet-keys")}}))
    environ = dict(os.environ, NAILGUN_CONFIG=str(settings))  # what `served` gives the server too
    binaries = Path(sys.executable).parent
    subprocess.run([str(binaries / "nailgun-syncdb")], env=environ, check=True, capture_output=True)
    subprocess.run([str(binaries / "nailgun-users"), "set", USER, "--role", "admin"], input=PASSWORD + "\n",
                   text=True, env=environ, check=True, capture_output=True)
    with waitress("nailgun_host.wsgi:application", env=environ) as url:
        yield url
    shutil.rmtree(root)


def cpu_seconds(process):
    times = process.cpu_times()
    return times.user + times.system


def children_cpu_seconds():
    """CPU seconds of this process's ended children, theirs included (``fuel-ext`` and its parsing processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_process(url):
    """The process serving ``url`` (the recipe's waitress-serve)."""
    listen = "--listen=127.0.0.1:{0}".format(url.rsplit(":", 1)[1])
    return next(p for p in psutil.process_iter(["cmdline"]) if listen in (p.info["cmdline"] or []))


def timed_upload(server, env_id, tree, jobs, code, home):
    """``(seconds, the command's CPU seconds, the server's)`` of one ``config upload env`` in a new process
    (``code``: the Python it runs instead of ``fuel-ext``)."""
    port = server.rsplit(":", 1)[1]
    command = ([sys.executable, "-c", code] if code else [str(Path(sys.executable).parent / "fuel-ext")])
    command += ["config", "upload", "env", "--env", str(env_id), "--dir", str(tree), "--jobs", str(jobs)]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=port, XDG_CONFIG_HOME=str(home),
                   OS_USERNAME=USER, OS_PASSWORD=PASSWORD)
    serving = server_process(server)
    client_before, server_before = children_cpu_seconds(), cpu_seconds(serving)
    started = time.perf_counter()
    result = subprocess.run(command, env=environ, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or "Uploaded" not in result.stdout:
        raise SystemExit("upload failed ({0}): {1}{2}".format(result.returncode, result.stdout, result.stderr))
    return elapsed, children_cpu_seconds() - client_before, cpu_seconds(serving) - server_before


def run(pg_url, count, tree, jobs, code, scratch):
    """One timed upload on a fresh database and server."""
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(database(pg_url, "nailgun_upload_bench", scratch))
        server = stack.enter_context(production_api(db_url, scratch))
        env_id = linked_cluster(server + "/api/v1", count)
        timed = timed_upload(server, env_id, tree, jobs, code, scratch)
    if not pg_url:
        os.remove(db_url[len("sqlite:///"):])
    return timed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[200])
    parser.add_argument("--jobs", type=int, nargs="+", default=[4], help="fuel-ext's --jobs: one way for each value")
    parser.add_argument("--before", action="store_true",
                        help="also time the command as it was before issue 27 (libyaml's loader), first --jobs")
    parser.add_argument("--single-puts", action="store_true",
                        help="also time one PUT per document (the command before the batch route), first --jobs")
    parser.add_argument("--reference", action="store_true",
                        help="also time the pure-Python loader with one PUT at a time (before issue 14)")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every way")
    parser.add_argument("--pg-url", help="a PostgreSQL URL whose user may create databases; default SQLite")
    args = parser.parse_args(argv)
    ways = {"libyaml events, --jobs {0}".format(jobs): (jobs, None) for jobs in args.jobs}
    if args.single_puts:
        ways["one PUT per document, --jobs {0}".format(args.jobs[0])] = (args.jobs[0], SINGLE_PUTS)
    if args.before:
        ways["before issue 27: loader, --jobs {0}".format(args.jobs[0])] = (args.jobs[0], BEFORE)
    if args.reference:
        ways["before issue 14: pure Python, --jobs 1"] = (1, REFERENCE)
    first = next(iter(ways))
    print("{0}, load average at start: {1}".format("PostgreSQL" if args.pg_url else "SQLite", load_average()))
    print("{0:>6} {1:>7}  {2:<38} {3:>8} {4:>9} {5:>10} {6:>10} {7:>15}".format(
        "nodes", "MB", "how", "seconds", "s/node", "client CPU", "server CPU", "load avg"), flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.nodes:
            tree = Path(scratch) / "hiera-{0}".format(count)
            size = hiera_tree(tree, count)

            def measure(way):
                label, (jobs, code) = way
                seconds, client, server = run(args.pg_url, count, tree, jobs, code, scratch)
                print("{0:>6} {1:>7.1f}  {2:<38} {3:>8.1f} {4:>9.3f} {5:>10.1f} {6:>10.1f} {7:>15}".format(
                    count, size / 1e6, label, seconds, seconds / count, client, server, load_average()),
                    flush=True)
                return seconds

            found = interleaved({label: (label, way) for label, way in ways.items()}, args.rounds, measure)
            for label, times in found.items():
                print("{0:>6} {1:<46} median {2:.1f} s, x{3:.2f} the first way's (per round: {4})".format(
                    count, label, median(times), median([t / f for t, f in zip(times, found[first])]),
                    ", ".join("{0:.2f}".format(t / f) for t, f in zip(times, found[first]))), flush=True)
            shutil.rmtree(tree)
    print("load average at end: {0}".format(load_average()))


if __name__ == "__main__":
    sys.exit(main())
