#!/usr/bin/env python3
"""ConfigDB's PUT against etcd's for the same bytes on the same machine (issue 27, goal 3).

Ours: ``nailgun_host.wsgi:application`` under ``waitress`` with the production recipe's flags
(docs/operator/production.md: 8 threads; the request log at INFO to a file, statistics on, ``local``
authentication with a remembered HTTP Basic credential), on SQLite and, with ``--pg-url``, on PostgreSQL (a
scratch database next to the one named, dropped at the end). The reference: etcd 3.4 on loopback
(``references.etcd``), written through its v3 JSON gateway, as a client of ours writes through our API.

The documents are the test fixtures' astute.yaml keys (``references.sized_documents``): 1 KB (a small
override, what ``config upload`` writes), 39 KB (72 secret leaves, which we seal one by one) and 1.2 MB.
Every PUT writes a new version (one key differs from the last). In interleaved rounds
(``references.interleaved``), with each round's ratio to etcd's:

- **sequential latency**: one client, PUT after PUT of the 1 KB and 39 KB documents (``--puts``) and of the
  1.2 MB one (``--large-puts``); p50 and p99 in ms. Goal: at most 2x etcd's for 39 KB, 3x for 1.2 MB;
- **throughput of writers of different documents** (PostgreSQL, or SQLite without ``--pg-url``): PUTs of
  39 KB per second by 1 writer, then by 4 writers each on its own document, ``--seconds`` each, for two
  meanings of "different documents": **4 environments** (one document each) and **one environment** (the
  same data source at 4 nodes); and etcd's with 1 and 4 writers on 4 keys. Goal: 4 writers >= 2.5x one (the
  "4 writers / 1 writer" rows; their last column is our own ratio in each round).

    python benchmarks/writes_vs_etcd.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] \\
        [--rounds 3] [--puts 30] [--large-puts 4] [--seconds 3] [--sqlite-throughput]

``--in-process`` measures instead the CPU of one PUT (``time.process_time()`` around batches of PUTs of the 39 KB
and 1.2 MB documents, each a new version, through ``build_wsgi()`` called by ``webtest`` in this process, on
SQLite and with ``--pg-url`` PostgreSQL): this process's CPU whatever the machine's load, for before/after
(``PYTHONPATH=<other checkout>``); ``--profile`` prints cProfile's top functions of more 39 KB PUTs.

    python benchmarks/writes_vs_etcd.py --in-process [--pg-url ...] [--puts 100] [--profile] [--sort tottime]
"""
import argparse
import base64
import cProfile
import io
import pstats
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import bcrypt
import requests
import yaml

from references import etcd, interleaved, load_average, median, sized_documents, waitress
from servers import ROOT, database

SCRATCH_DB = "nailgun_writes_bench_{0}".format(os.getpid())  # two runs at once do not share it
WRITERS = 4
VARIANTS = 16  # bodies per document, cycled: each PUT differs from the one before, so each is a new version
USER, PASSWORD = "bench", "bench-password"
AUTH = "Basic " + base64.b64encode("{0}:{1}".format(USER, PASSWORD).encode()).decode()


def variants(document):
    """VARIANTS bodies of ``document``, each with its own ``bench_variant`` (JSON bytes)."""
    return [json.dumps(dict(document, bench_variant=number)).encode() for number in range(VARIANTS)]


class Ours:
    """The API under waitress: ``target(n)`` is a document's URL (``"env"``: environment n, ``"node"``: node n of
    environment 1)."""

    def __init__(self, url):
        self.url = url + "/api/v1/config"
        self.http = requests.Session()
        self.http.headers.update({"Authorization": AUTH, "Content-Type": "application/json"})

    def prepare(self):
        self.http.post(self.url + "/components", json={
            "name": "fuel", "resource_definitions": [{"name": "astute"}]}).raise_for_status()
        for _ in range(WRITERS):
            self.http.post(self.url + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}
                           ).raise_for_status()

    def target(self, kind, number):
        if kind == "env":
            return self.url + "/environments/{0}/resources/1/values".format(number + 1)
        return self.url + "/environments/1/nodes/n{0}/resources/1/values".format(number)

    def writer(self):
        http = requests.Session()
        http.headers.update({"Authorization": AUTH, "Content-Type": "application/json"})

        def put(url, body):
            answer = http.put(url, data=body)
            if answer.status_code != 204:
                raise RuntimeError("PUT answered {0}: {1}".format(answer.status_code, answer.text[:300]))
        return put


