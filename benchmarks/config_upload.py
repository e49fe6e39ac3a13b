#!/usr/bin/env python3
"""Time ``fuel-ext config upload env`` of N nodes x 7 data sources, as on a Fuel master.

For each N, a fresh database (a SQLite file, or with ``--pg-url`` a scratch PostgreSQL database next to it)
and a fresh ``nailgun-api``; a Nailgun cluster of N nodes created through the API, and a Hiera tree of
one directory per node FQDN holding the 7 Fuel data sources (astute.yaml ~100 KB, globals.yaml ~20 KB and
five small overrides, made from tests/configdb_clients/fixtures/hiera). Every node's documents have the
same size whatever N is, so the time should grow linearly in N. The command is timed as a user runs it
(a new process: Python's start and imports included).

Each ``--jobs`` value given is one timed run per N. ``--reference`` also times, in the same run and on the
same kind of fresh server, the way the command worked before issue 14: PyYAML's pure-Python loader and one PUT
at a time (``--jobs 1``).

    python benchmarks/config_upload.py --nodes 50 100 200 [--reference] [--jobs 1 4 8] \\
        [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres]
"""
import argparse
import contextlib
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

from servers import ROOT, database, nailgun_api

FIXTURES = Path(ROOT) / "tests" / "configdb_clients" / "fixtures" / "hiera"
SMALL_SOURCES = ["override/plugins", "override/configuration/cluster", "override/configuration/node",
                 "override/configuration/role", "override/node"]
#: the nodes listed in every astute.yaml's network_metadata: a fixed count keeps each document ~100 KB
LISTED_NODES = 150
FAST_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: ``fuel-ext`` as it was before issue 14: the pure-Python YAML loader (and ``--jobs 1`` on the command line)
REFERENCE = ("import sys; from nailgun_ext_configdb.cli import upload; upload.Loader = upload.HieraLoader; "
             "from nailgun_platform.client.fuel_ext import main; sys.exit(main())")


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


def timed_upload(server, env_id, tree, jobs, reference, home):
    """Seconds of one ``config upload env`` in a new process."""
    port = server.rsplit(":", 1)[1]
    command = ([sys.executable, "-c", REFERENCE] if reference else [str(Path(sys.executable).parent / "fuel-ext")])
    command += ["config", "upload", "env", "--env", str(env_id), "--dir", str(tree), "--jobs", str(jobs)]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=port, XDG_CONFIG_HOME=str(home))
    started = time.perf_counter()
    result = subprocess.run(command, env=environ, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or "Uploaded" not in result.stdout:
        raise SystemExit("upload failed ({0}): {1}{2}".format(result.returncode, result.stdout, result.stderr))
    return elapsed


def run(pg_url, count, tree, jobs, reference, scratch):
    """One timed upload on a fresh database and server."""
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(database(pg_url, "config_upload_bench", scratch))
        server = stack.enter_context(nailgun_api(db_url))
        env_id = linked_cluster(server + "/api/v1", count)
        seconds = timed_upload(server, env_id, tree, jobs, reference, scratch)
    if not pg_url:
        os.remove(db_url[len("sqlite:///"):])
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--jobs", type=int, nargs="+", default=[4],
                        help="fuel-ext's --jobs: one timed run for each value given")
    parser.add_argument("--reference", action="store_true",
                        help="also time the pure-Python loader with one PUT at a time, in the same run")
    parser.add_argument("--pg-url", help="a PostgreSQL URL whose user may create databases; default SQLite")
    args = parser.parse_args(argv)
    variants = [("libyaml, --jobs {0}".format(jobs), jobs, False) for jobs in args.jobs]
    if args.reference:
        variants.append(("reference: pure Python, --jobs 1", 1, True))
    print("load average at start: {0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg()))
    print("{0:>6} {1:>7}  {2:<34} {3:>8} {4:>11} {5:>9}".format(
        "nodes", "MB", "how", "seconds", "s per node", "load avg"), flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.nodes:
            tree = Path(scratch) / "hiera-{0}".format(count)
            size = hiera_tree(tree, count)
            for label, jobs, reference in variants:
                seconds = run(args.pg_url, count, tree, jobs, reference, scratch)
                print("{0:>6} {1:>7.1f}  {2:<34} {3:>8.1f} {4:>11.3f} {5:>9.2f}".format(
                    count, size / 1e6, label, seconds, seconds / count, os.getloadavg()[0]), flush=True)
            shutil.rmtree(tree)
    print("load average at end: {0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
