#!/usr/bin/env python3
"""Issue 27, goal 1: the production recipe at the limit.

Our replayed effective GET under the production recipe (docs/operator/production.md: ``waitress-serve
--threads=8 ...`` on ``nailgun_host.wsgi:application``, ``LOG`` to a file at INFO, statistics on, ``AUTH``
``local`` with a users file) against, in the same run and interleaved rounds (``references.interleaved``):

- the minimal app handing out the very same bytes and headers under the same waitress flags (the limit);
- nginx serving the same bytes as a file.

wrk sends an ``Authorization`` header (a Basic credential, checked once then remembered, or with ``--token``
this server's token), for documents of about 1 KB, 39 KB and 1 MB, their 200 and their 304
(``If-None-Match``), on SQLite and, with ``--pg-url``, PostgreSQL. Each round's ratio ours/minimal app is
printed, and the p99s.

``--in-process`` measures instead the cost of one replayed GET by calling the WSGI application in a loop
(logging to a file, statistics on, Basic auth), and the minimal app's the same way; ``--profile`` adds the
cProfile of that loop.

    python benchmarks/production_limit.py [--pg-url postgresql+psycopg://USER:PASSWORD@127.0.0.1/postgres] \\
        [--seconds 3] [--rounds 3] [--connections 8] [--sizes 1KB 39KB 1MB] [--token] [--override JSON] \\
        [--what-if skip-layers|skip-checked-layers] [--in-process [--profile]]

``--what-if`` serves ``what_if.py``'s ceilings in place of ours: the layers between the request log and the read
cache skipped for a request seen before (``skip-layers``: unsound on purpose, what a design remembering their
decisions could reach at most; ``skip-checked-layers``: the credential and the read rule still asked each time).
With ``--override '{"READ_CACHE": {"lease_ms": 500}}'`` as well, what is left once the lease's statements are gone.
"""
import argparse
import atexit
import base64
import contextlib
import cProfile
import io
import json
import logging
import os
import pstats
import subprocess
import sys
import tempfile
import time

import requests

from references import (interleaved, load_average, median, minimal_app, nginx_files, ratios, sized_documents,
                        waitress, wrk, wrk_with_cpu)
from servers import ROOT, database

sys.path.insert(0, ROOT)

SCRATCH_DB = "nailgun_production_limit_bench"
HERE = os.path.dirname(os.path.abspath(__file__))
USER, PASSWORD = "reader", "bench-password"
SIZES = {"1KB": "1 KB", "39KB": "39 KB", "1MB": "1 MB"}
NODES = 10


def production_settings(directory, db_url, override=None):
    """The production recipe's settings file (``LOG`` to a file at INFO, ``AUTH`` local) in ``directory``, with a
    users file holding ``USER`` (role ``admin``); the environment of a server reading it. ``override``: sections
    replaced, to tell what a part costs (``--override``)."""
    from nailgun_host.auth import local

    users = os.path.join(directory, "users.yaml")
    local.save(users, {"users": {USER: {"password": local.hash_password(PASSWORD), "roles": ["admin"]}}})
    path = os.path.join(directory, "settings.yaml")
    with open(path, "w") as stream:
        json.dump({"DATABASE_URL": db_url, "LOG": {"file": os.path.join(directory, "api.log"), "level": "INFO"},
                   "AUTH": {"method": "local", "users_file": users},
                   "SECRETS": {"key_repository": os.path.join(directory, "fernet-keys")}, **(override or {})}, stream)
    return {"NAILGUN_CONFIG": path, "NAILGUN_DB_URL": ""}


def basic():
    return "Basic " + base64.b64encode("{0}:{1}".format(USER, PASSWORD).encode()).decode()


