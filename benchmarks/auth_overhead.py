"""What authentication and authorization add to a request, against the same request with none.

    python benchmarks/auth_overhead.py [--requests 2000] [--db-url URL]

In process (WebTest over the WSGI application, no socket), on a database it creates and
migrates: GET /api/v1/clusters/ with AUTH method none (the reference, which still asks the
policy), then local mode with HTTP Basic (checked once, then remembered) and with a token
from POST /keystone/v2.0/tokens (its keys read from the database at most once a second). Prints microseconds per
request, median of 7 interleaved rounds.
"""
import argparse
import base64
import os
import statistics
import sys
import tempfile
import time

import bcrypt
import webtest
import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nailgun_host.cmd.startup import prepare_database  # noqa: E402
from nailgun_host.settings import settings  # noqa: E402


def per_request(cases, requests):
    """Median microseconds per request of each ``(app, headers)``, rounds interleaved so load hits all alike."""
    rounds = [[] for _ in cases]
    for app, headers in cases:
        app.get("/api/v1/clusters/", headers=headers)
    for _ in range(7):
        for index, (app, headers) in enumerate(cases):
            start = time.perf_counter()
            for _ in range(requests):
                app.get("/api/v1/clusters/", headers=headers)
            rounds[index].append((time.perf_counter() - start) / requests * 1e6)
    return [statistics.median(figures) for figures in rounds]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--db-url", help="default: a new SQLite file")
    args = parser.parse_args()
    directory = tempfile.mkdtemp()
    url = args.db_url or "sqlite:///" + os.path.join(directory, "bench.db")
    settings.reload(overrides={"DATABASE_URL": url})
    prepare_database(url)
    from nailgun_host.app import build_wsgi

    users = os.path.join(directory, "users.yaml")
    with open(users, "w") as stream:
        yaml.safe_dump({"users": {"ops": {
            "password": bcrypt.hashpw(b"pw", bcrypt.gensalt()).decode(), "roles": ["reader"]}}}, stream)
    unauthenticated = webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"})  # none: loopback
    settings.reload(overrides={"DATABASE_URL": url, "AUTH": {"method": "local", "users_file": users}})
    app = webtest.TestApp(build_wsgi())
    token = app.post_json("/keystone/v2.0/tokens", {"auth": {"passwordCredentials": {
        "username": "ops", "password": "pw"}}}).json["access"]["token"]["id"]
    cases = [("AUTH none (reference)", unauthenticated, {}),
             ("local, Basic (remembered)", app, {"Authorization": "Basic " + base64.b64encode(b"ops:pw").decode()}),
             ("local, X-Auth-Token", app, {"X-Auth-Token": token})]
    figures = per_request([(case[1], case[2]) for case in cases], args.requests)
    print("{0:<32} {1:>8} {2:>8}".format("GET /api/v1/clusters/", "us/req", "vs none"))
    for (label, _app, _headers), figure in zip(cases, figures):
        print("{0:<32} {1:>8.0f} {2:>7.2f}x".format(label, figure, figure / figures[0]))

if __name__ == "__main__":
    main()