class Reference:
    """etcd through its v3 gateway: ``target(n)`` is a key."""

    def __init__(self, store):
        self.store = store

    @staticmethod
    def target(kind, number):
        return "/configdb/{0}/{1}".format(kind, number)

    def writer(self):
        http = requests.Session()
        url = self.store.url + "/v3/kv/put"

        def put(key, body):
            http.post(url, data=json.dumps({"key": base64.b64encode(key.encode()).decode(),
                                            "value": base64.b64encode(body).decode()})).raise_for_status()
        return put


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def sequential(side, bodies, puts):
    """p50 and p99 in ms of ``puts`` PUTs one after the other to one document."""
    put, target, times = side.writer(), side.target("node", 0), []
    for number in range(puts):
        started = time.perf_counter()
        put(target, bodies[number % len(bodies)])
        times.append((time.perf_counter() - started) * 1000)
    return {"p50": median(times), "p99": percentile(times, 0.99)}


def throughput(side, bodies, writers, kind, seconds):
    """PUTs per second of ``writers`` threads, each writing its own document for ``seconds``."""
    done, failures, stop = [0] * writers, [], threading.Event()

    def write(number):
        put, target, count = side.writer(), side.target(kind, number), 0
        try:
            while not stop.is_set():
                put(target, bodies[count % len(bodies)])
                count += 1
                done[number] = count
        except Exception as error:  # noqa: BLE001 (reported below)
            failures.append(error)
            stop.set()

    threads = [threading.Thread(target=write, args=(number,)) for number in range(writers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return {"rate": sum(done) / (time.perf_counter() - started)}


def settings_file(directory, db_url):
    users = os.path.join(directory, "users.yaml")
    with open(users, "w") as stream:
        yaml.safe_dump({"users": {USER: {"password": bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt()).decode(),
                                         "roles": ["admin"]}}}, stream)
    os.chmod(users, 0o600)
    path = os.path.join(directory, "settings.yaml")
    with open(path, "w") as stream:
        yaml.safe_dump({"DATABASE_URL": db_url, "LOG": {"file": os.path.join(directory, "api.log"), "level": "INFO"},
                        "AUTH": {"method": "local", "users_file": users},
                        "SECRETS": {"key_repository": os.path.join(directory, "fernet-keys")}}, stream)
    return path


def run(backend, pg_url, store, documents, args, rows):
    with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
        env = {"NAILGUN_CONFIG": settings_file(directory, db_url)}
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "nailgun-syncdb")], env=dict(os.environ, **env),
                       check=True, capture_output=True)
        with waitress("nailgun_host.wsgi:application", env) as url:
            ours = Ours(url)
            ours.prepare()
            sides = {"ours": ours, "etcd": Reference(store)}
            for label, puts in (("1 KB", args.puts), ("39 KB", args.puts), ("1.2 MB", args.large_puts)):
                bodies = documents[label]
                found = interleaved(sides, args.rounds, lambda side: sequential(side, bodies, puts))
                for key in ("p50", "p99"):
                    rows.append((backend, "PUT {0}, sequential, {1} ms".format(label, key),
                                 [r[key] for r in found["ours"]], [r[key] for r in found["etcd"]]))
            if pg_url or args.sqlite_throughput:
                bodies = documents["39 KB"]
                targets = {}
                for kind, name in (("env", "4 environments"), ("node", "one environment")):
                    for writers in (1, WRITERS):
                        targets[(kind, writers)] = ("ours", kind, writers)
                for writers in (1, WRITERS):
                    targets[("etcd", writers)] = ("etcd", "node", writers)
                found = interleaved(targets, args.rounds, lambda t: throughput(
                    sides[t[0]], bodies, t[2], t[1], args.seconds))
                etcd_one, etcd_four = found[("etcd", 1)], found[("etcd", WRITERS)]
                for kind, name in (("env", "4 environments"), ("node", "one environment")):
                    one, four = found[(kind, 1)], found[(kind, WRITERS)]
                    rows.append((backend, "PUT/s, 1 writer ({0})".format(name), [r["rate"] for r in one],
                                 [r["rate"] for r in etcd_one]))
                    rows.append((backend, "PUT/s, {0} writers, {1}".format(WRITERS, name), [r["rate"] for r in four],
                                 [r["rate"] for r in etcd_four]))
                    rows.append((backend, "{0} writers / 1 writer, {1} (goal >= 2.5)".format(WRITERS, name),
                                 [f["rate"] / o["rate"] for f, o in zip(four, one)],
                                 [f["rate"] / o["rate"] for f, o in zip(etcd_four, etcd_one)]))


