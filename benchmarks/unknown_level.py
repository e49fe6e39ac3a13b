#!/usr/bin/env python3
"""What ``X-Level-Unknown`` costs an effective GET in a large environment (issue 26).

Every effective GET at a node asks whether the environment stores anything for that node while it stores data for
others. The script creates a scratch PostgreSQL database, writes an unlinked environment of N nodes × 7 data
sources straight into its tables (an API load of 70,000 PUTs would take an hour), starts ``gunicorn -w 2`` and
times effective GETs, each at a URL not asked before (so the read cache computes every answer): at the environment
level (no node, no check: the reference), at stored nodes, and at nodes stored nothing for (the header's case).

    python benchmarks/unknown_level.py [--pg-url URL] [--nodes 10000] [--requests 300]
"""
import argparse
import os
import statistics
import time

import requests
import sqlalchemy as sa

from nailgun_host.db import migration
from servers import database, gunicorn

SCRATCH_DB = "nailgun_unknown_level_bench"
SOURCES = 7


def load(api, db_url, nodes):
    """The component and the environment through the API (pins and all), the documents straight into the table."""
    component = requests.post(api + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "source{0}".format(n)} for n in range(SOURCES)]}).json()
    requests.post(api + "/environments", json={"id": 1, "components": [component["id"]],
                                               "hierarchy_levels": ["nodes"], "linked": False}).raise_for_status()
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO configdb_documents (environment_id, resource_definition_id, level_path, kind, version, "
            "revision, data) SELECT 1, d.id, 'nodes/node-' || n || '.domain.tld', 'values', 1, 1, '{\"k\": 1}' "
            "FROM generate_series(1, :nodes) n, configdb_resource_definitions d"), {"nodes": nodes})
        connection.execute(sa.text("ANALYZE"))
    engine.dispose()
    return [d["id"] for d in component["resource_definitions"]]


def timed(http, urls):
    """Milliseconds of each GET, and the header of the last answer."""
    latencies, answer = [], None
    for url in urls:
        started = time.perf_counter()
        answer = http.get(url)
        latencies.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
    return latencies, answer.headers.get("X-Level-Unknown")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", default=os.environ.get(
        "NAILGUN_BENCH_PG_URL", "postgresql+psycopg://nailgun:nailgun@127.0.0.1:5432/postgres"))
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args(argv)
    with database(args.pg_url, SCRATCH_DB, None) as db_url:
        migration.syncdb(db_url)
        with gunicorn("nailgun_host.wsgi:application", {"NAILGUN_DB_URL": db_url}) as server:
            ids = load(server + "/api/v1/config", db_url, args.nodes)
            base = server + "/api/v1/config/environments/1/"
            kinds = {
                "environment level (reference)": lambda i: "resources/{0}/values?effective&n={1}",
                "stored node": lambda i: "nodes/node-" + str(i % args.nodes + 1) + ".domain.tld/resources/{0}/values"
                                         "?effective&n={1}",
                "node stored nothing for": lambda i: "nodes/node-x" + str(i) + ".domain.tld/resources/{0}/values"
                                                     "?effective&n={1}",
            }
            print("{0} nodes x {1} data sources, {2} effective GETs each, one client".format(
                args.nodes, SOURCES, args.requests))
            with requests.Session() as http:
                for label, path in kinds.items():
                    urls = [base + path(i).format(ids[i % SOURCES], i) for i in range(args.requests)]
                    timed(http, urls[:20])  # warm the connection and the workers
                    latencies, header = timed(http, urls)
                    print("{0:<32} p50 {1:6.1f} ms  mean {2:6.1f} ms  X-Level-Unknown {3}".format(
                        label, statistics.median(latencies), statistics.fmean(latencies), header))


if __name__ == "__main__":
    main()
