#!/usr/bin/env python3
"""Misses cheap and rare (issue 27, goal 2): a computed 39 KB effective GET against a replayed one, the
read cache's state statements under 8 client threads, and whether a write to one environment leaves
another's answers replayed.

One environment level astute of 39 KB (``references.sized_documents``: the real astute.yaml's keys, 72 of its
leaves secret) and a small document per node; the GET is a node's effective values.

- **replayed vs computed** (wrk, interleaved rounds, ratio per round, and each server's CPU per request, which a busy
  machine moves less than throughput): the same URL under ``waitress`` with the
  production flags (``references.waitress``), on two servers sharing the database: one as shipped (its answer
  replayed from memory), one with ``READ_CACHE.max_bytes: 0`` (every answer computed). Then, on the first
  server, the first read after a write to the same environment (another node's document), one request at a
  time, against the replayed read of the same URL (medians, ratio per round).
- **statements per second, 8 client threads**: the application in this process under waitress (the same flags),
  ``wrk -t 8 -c 8`` on a replayed URL; the state statements counted by the process's statement reader
  (``nailgun_host.db.statement_reader.executed``), against the bound of one per lease.
- **a write to environment A, reads of B**: through the same in-process server, B's GETs after A's documents
  were written, counted as the read cache's hits and misses.

    python benchmarks/read_misses.py [--pg-url postgresql+psycopg://nailgun:nailgun@127.0.0.1:5432/postgres]
        [--seconds 5] [--rounds 3] [--no-sqlite]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import logging

import requests
import yaml

from references import (interleaved, load_average, median, ratios, sized_documents, waitress, wrk, wrk_with_cpu,
                        WAITRESS_FLAGS)
from servers import database, free_port

SCRATCH_DB = "nailgun_read_misses_bench"
NODES = 20
CONFIG = "/api/v1/config"


def load(base, document, environments=(1,)):
    """Environments with the 39 KB astute at their level and a small one per node; a node's effective URL each."""
    requests.post(base + CONFIG + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute"}]}).raise_for_status()
    urls = {}
    for environment in environments:
        requests.post(base + CONFIG + "/environments", json={"id": environment, "components": ["fuel"],
                                                              "hierarchy_levels": ["nodes"]}).raise_for_status()
        requests.put(base + _document(environment, ""), json=document).raise_for_status()
        for node in range(1, NODES + 1):
            requests.put(base + _document(environment, "nodes/node-{0}/".format(node)),
                         json={"uid": str(node), "fqdn": "node-{0}.domain.tld".format(node)}).raise_for_status()
        urls[environment] = _document(environment, "nodes/node-1/") + "?effective"
    return urls


def _document(environment, level):
    return CONFIG + "/environments/{0}/{1}resources/1/values".format(environment, level)


def _write(base, environment, number):
    """A write to the environment that is not the read URL's document (another node's)."""
    requests.put(base + _document(environment, "nodes/node-2/"), json={"uid": "2", "written": number}
                 ).raise_for_status()


def _timed_get(http, url):
    started = time.perf_counter()
    answer = http.get(url)
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return elapsed * 1000, len(answer.content)


def over_http(db_url, directory, seconds, rounds):
    """Replayed against computed under waitress: wrk rounds, then the first read after a write."""
    env = {"NAILGUN_DB_URL": db_url, "NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}
    computing = os.path.join(directory, "computing.yaml")
    with open(computing, "w") as stream:
        yaml.safe_dump({"READ_CACHE": {"max_bytes": 0}}, stream)
    with waitress("nailgun_host.wsgi:application", env) as cached, \
            waitress("nailgun_host.wsgi:application", dict(env, NAILGUN_CONFIG=computing)) as uncached:
        url = load(cached, sized_documents()["39 KB"])[1]
        size = len(requests.get(cached + url).content)
        found = interleaved({"replayed": cached + url, "computed": uncached + url}, rounds,
                            lambda target: wrk_with_cpu(target, seconds, 8))
        http, after_write = requests.Session(), {"replayed": [], "first read after a write": []}
        for number in range(rounds):
            replayed, missed = [], []
            for repeat in range(30):
                _write(cached, 1, number * 100 + repeat)
                missed.append(_timed_get(http, cached + url)[0])
                replayed.append(_timed_get(http, cached + url)[0])
            after_write["replayed"].append(median(replayed))
            after_write["first read after a write"].append(median(missed))
    return size, found, after_write


def in_process(db_url, directory, seconds):
    """Statements per second under 8 client threads, and B's hits after writes to A (module)."""
    import waitress as waitress_server
    from nailgun_host import db
    from nailgun_host.app import build_wsgi
    from nailgun_host.db import migration
    from nailgun_host.settings import settings
    from nailgun_platform.read_cache import ReadCache

    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth": wrk keeps 8 waiting
    os.environ["NAILGUN_KEY_REPOSITORY"] = os.path.join(directory, "keys-in-process")
    settings.reload(overrides={"DATABASE_URL": db_url})
    migration.syncdb(db_url)
    db.configure(db_url)
    application = build_wsgi()
    cache = _read_cache(application, ReadCache)
    port = free_port()
    flags = dict(flag.lstrip("-").replace("-", "_").split("=") for flag in WAITRESS_FLAGS)
    server = waitress_server.create_server(application, host="127.0.0.1", port=port, threads=int(flags["threads"]),
                                           channel_timeout=int(flags["channel_timeout"]),
                                           cleanup_interval=int(flags["cleanup_interval"]))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = "http://127.0.0.1:{0}".format(port)
    try:
        urls = load(base, sized_documents()["39 KB"], environments=(1, 2))
        requests.get(base + urls[1]).raise_for_status()
        before, started = db.statement_reader.executed, time.monotonic()
        load_run = wrk(base + urls[1], seconds, 8, threads=8)
        elapsed = time.monotonic() - started
        statements = (db.statement_reader.executed - before) / elapsed
        bound = 1000.0 / settings["READ_CACHE"]["lease_ms"]

        for url in urls.values():
            requests.get(base + url).raise_for_status()
        hits, misses = cache.store.hits, cache.store.misses
        for number in range(10):
            _write(base, 1, number)
            requests.get(base + urls[2]).raise_for_status()
        other = (cache.store.hits - hits, cache.store.misses - misses)
        hits, misses = cache.store.hits, cache.store.misses
        for number in range(10):
            _write(base, 1, 100 + number)
            requests.get(base + urls[1]).raise_for_status()
        same = (cache.store.hits - hits, cache.store.misses - misses)
    finally:
        server.close()
        db.get_engine().dispose()
    return load_run, statements, bound, other, same


def _read_cache(application, kind):
    """The ``ReadCache`` among ``build_wsgi``'s middlewares (as the tests' ``read_cache_of`` finds it)."""
    layer = application
    for _ in range(10):
        if isinstance(layer, kind):
            return layer
        closure = getattr(layer, "__closure__", None) or ()
        layer = getattr(layer, "app", None) or next((c.cell_contents for c in closure if callable(c.cell_contents)),
                                                    None)
    raise LookupError("no read cache in the application")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-sqlite", action="store_true", help="only PostgreSQL")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        parser.error("wrk is not installed (apt-get install wrk)")
    backends = ([] if args.no_sqlite else [("SQLite", None)]) + ([("PostgreSQL", args.pg_url)] if args.pg_url else [])
    print("load average before:", load_average(), flush=True)
    for backend, pg_url in backends:
        from nailgun_host.db import migration
        with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
            migration.syncdb(db_url)
            size, found, after_write = over_http(db_url, directory, args.seconds, args.rounds)
        print("\n## {0}: a {1} B effective GET, waitress {2}".format(backend, size, " ".join(WAITRESS_FLAGS)))
        print("| round | replayed req/s | computed req/s | ratio | server CPU µs per request, replayed / computed "
              "| replayed ms | first read after a write ms | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        rate_ratios = ratios(found["replayed"], found["computed"])
        latency_ratios = [b / a for a, b in zip(after_write["replayed"], after_write["first read after a write"])]
        for number in range(args.rounds):
            print("| {0} | {1:.0f} | {2:.0f} | {3:.1f}x | {4:.0f} / {5:.0f} | {6:.2f} | {7:.2f} | {8:.1f}x |".format(
                number + 1, found["replayed"][number]["rate"], found["computed"][number]["rate"], rate_ratios[number],
                found["replayed"][number]["cpu_us"], found["computed"][number]["cpu_us"],
                after_write["replayed"][number], after_write["first read after a write"][number],
                latency_ratios[number]))
        print("median ratios: {0:.1f}x (throughput), {1:.1f}x (latency after a write)".format(
            statistics.median(rate_ratios), statistics.median(latency_ratios)), flush=True)
        with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
            load_run, statements, bound, other, same = in_process(db_url, directory, args.seconds)
        print("in process, wrk -t 8 -c 8 on a replayed GET: {0:.0f} req/s, {1:.1f} state statements/s "
              "(at most {2:.0f}: one per lease)".format(load_run["rate"], statements, bound))
        print("10 writes to environment A, each followed by a GET of B: {0} hits, {1} misses; "
              "of A: {2} hits, {3} misses".format(other[0], other[1], same[0], same[1]), flush=True)
    print("load average after:", load_average())


if __name__ == "__main__":
    sys.exit(main())
