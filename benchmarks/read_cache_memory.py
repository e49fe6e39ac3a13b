#!/usr/bin/env python3
"""A worker's resident memory under many reads of many nodes, with the read cache at its default, smaller, and off.

For each ``READ_CACHE.max_bytes`` given, ``gunicorn -w 2`` serves a fresh database loaded as
``configdb_effective.py`` loads it (a cluster of N nodes, the 7 Fuel data sources per node, astute ~100 KB), then
4 client threads send mixed reads over random (node, data source) pairs: effective by name, effective by id,
``show_lookup``, plain values, and revalidations. The workers' resident memory (VmRSS) is printed after the load
and after every fifth of the reads: with the cache it must level off at most ``max_bytes`` above the cache-less
run's, whatever the number of distinct answers.

    python benchmarks/read_cache_memory.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] \\
        [--nodes 200] [--reads 10000] [--max-bytes 67108864 16777216 0]
"""
import argparse
import concurrent.futures
import os
import random
import sys
import tempfile
import threading

import requests
import yaml

from configdb_effective import SOURCES, load, setup_cluster
from servers import ROOT, database, gunicorn

sys.path.insert(0, ROOT)

from nailgun_host.db import migration  # noqa: E402

SCRATCH_DB = "nailgun_read_cache_memory"


def workers(port):
    """The pids of gunicorn's workers serving ``port`` (the processes whose parent serves it too)."""
    serving = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/{0}/cmdline".format(pid), "rb") as stream:
                command = stream.read().split(b"\0")
            with open("/proc/{0}/stat".format(pid)) as stream:
                parent = int(stream.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if any(b"gunicorn" in part for part in command) and "127.0.0.1:{0}".format(port).encode() in command:
            serving[int(pid)] = parent
    return sorted(pid for pid, parent in serving.items() if parent in serving)


def rss_mb(pid):
    with open("/proc/{0}/status".format(pid)) as stream:
        kilobytes = next(int(line.split()[1]) for line in stream if line.startswith("VmRSS:"))
    return kilobytes / 1024


def reads(config, env_id, fqdns, ids, count, clients):
    """``count`` mixed reads from ``clients`` threads, in fifths; yields after each fifth."""
    rng = random.Random(11)
    forms = ["{0}/values?effective", "{1}/values?effective", "{0}/values?effective&show_lookup", "{1}/values"]
    targets = [(rng.choice(fqdns), rng.choice(SOURCES), rng.choice(forms)) for _ in range(count)]
    local = threading.local()

    def get(target):
        fqdn, name, form = target
        if not hasattr(local, "http"):
            local.http = requests.Session()  # one kept-alive connection per client thread
        http = local.http
        url = "{0}/environments/{1}/nodes/{2}/resources/".format(config, env_id, fqdn) + form.format(name, ids[name])
        answer = http.get(url)
        answer.raise_for_status()
        if answer.status_code == 200:  # and revalidate it
            assert http.get(url, headers={"If-None-Match": answer.headers["ETag"]}).status_code == 304

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for fifth in range(5):
            list(pool.map(get, targets[fifth * count // 5:(fifth + 1) * count // 5]))
            yield (fifth + 1) * count // 5


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="run on PostgreSQL (a user that may create databases) instead of SQLite")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--reads", type=int, default=10000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--max-bytes", type=int, nargs="+", default=[64 * 1024 * 1024, 16 * 1024 * 1024, 0])
    args = parser.parse_args(argv)
    print("| READ_CACHE.max_bytes | after the load (MB, each worker) | " + " | ".join(
        "after {0} reads".format((fifth + 1) * args.reads // 5) for fifth in range(5)) + " |")
    print("|---|---|" + "---|" * 5)
    for max_bytes in args.max_bytes:
        with tempfile.TemporaryDirectory() as directory, database(args.pg_url, SCRATCH_DB, directory) as db_url:
            migration.syncdb(db_url)
            config_file = os.path.join(directory, "settings.yaml")
            with open(config_file, "w") as stream:
                yaml.safe_dump({"READ_CACHE": {"max_bytes": max_bytes}}, stream)
            env = {"NAILGUN_DB_URL": db_url, "NAILGUN_CONFIG": config_file,
                   "NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}
            with gunicorn("nailgun_host.wsgi:application", env) as server:
                api = server + "/api/v1"
                with requests.Session() as http:
                    env_id, fqdns = setup_cluster(http, api, args.nodes)
                ids, _, _ = load(api, env_id, fqdns, args.clients)
                pids = workers(int(server.rsplit(":", 1)[1]))

                def memory():
                    return " / ".join("{0:.0f}".format(rss_mb(pid)) for pid in pids)

                row = [memory()]
                for _ in reads(api + "/config", env_id, fqdns, ids, args.reads, args.clients):
                    row.append(memory())
            print("| {0} | {1} |".format(max_bytes, " | ".join(row)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
