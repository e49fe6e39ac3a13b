#!/usr/bin/env python3
"""ConfigDB: how long a large JSON patch holds its environment (issue 24, item 7).

A write locks its environment's row until it commits (``environment.get(..., lock=True)``), so while
a patch is checked and applied every other write to the same environment waits (its body is read and
decoded, and its length checked, before the lock). The script starts ``gunicorn -w 2`` (two
processes: the waiting writer does not share the patch's interpreter) on a fresh SQLite file and, with
``--pg-url``, on a scratch PostgreSQL database, creates an environment with two data sources, ``a`` (1,000 keys) and
``b``, and times, over ``--rounds`` rounds:

- **PUT b alone**: a small document, the reference;
- **PATCH a, 1 op** and **PATCH a, 1,000 ops** (``PATCH.max_operations``, the longest allowed: one
  ``replace`` per key);
- **PATCH a, 100,000 ops, refused**: the issue's 4.3 MB patch, now a 400 naming the limit;
- **PUT b behind PATCH a (1,000 ops)**: the PUT sent 5 ms after the patch, on another connection:
  what the patch makes another writer of the environment wait.

Medians and maxima in ms, and each one's ratio to the PUT alone.

    python benchmarks/patch_lock.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] [--rounds 5]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import requests

from nailgun_host.db import migration
from servers import database, gunicorn

SCRATCH_DB = "nailgun_patch_lock_bench"
KEYS = 1000
PATCH_TYPE = {"Content-Type": "application/json-patch+json"}


def timed(call):
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def expect(answer, status):
    if answer.status_code != status:
        raise RuntimeError("{0} {1} answered {2}: {3}".format(answer.request.method, answer.request.url,
                                                              answer.status_code, answer.text[:200]))


def measure(api, rounds):
    http = requests.Session()
    config = api + "/api/v1/config"
    expect(http.post(config + "/components", json={"name": "lcm", "resource_definitions": [
        {"name": "a"}, {"name": "b"}]}), 201)
    expect(http.post(config + "/environments", json={"components": ["lcm"], "hierarchy_levels": []}), 201)
    url_a, url_b = config + "/environments/1/resources/1/values", config + "/environments/1/resources/2/values"
    expect(http.put(url_a, json={"key{0}".format(i): {"value": i, "list": [i, i]} for i in range(KEYS)}), 204)

    def patch(operations, status=204):
        return lambda: expect(http.patch(url_a, data=json.dumps(operations), headers=PATCH_TYPE), status)

    def put_b(session, n):
        expect(session.put(url_b, json={"round": n}), 204)

    found = {"PUT b alone": [], "PATCH a, 1 op": [], "PATCH a, 1,000 ops": [], "PATCH a, 100,000 ops, refused": [],
             "PUT b behind PATCH a (1,000 ops)": []}
    other = requests.Session()
    huge = [{"op": "replace", "path": "/key{0}/value".format(i % KEYS), "value": i} for i in range(100000)]
    for n in range(rounds):
        operations = [{"op": "replace", "path": "/key{0}/value".format(i), "value": i + n + 1} for i in range(KEYS)]
        found["PUT b alone"].append(timed(lambda: put_b(other, 2 * n)))
        found["PATCH a, 1 op"].append(timed(patch(operations[:1])))
        found["PATCH a, 1,000 ops"].append(timed(patch(operations)))
        found["PATCH a, 100,000 ops, refused"].append(timed(patch(huge, 400)))
        behind = [{"op": "replace", "path": "/key{0}/value".format(i), "value": -i - n} for i in range(KEYS)]
        writer = threading.Thread(target=patch(behind))
        writer.start()
        time.sleep(0.005)
        found["PUT b behind PATCH a (1,000 ops)"].append(timed(lambda: put_b(other, 2 * n + 1)))
        writer.join()
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    backends = [("SQLite", None)] + ([("PostgreSQL", args.pg_url)] if args.pg_url else [])
    print("load average before: {0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg()))
    print("| database | measure | median ms | max ms | x PUT alone |")
    print("|---|---|---|---|---|")
    for backend, pg_url in backends:
        with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
            env = {"NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}
            migration.syncdb(db_url)
            with gunicorn("nailgun_host.wsgi:application", dict(env, NAILGUN_DB_URL=db_url)) as api:
                found = measure(api, args.rounds)
        reference = statistics.median(found["PUT b alone"])
        for name, runs in found.items():
            median = statistics.median(runs)
            print("| {0} | {1} | {2:.0f} | {3:.0f} | {4:.1f} |".format(backend, name, median, max(runs),
                                                                      median / reference))
    print("load average after: {0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