def in_process(backend, pg_url, documents, args):
    """CPU per PUT (ms) of the 39 KB and 1.2 MB documents in this process; cProfile's top with ``--profile``."""
    with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
        os.environ.setdefault("NAILGUN_KEY_REPOSITORY", os.path.join(directory, "keys"))
        import webtest
        from nailgun_host import db
        from nailgun_host.app import build_wsgi
        from nailgun_host.db import migration
        from nailgun_host.settings import settings

        settings.reload(overrides={"DATABASE_URL": db_url})
        migration.syncdb(db_url)
        db.configure(db_url)
        app = webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"})
        config = "/api/v1/config"
        app.post_json(config + "/components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]})
        app.post_json(config + "/environments", {"components": ["fuel"], "hierarchy_levels": ["nodes"]})
        headers = {"Content-Type": "application/json"}
        for label, puts in (("1 KB", args.puts), ("39 KB", args.puts), ("1.2 MB", args.large_puts * 3)):
            bodies, target = documents[label], config + "/environments/1/nodes/{0}/resources/1/values".format(
                label.replace(" ", "").replace(".", ""))
            for number in range(3):
                app.put(target, bodies[number], headers=headers, status=204)
            batches, size = [], max(1, puts // 5)
            for batch in range(5):
                started = time.process_time()
                for number in range(size):
                    app.put(target, bodies[(batch * size + number) % len(bodies)], headers=headers, status=204)
                batches.append((time.process_time() - started) / size * 1000)
            print("{0}: CPU per PUT of {1}: median {2:.2f} ms (batches {3})".format(
                backend, label, median(batches), " ".join("{0:.2f}".format(b) for b in batches)))
        if args.profile:
            label = args.profile_size
            target = config + "/environments/1/nodes/{0}/resources/1/values".format(
                label.replace(" ", "").replace(".", ""))
            profile = cProfile.Profile()
            profile.enable()
            for number in range(args.large_puts if label == "1.2 MB" else args.puts):
                app.put(target, documents[label][number % VARIANTS], headers=headers, status=204)
            profile.disable()
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out).sort_stats(args.sort)
            stats.print_stats(args.only or "", 45)
            if args.callers:
                stats.print_callers(args.callers)
            print(out.getvalue())
        db.get_engine().dispose()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--puts", type=int, default=30, help="sequential PUTs of 1 KB, and of 39 KB, a round")
    parser.add_argument("--large-puts", type=int, default=4, help="sequential PUTs of 1.2 MB a round")
    parser.add_argument("--seconds", type=float, default=3, help="each throughput run")
    parser.add_argument("--sqlite-throughput", action="store_true", help="measure writers on SQLite too")
    parser.add_argument("--in-process", action="store_true", help="CPU per PUT in this process instead")
    parser.add_argument("--profile", action="store_true", help="with --in-process: cProfile's top functions")
    parser.add_argument("--sort", default="cumulative", help="with --profile: pstats' order")
    parser.add_argument("--profile-size", default="39 KB", choices=("1 KB", "39 KB", "1.2 MB"), help="with --profile")
    parser.add_argument("--only", help="with --profile: only functions matching this")
    parser.add_argument("--callers", help="with --profile: also who calls the functions matching this")
    args = parser.parse_args(argv)
    sized = sized_documents((("1 KB", 1000), ("39 KB", 39000), ("1.2 MB", 1200000)))
    documents = {label: variants(document) for label, document in sized.items()}
    print("load average before: " + load_average())
    if args.in_process:
        in_process("SQLite", None, documents, args)
        if args.pg_url:
            in_process("PostgreSQL", args.pg_url, documents, args)
        print("load average after: " + load_average())
        return
    rows = []
    with etcd() as store:
        run("SQLite", None, store, documents, args, rows)
        if args.pg_url:
            run("PostgreSQL", args.pg_url, store, documents, args, rows)
    print("| database | measure | ours (median of rounds) | etcd | per round: ours / etcd (scaling rows: ours) |")
    print("|---|---|---|---|---|")
    for backend, name, ours, reference in rows:
        per_round = ours if "writers /" in name else [a / b for a, b in zip(ours, reference)]
        print("| {0} | {1} | {2:.1f} | {3:.1f} | {4} |".format(
            backend, name, median(ours), median(reference), " ".join("{0:.2f}".format(v) for v in per_round)))
    print("bodies: {0}; load average after: {1}".format(
        ", ".join("{0} = {1} bytes".format(label, len(bodies[0])) for label, bodies in documents.items()),
        load_average()))


if __name__ == "__main__":
    sys.exit(main())
