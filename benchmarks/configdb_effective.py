#!/usr/bin/env python3
"""ConfigDB under load: effective GETs for 200 nodes x 7 data sources, and a 1 MB astute.yaml upload.

What a Puppet master's Hiera backend does: for a node, GET
``/config/environments/<env>/nodes/<fqdn>/resources/<name>/values?effective``,
then revalidate with ``If-None-Match``. The script creates a scratch PostgreSQL
database, migrates it, starts ``gunicorn -w 2`` on a free loopback port, loads
generated data through the API, measures, then stops the server and drops the
database. Every loop is bounded and the data is generated from a fixed seed.

    python benchmarks/configdb_effective.py [--pg-url URL] [--nodes 200] [--requests 4000] [--clients 4]
"""
import argparse
import concurrent.futures
import os
import random
import statistics
import sys
import time
import zlib

import requests
import yaml

from nailgun_host.db import migration
from servers import database, gunicorn

SOURCES = ["astute", "globals", "override/plugins", "override/configuration/node",
           "override/configuration/role", "override/configuration/cluster", "override/node"]
SCRATCH_DB = "nailgun_configdb_bench"


def blob(rng, size):
    """A nested, astute-like document of about ``size`` bytes of JSON."""
    doc, total, section = {}, 0, 0
    while total < size:
        items = {"key_{0}".format(i): rng.choice([rng.randint(0, 10 ** 6), "value-{0}".format(rng.random()),
                                                  rng.random() < 0.5, [rng.randint(0, 99) for _ in range(5)]])
                 for i in range(20)}
        doc["section_{0}".format(section)] = {"settings": items, "enabled": True,
                                              "hosts": ["10.0.{0}.{1}".format(section % 250, i) for i in range(4)]}
        total += len(str(doc["section_{0}".format(section)]))
        section += 1
    return doc