def load(request, documents):
    """An environment per document (its node-level document too); ``{label: path?query}`` of a node's effective
    GET in each. ``request(method, path, body)`` sends one request (over HTTP or in process)."""
    config = "/api/v1/config"
    request("POST", config + "/components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    paths = {}
    for number, (label, document) in enumerate(documents.items(), 1):
        request("POST", config + "/environments", {"components": ["fuel"], "hierarchy_levels": ["nodes"]})
        request("PUT", config + "/environments/{0}/resources/1/values".format(number), document)
        for node in range(1, NODES + 1):
            request("PUT", config + "/environments/{0}/nodes/{1}/resources/1/values".format(number, node),
                    {"uid": str(node), "fqdn": "node-{0}.domain.tld".format(node)})
        paths[label] = config + "/environments/{0}/nodes/{1}/resources/astute/values?effective".format(
            number, NODES // 2)
    return paths


def chosen(sizes):
    return {label: document for label, document in sized_documents().items()
            if label in [SIZES[size] for size in sizes]}


# -- over HTTP ------------------------------------------------------------------------------------

def over_http(args):
    """Ours, the minimal app and nginx under wrk, interleaved rounds; a table of per-round ratios."""
    backends = ([] if args.no_sqlite else [("SQLite", None)]) + ([("PostgreSQL", args.pg_url)] if args.pg_url else [])
    print("| document | database | read | ours req/s (rounds) | minimal app req/s | ratio per round | "
          "p99 ms ours / minimal | nginx file req/s | server CPU µs/request ours / minimal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for backend, pg_url in backends:
        with tempfile.TemporaryDirectory(prefix="production-limit-") as directory, \
                database(pg_url, SCRATCH_DB, directory) as db_url:
            if not pg_url:
                db_url = "sqlite:///" + os.path.join(directory, "nailgun.db")
            env = production_settings(directory, db_url, json.loads(args.override or "{}"))
            subprocess.run([sys.executable, "-c", "from nailgun_host.db import migration; migration.syncdb({0!r})"
                            .format(db_url)], check=True, cwd=ROOT)
            served = ("what_if:application", HERE) if args.what_if else ("nailgun_host.wsgi:application", ROOT)
            env["NAILGUN_WHAT_IF"] = args.what_if or ""
            with waitress(served[0], env, cwd=served[1]) as ours:
                http = requests.Session()
                http.headers["Authorization"] = basic()

                def request(method, path, body=None):
                    http.request(method, ours + path, json=body).raise_for_status()

                paths = load(request, chosen(args.sizes))
                credential = "Authorization: " + basic()
                if args.token:
                    answer = http.post(ours + "/keystone/v2.0/tokens", json={"auth": {"passwordCredentials": {
                        "username": USER, "password": PASSWORD}}})
                    answer.raise_for_status()
                    credential = "X-Auth-Token: " + answer.json()["access"]["token"]["id"]
                answers, targets = {}, {}
                for label, path in paths.items():
                    answer = answers[label] = http.get(ours + path)
                    answer.raise_for_status()
                with minimal_app({path: (answers[label].content, [
                        (h, answers[label].headers[h]) for h in ("Content-Type", "ETag")])
                        for label, path in paths.items()}) as minimal, \
                        nginx_files({"/{0}.json".format(label.replace(" ", "")): answers[label].content
                                     for label in paths}) as nginx:
                    for label, path in paths.items():
                        revalidation = "If-None-Match: " + answers[label].headers["ETag"]
                        targets[label, "200", "ours"] = (ours + path, (credential,))
                        targets[label, "200", "minimal"] = (minimal + path, ())
                        targets[label, "200", "nginx"] = (nginx + "/{0}.json".format(label.replace(" ", "")), ())
                        targets[label, "304", "ours"] = (ours + path, (credential, revalidation))
                        targets[label, "304", "minimal"] = (minimal + path, (revalidation,))
                    found = interleaved(targets, args.rounds, lambda target: (
                        wrk if target[0].startswith(nginx) else wrk_with_cpu)(
                        target[0], args.seconds, args.connections, target[1]))
            for label, path in paths.items():
                for read in ("200", "304"):
                    ours_runs, limit_runs = found[label, read, "ours"], found[label, read, "minimal"]
                    nginx_runs = found.get((label, read, "nginx"))
                    print("| {0} ({1} B) | {2} | replayed GET {3} | {4} | {5} | {6} | {7:.1f} / {8:.1f} | {9} | "
                          "{10:.0f} / {11:.0f} |".format(
                        label, len(answers[label].content), backend, read,
                        ", ".join("{0:.0f}".format(run["rate"]) for run in ours_runs),
                        ", ".join("{0:.0f}".format(run["rate"]) for run in limit_runs),
                        ", ".join("{0:.2f}x".format(ratio) for ratio in ratios(ours_runs, limit_runs)),
                        median(run["p99"] for run in ours_runs), median(run["p99"] for run in limit_runs),
                        "{0:.0f}".format(median(run["rate"] for run in nginx_runs)) if nginx_runs else "-",
                        median(run["cpu_us"] for run in ours_runs), median(run["cpu_us"] for run in limit_runs)),
                        flush=True)
    print("load average:", load_average(), "| credential:", "token" if args.token else "Basic",
          "| settings override:", args.override or "none", "| what if:", args.what_if or "none")


# -- in process -----------------------------------------------------------------------------------

def environ_of(method, path_query, body=None, headers=()):
    path, _, query = path_query.partition("?")
    data = json.dumps(body).encode() if body is not None else b""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(data),
               "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": True,
               "wsgi.multiprocess": False, "wsgi.run_once": False, "CONTENT_LENGTH": str(len(data)),
               "HTTP_HOST": "127.0.0.1:8000", "HTTP_AUTHORIZATION": basic(),
               "REQUEST_URI": path_query, "SERVER_SOFTWARE": "waitress"}  # as waitress hands them
    if body is not None:
        environ["CONTENT_TYPE"] = "application/json"
    for name, value in headers:
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def call(application, environ):
    status = []

    def start_response(line, headers, exc_info=None):
        status.append((line, headers))

    body = application(environ, start_response)
    data = b"".join(body)
    if hasattr(body, "close"):
        body.close()
    return status[0][0], dict(status[0][1]), data


def per_call(application, environ, seconds):
    """Microseconds of the process's CPU (its threads' too: the log's writer) per call of ``application`` with a
    copy of ``environ``, best of three runs (CPU time: other processes of a busy machine weigh less on it)."""
    best = None
    for _ in range(3):
        count, started = 0, time.process_time()
        while time.process_time() - started < seconds / 3:
            for _ in range(200):
                call(application, dict(environ))
            count += 200
        spent = (time.process_time() - started) / count * 1e6
        best = spent if best is None else min(best, spent)
    return best


def in_process(args):
    """µs per replayed GET (200 and 304) of ours and of the minimal app, called in process."""
    with tempfile.TemporaryDirectory(prefix="production-limit-") as directory, \
            database(args.pg_url, SCRATCH_DB, directory) as db_url:
        if not args.pg_url:
            db_url = "sqlite:///" + os.path.join(directory, "nailgun.db")
        os.environ.update(production_settings(directory, db_url))
        from nailgun_host.db import migration

        migration.syncdb(db_url)
        from nailgun_host import wsgi

        application = wsgi.application

        def request(method, path, body=None):
            status, _, data = call(application, environ_of(method, path, body))
            if not status.startswith("20"):
                raise RuntimeError("{0} {1}: {2} {3}".format(method, path, status, data[:300]))

        print("| document | database | read | ours µs | minimal app µs |")
        print("|---|---|---|---|---|")
        for label, path in load(request, chosen(args.sizes)).items():
            status, headers, body = call(application, environ_of("GET", path))
            minimal = _minimal_app(body, headers)
            for read, extra in (("200", ()), ("304", (("If-None-Match", headers["ETag"]),))):
                environ = environ_of("GET", path, headers=extra)
                ours = per_call(application, environ, args.seconds)
                limit = per_call(minimal, environ, args.seconds)
                print("| {0} ({1} B) | {2} | replayed GET {3} | {4:.1f} | {5:.2f} |".format(
                    label, len(body), "PostgreSQL" if args.pg_url else "SQLite", read, ours, limit), flush=True)
                if args.profile:
                    profile = cProfile.Profile()
                    profile.enable()
                    for _ in range(20000):
                        call(application, dict(environ))
                    profile.disable()
                    stats = pstats.Stats(profile)
                    stats.sort_stats("tottime").print_stats(25)
        print("load average:", load_average())
        from nailgun_host import stats

        atexit.unregister(stats.flush)  # the scratch database goes first
        root = logging.getLogger()
        for handler in list(root.handlers):  # the log file's last lines, before its directory goes
            root.removeHandler(handler)
            handler.close()


def _minimal_app(body, headers):
    answer = [(k, v) for k, v in headers.items() if k.lower() in ("content-type", "etag")] + [
        ("Content-Length", str(len(body)))]
    etag = headers.get("ETag")

    def application(environ, start_response):
        if etag is not None and environ.get("HTTP_IF_NONE_MATCH") == etag:
            start_response("304 Not Modified", [("ETag", etag)])
            return []
        start_response("200 OK", answer)
        return [body]

    return application


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", help="also run on PostgreSQL (a user that may create databases)")
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--token", action="store_true", help="send this server's token rather than Basic")
    parser.add_argument("--no-sqlite", action="store_true", help="only PostgreSQL")
    parser.add_argument("--override", help='settings sections replaced, JSON (to tell what a part costs), e.g. '
                        '\'{"LOG": {"level": "WARNING"}}\' or \'{"READ_CACHE": {"lease_ms": 500}}\'')
    parser.add_argument("--what-if", choices=("skip-layers", "skip-checked-layers"),
                        help="serve what_if.py's ceiling instead (not a server to run: see what_if.py)")
    parser.add_argument("--in-process", action="store_true", help="µs per replayed GET, calling the application")
    parser.add_argument("--profile", action="store_true", help="with --in-process: cProfile of the loop")
    args = parser.parse_args(argv)
    if args.in_process and args.what_if:
        parser.error("--what-if serves over HTTP: not with --in-process")
    if args.in_process:
        return in_process(args)
    return over_http(args)


if __name__ == "__main__":
    sys.exit(main())
