#!/usr/bin/env python3
"""ConfigDB: writing a 1.2 MB astute.yaml (issue 14, goal 4: under 0.3 s on SQLite).

For SQLite (a fresh file) and, with ``--pg-url``, PostgreSQL (a scratch database next to the one named,
dropped at the end), the script starts ``nailgun-api`` (cheroot, one process) on a free loopback port,
creates an environment with a ``nodes`` level, and PUTs, as JSON, a document of about 1.2 MB made of the
test fixtures' astute.yaml keys (like ``effective_limits.py``), 72 secret leaves per 40 KB copy:

- **first write**: to a node that has no document yet;
- **new version**: the same document with one key changed, 5 times, to one node.

In the same run, in alternating rounds, two references: the **same body refused** (``If-Match`` that
matches nothing, to a node without a document: 412 once the body is read, decoded and checked, which
every PUT must do) and ``json.loads`` of the body in this process (decoding it once). It prints medians
over ``--rounds`` and each one's ratio to the refused PUT's.

    python benchmarks/large_put.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] [--rounds 5]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import requests
import yaml

from servers import ROOT, database, nailgun_api

FIXTURE = os.path.join(ROOT, "tests", "configdb_clients", "fixtures", "hiera", "astute.yaml")
SCRATCH_DB = "nailgun_large_put_bench"
SIZE = 1200000
NEW_VERSIONS = 5


def document(size=SIZE):
    """About ``size`` bytes of JSON: copies of the fixture astute.yaml's keys (``key``, ``key_1``, ...)."""
    with open(FIXTURE) as stream:
        astute = yaml.safe_load(stream)
    result, copy = {}, 0
    while len(json.dumps(result)) < size:
        for key, value in astute.items():
            result["{0}_{1}".format(key, copy) if copy else key] = value
        copy += 1
    return result


def timed(call):
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def measure(api, rounds):
    """``{measure: [ms, ...]}`` over ``rounds`` alternating rounds."""
    http = requests.Session()
    config = api + "/api/v1/config"
    http.post(config + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute"}]}).raise_for_status()
    http.post(config + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}
              ).raise_for_status()
    base = document()
    bodies = [json.dumps(dict(base, revision=n)).encode("utf-8") for n in range(NEW_VERSIONS + 1)]
    headers = {"Content-Type": "application/json"}

    def put(node, body):
        answer = http.put(config + "/environments/1/nodes/{0}/resources/1/values".format(node), data=body,
                          headers=headers)
        if answer.status_code != 204:
            raise RuntimeError("PUT answered {0}: {1}".format(answer.status_code, answer.text[:200]))

    def refused():
        answer = http.put(config + "/environments/1/nodes/0/resources/1/values", data=bodies[0],
                          headers=dict(headers, **{"If-Match": '"none"'}))
        if answer.status_code != 412:
            raise RuntimeError("PUT with If-Match answered {0}".format(answer.status_code))

    found = {"first write": [], "new version": [], "same body refused (412)": [], "json.loads of the body": []}
    for round_ in range(1, rounds + 1):
        found["first write"].append(timed(lambda: put(round_, bodies[0])))
        for body in bodies[1:]:
            found["new version"].append(timed(lambda: put(round_, body)))
        found["same body refused (412)"].append(timed(refused))
        found["json.loads of the body"].append(timed(lambda: json.loads(bodies[0])))
    return len(bodies[0]), found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    backends = [("SQLite", None)] + ([("PostgreSQL", args.pg_url)] if args.pg_url else [])
    print("load average before: {0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg()))
    print("| database | measure | median ms | max ms | x refused |")
    print("|---|---|---|---|---|")
    for backend, pg_url in backends:
        with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
            env = {"NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}
            with nailgun_api(db_url, env) as api:
                size, found = measure(api, args.rounds)
        reference = statistics.median(found["same body refused (412)"])
        for name, runs in found.items():
            median = statistics.median(runs)
            print("| {0} | {1} | {2:.0f} | {3:.0f} | {4:.2f} |".format(
                backend, name, median, max(runs), median / reference))
    print("body: {0} bytes; load average after: {1:.2f} {2:.2f} {3:.2f}".format(size, *os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