def setup_cluster(http, api, nodes):
    release = http.post(api + "/releases/", json={"name": "Mitaka", "version": "mitaka-9.0",
                                                   "operating_system": "Ubuntu"}).json()
    cluster = http.post(api + "/clusters/", json={"name": "bench", "release_id": release["id"]}).json()
    fqdns = []
    for index in range(nodes):
        mac = "52:54:01:{0:02x}:{1:02x}:01".format(index // 256, index % 256)
        node = http.post(api + "/nodes/", json={"mac": mac, "meta": {"interfaces": [
            {"name": "eth0", "mac": mac, "pxe": True}], "disks": [{"name": "sda", "size": 100 * 1024 ** 3}]}}).json()
        http.put(api + "/nodes/{0}/".format(node["id"]), json={"cluster_id": cluster["id"], "roles": ["compute"]})
        fqdns.append(node["fqdn"])
    return cluster["id"], fqdns


def load(api, env_id, fqdns, clients):
    """Environment-wide astute and overrides, then every node's 7 data sources (astute ~100 KB)."""
    config = api + "/config"
    comp = requests.post(config + "/components", json={
        "name": "fuel", "resource_definitions": [{"name": n} for n in SOURCES]}).json()
    ids = {r["name"]: r["id"] for r in comp["resource_definitions"]}
    requests.post(config + "/environments", json={"id": env_id, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    rng = random.Random(42)
    requests.put("{0}/environments/{1}/resources/{2}/values".format(config, env_id, ids["astute"]),
                 json=blob(rng, 50000)).raise_for_status()
    requests.put("{0}/environments/{1}/resources/{2}/overrides".format(config, env_id, ids["astute"]),
                 json={"section_1": {"enabled": False}}).raise_for_status()
    sizes = {"astute": 100000, "globals": 20000}
    jobs = [(fqdn, name, blob(random.Random(zlib.crc32((fqdn + name).encode())), sizes.get(name, 1500)))
            for fqdn in fqdns for name in SOURCES]

    def upload(job):
        fqdn, name, data = job
        url = "{0}/environments/{1}/nodes/{2}/resources/{3}/values".format(config, env_id, fqdn, ids[name])
        requests.put(url, json=data).raise_for_status()
        if name == "override/node":
            requests.put(url.replace("/values", "/overrides"), json={"key_0": "pinned"}).raise_for_status()

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(upload, jobs))
    return ids, time.perf_counter() - started, len(jobs)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def run_gets(config, env_id, fqdns, count, clients, only=None, revalidate=False):
    """``count`` effective GETs spread over ``clients`` threads; (req/s, latencies in ms, bytes)."""
    rng = random.Random(7)
    targets = [(rng.choice(fqdns), only or rng.choice(SOURCES)) for _ in range(count)]
    tags = {}
    if revalidate:
        for target in set(targets):
            url = "{0}/environments/{1}/nodes/{2}/resources/{3}/values?effective".format(config, env_id, *target)
            tags[target] = requests.get(url).headers["ETag"]
    sessions = {}

    def get(target):
        http = sessions.setdefault(os.getpid() * 1000 + concurrent.futures.thread.threading.get_ident(),
                                   requests.Session())
        url = "{0}/environments/{1}/nodes/{2}/resources/{3}/values?effective".format(config, env_id, *target)
        headers = {"If-None-Match": tags[target]} if revalidate else {}
        started = time.perf_counter()
        resp = http.get(url, headers=headers)
        elapsed = time.perf_counter() - started
        assert resp.status_code == (304 if revalidate else 200), resp.status_code
        return elapsed * 1000, len(resp.content)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(get, targets))
    wall = time.perf_counter() - started
    latencies = [r[0] for r in results]
    return count / wall, latencies, statistics.mean(r[1] for r in results)


def upload_big_yaml(config, env_id, fqdn, astute_id, repeats=5):
    """Time to upload a 1 MB astute.yaml, parsed with PyYAML's safe loader (libyaml's when built in)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    timings, parse, size = [], [], 0
    url = "{0}/environments/{1}/nodes/{2}/resources/{3}/values".format(config, env_id, fqdn, astute_id)
    for attempt in range(repeats):
        text = yaml.safe_dump(blob(random.Random(1000 + attempt), 1000000), default_flow_style=False)
        size = len(text.encode())
        started = time.perf_counter()
        data = yaml.load(text, Loader=loader)
        parse.append(time.perf_counter() - started)
        started = time.perf_counter()
        requests.put(url, json=data).raise_for_status()
        timings.append(time.perf_counter() - started)
    return size, statistics.median(parse) * 1000, statistics.median(timings) * 1000, max(timings) * 1000


def report(label, rate, latencies, size):
    print("{0:<42} {1:8.1f} req/s  p50 {2:7.1f} ms  p99 {3:7.1f} ms  body {4:8.0f} B".format(
        label, rate, percentile(latencies, 0.5), percentile(latencies, 0.99), size))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", default=os.environ.get(
        "NAILGUN_BENCH_PG_URL", "postgresql+psycopg://nailgun:nailgun@127.0.0.1:5432/postgres"),
        help="a PostgreSQL URL whose user may create databases (the scratch database goes next to it)")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args(argv)
    with database(args.pg_url, SCRATCH_DB, None) as db_url:
        migration.syncdb(db_url)
        with gunicorn("nailgun_host.wsgi:application", {"NAILGUN_DB_URL": db_url}) as server:
            api = server + "/api/v1"
            with requests.Session() as http:
                env_id, fqdns = setup_cluster(http, api, args.nodes)
            ids, load_time, uploads = load(api, env_id, fqdns, args.clients)
            config = api + "/config"
            print("loaded {0} nodes x {1} data sources ({2} PUTs) in {3:.1f} s".format(
                args.nodes, len(SOURCES), uploads, load_time))
            run_gets(config, env_id, fqdns, min(200, args.requests), args.clients)  # warm-up
            report("effective GET, all 7 data sources", *run_gets(config, env_id, fqdns, args.requests, args.clients))
            report("effective GET, astute only (~100 KB merged)",
                   *run_gets(config, env_id, fqdns, args.requests // 2, args.clients, only="astute"))
            report("revalidation (If-None-Match -> 304)",
                   *run_gets(config, env_id, fqdns, args.requests, args.clients, revalidate=True))
            size, parse_ms, median_ms, worst_ms = upload_big_yaml(config, env_id, fqdns[0], ids["astute"])
            print("astute.yaml of {0:.2f} MB: safe_load {1:.0f} ms, PUT median {2:.0f} ms, max {3:.0f} ms".format(
                size / 1e6, parse_ms, median_ms, worst_ms))


if __name__ == "__main__":
    sys.exit(main())
