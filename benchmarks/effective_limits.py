#!/usr/bin/env python3
"""ConfigDB's effective GET against the physical limit of the machine and server (issue 14's measure).

Three targets are served by ``gunicorn -w 2`` on loopback and hit by the same load generator (``wrk``, Debian's
package ``wrk``), in alternating rounds:

- **static bytes**: a WSGI app that hands out, from memory, the very bytes and headers of ours (the limit);
- **trivial handler**: ``GET /api/v1/version`` through this app's own request processors;
- **ours**: ``GET .../environments/1/nodes/<n>/resources/astute/values?effective`` (a document at the
  environment level merged with a small one at the node's), and its revalidation (``If-None-Match`` -> 304),
  on SQLite and, with ``--pg-url``, on PostgreSQL.

For documents of about 1 KB, 39 KB (the test fixtures' astute.yaml, 13 copies) and 1 MB it prints each target's
median requests per second over the rounds, its ratio to static bytes and its p99 latency.

    python benchmarks/effective_limits.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] \\
        [--seconds 5] [--rounds 3] [--connections 8] [--nodes 50]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

import requests

from references import sized_documents, wrk
from servers import ROOT, database, gunicorn

sys.path.insert(0, ROOT)

from nailgun_host.db import migration  # noqa: E402

SCRATCH_DB = "nailgun_effective_bench"
STATIC_APP = '''
import json, os
with open(os.environ["STATIC_ANSWERS"]) as stream:
    ANSWERS = {}
    for target, (body_file, headers) in json.load(stream).items():
        with open(body_file, "rb") as body:
            data = body.read()
        ANSWERS[target] = (data, [tuple(h) for h in headers] + [("Content-Length", str(len(data)))])
def application(environ, start_response):
    body, headers = ANSWERS[environ["PATH_INFO"] + "?" + environ.get("QUERY_STRING", "")]
    start_response("200 OK", headers)
    return [body]
'''


def measure(targets, seconds, rounds, connections):
    """``{name: (median req/s, median p99)}`` over ``rounds`` alternating rounds of every target."""
    found = {name: [] for name in targets}
    for _ in range(rounds):
        for name, (url, headers) in targets.items():
            found[name].append(wrk(url, seconds, connections, headers))
    return {name: (statistics.median(r["rate"] for r in runs), statistics.median(r["p99"] for r in runs))
            for name, runs in found.items()}


def load(api, document, nodes):
    """The environment, its documents and ``{variant: path?query}`` of the reads measured."""
    config = api + "/api/v1/config"
    requests.post(config + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute"}]}).raise_for_status()
    requests.post(config + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}
                  ).raise_for_status()
    requests.put(config + "/environments/1/resources/astute/values", json=document,
                 allow_redirects=True).raise_for_status()
    for node in range(1, nodes + 1):
        requests.put(config + "/environments/1/nodes/{0}/resources/1/values".format(node),
                     json={"uid": str(node), "fqdn": "node-{0}.domain.tld".format(node)}).raise_for_status()
    node = "/api/v1/config/environments/1/nodes/{0}/resources/".format(nodes // 2 or 1)
    return {"effective GET (by name)": node + "astute/values?effective",
            "effective GET (by id)": node + "1/values?effective",
            "effective GET, show_lookup": node + "astute/values?effective&show_lookup",
            "plain GET (environment level)": "/api/v1/config/environments/1/resources/astute/values?"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--sizes", nargs="+", default=["1 KB", "39 KB", "1 MB"], choices=["1 KB", "39 KB", "1 MB"])
    parser.add_argument("--no-sqlite", action="store_true", help="only PostgreSQL")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        parser.error("wrk is not installed (apt-get install wrk)")
    backends = ([] if args.no_sqlite else [("SQLite", None)]) + ([("PostgreSQL", args.pg_url)] if args.pg_url else [])
    print("| document | database | read | req/s | x its static bytes | p99 ms (static's) |")
    print("|---|---|---|---|---|---|")
    for label, document in sized_documents().items():
        if label not in args.sizes:
            continue
        for backend, pg_url in backends:
            with tempfile.TemporaryDirectory() as directory, database(pg_url, SCRATCH_DB, directory) as db_url:
                migration.syncdb(db_url)
                env = {"NAILGUN_DB_URL": db_url, "NAILGUN_KEY_REPOSITORY": os.path.join(directory, "keys")}
                with gunicorn("nailgun_host.wsgi:application", env) as ours:
                    reads = load(ours, document, args.nodes)
                    answers, static_answers = {}, {}
                    for number, (name, path) in enumerate(reads.items()):
                        answer = answers[name] = requests.get(ours + path)
                        answer.raise_for_status()
                        body = os.path.join(directory, "body{0}".format(number))
                        with open(body, "wb") as stream:
                            stream.write(answer.content)
                        static_answers[path if "?" in path else path + "?"] = [
                            body, [(h, answer.headers[h]) for h in ("Content-Type", "ETag")]]
                    with open(os.path.join(directory, "answers.json"), "w") as stream:
                        json.dump(static_answers, stream)
                    with open(os.path.join(directory, "static_app.py"), "w") as stream:
                        stream.write(STATIC_APP)
                    with gunicorn("static_app:application", {"STATIC_ANSWERS": os.path.join(directory, "answers.json")},
                                  cwd=directory) as static:
                        first = next(iter(reads))
                        targets = {"trivial handler (/version)": (ours + "/api/v1/version", ())}
                        for name, path in reads.items():
                            targets["static: " + name] = (static + path, ())
                            targets[name] = (ours + path, ())
                        targets["revalidation (304) of " + first] = (
                            ours + reads[first], ("If-None-Match: " + answers[first].headers["ETag"],))
                        results = measure(targets, args.seconds, args.rounds, args.connections)
            for name, (rate, p99) in results.items():
                if name.startswith("static: "):
                    continue
                reference = "static: " + (name if name in reads else first)
                limit, limit_p99 = results[reference]
                size = len(answers[name].content) if name in answers else len(answers[first].content)
                print("| {0} ({1} B) | {2} | {3} | {4:.0f} | {5:.2f}x | {6:.1f} ({7:.1f}) |".format(
                    label, size, backend, name, rate, rate / limit, p99, limit_p99), flush=True)


if __name__ == "__main__":
    sys.exit(main())
