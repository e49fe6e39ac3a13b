"""ConfigDB's git storage driver against the SQL driver (the reference), through a real ``nailgun-api``.

For each driver the script starts ``nailgun-api`` on a fresh SQLite database (or a scratch PostgreSQL
database with ``--pg-url``) and, with one client, writes ``--writes`` new versions of a node's astute.yaml
(the test fixture, ~3 KB, one key changed each time), then reads it ``--reads`` times as stored
(``values``) and merged (``values?effective``). It prints the median of each request in ms and git's
ratio to SQL.

    python benchmarks/storage_drivers.py [--writes 200] [--reads 500] [--pg-url postgresql+psycopg://...]
"""
import argparse
import os
import statistics
import tempfile
import time

import requests
import yaml

from servers import ROOT, database, nailgun_api

FIXTURE = os.path.join(ROOT, "tests", "configdb_clients", "fixtures", "hiera", "astute.yaml")


def timed(call, count):
    times = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(base, astute, writes, reads):
    http = requests.Session()
    rid = http.post(base + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute", "content": {}}]}).json()["resource_definitions"][0]["id"]
    http.post(base + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}).raise_for_status()
    url = "{0}/environments/1/nodes/1/resources/{1}/values".format(base, rid)
    http.put(base + "/environments/1/resources/{0}/values".format(rid), json={"debug": False}).raise_for_status()

    def put(i):
        http.put(url, json=dict(astute, deployment_id=i + 1)).raise_for_status()

    def get(suffix):
        def call(_):
            http.get(url + suffix).raise_for_status()
        return call

    return {"PUT values (new version)": timed(put, writes), "GET values": timed(get(""), reads),
            "GET values?effective": timed(get("?effective"), reads)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--pg-url", help="a PostgreSQL URL whose user may create databases (default: SQLite)")
    args = parser.parse_args()
    with open(FIXTURE) as stream:
        astute = yaml.safe_load(stream)
    results = {}
    for storage in ("sql", "git"):
        with tempfile.TemporaryDirectory() as directory, \
                database(args.pg_url, "nailgun_storage_bench_" + storage, directory) as db_url, \
                nailgun_api(db_url, {"NAILGUN_CONFIGDB_STORAGE": storage,
                                     "NAILGUN_CONFIGDB_GIT_ROOT": os.path.join(directory, "git"),
                                     "NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}) as server:
            base = server + "/api/v1/config"
            results[storage] = measure(base, astute, args.writes, args.reads)
    print("| request | sql (ms) | git (ms) | git / sql |")
    print("|---|---|---|---|")
    for name in results["sql"]:
        sql, git = results["sql"][name], results["git"][name]
        print("| {0} | {1:.1f} | {2:.1f} | {3:.2f} |".format(name, sql, git, git / sql))


if __name__ == "__main__":
    main()
