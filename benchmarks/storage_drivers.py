"""ConfigDB's git storage driver against the SQL driver (the reference), through a real ``nailgun-api``.

For each driver the script starts ``nailgun-api`` on a fresh SQLite database (or a scratch PostgreSQL
database with ``--pg-url``) and, with one client, writes ``--writes`` new versions of a node's astute.yaml
(the test fixture, ~3 KB, one key changed each time), then reads it ``--reads`` times as stored
(``values``) and merged (``values?effective``). It prints the median of each request in ms and git's
ratio to SQL.

    python benchmarks/storage_drivers.py [--writes 200] [--reads 500] [--pg-url postgresql+psycopg://...]
"""
import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import requests
import sqlalchemy as sa
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "configdb_clients", "fixtures", "hiera", "astute.yaml")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(db_url, storage, directory):
    port = free_port()
    env = dict(os.environ, NAILGUN_CONFIGDB_STORAGE=storage,
               NAILGUN_CONFIGDB_GIT_ROOT=os.path.join(directory, "git"),
               NAILGUN_KEY_REPOSITORY=os.path.join(directory, "keys"))
    process = subprocess.Popen([sys.executable, "-c", "from nailgun_host.server import serve; serve()",
                                "--db-url", db_url, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = "http://127.0.0.1:{0}/api/v1/config".format(port)
    try:
        for _ in range(300):
            with contextlib.suppress(requests.ConnectionError):
                requests.get(base.replace("/config", "/version"), timeout=1)
                break
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


@contextlib.contextmanager
def database(pg_url, name, directory):
    if not pg_url:
        yield "sqlite:///" + os.path.join(directory, "nailgun.db")
        return
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text("DROP DATABASE IF EXISTS {0} WITH (FORCE)".format(name)))
        connection.execute(sa.text("CREATE DATABASE {0}".format(name)))
    try:
        yield sa.make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text("DROP DATABASE IF EXISTS {0} WITH (FORCE)".format(name)))
        admin.dispose()


def timed(call, count):
    times = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(base, astute, writes, reads):
    http = requests.Session()
    rid = http.post(base + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute", "content": {}}]}).json()["resource_definitions"][0]["id"]
    http.post(base + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}).raise_for_status()
    url = "{0}/environments/1/nodes/1/resources/{1}/values".format(base, rid)
    http.put(base + "/environments/1/resources/{0}/values".format(rid), json={"debug": False}).raise_for_status()

    def put(i):
        http.put(url, json=dict(astute, deployment_id=i + 1)).raise_for_status()

    def get(suffix):
        def call(_):
            http.get(url + suffix).raise_for_status()
        return call

    return {"PUT values (new version)": timed(put, writes), "GET values": timed(get(""), reads),
            "GET values?effective": timed(get("?effective"), reads)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--pg-url", help="a PostgreSQL URL whose user may create databases (default: SQLite)")
    args = parser.parse_args()
    with open(FIXTURE) as stream:
        astute = yaml.safe_load(stream)
    results = {}
    for storage in ("sql", "git"):
        with tempfile.TemporaryDirectory() as directory, \
                database(args.pg_url, "nailgun_storage_bench_" + storage, directory) as db_url, \
                server(db_url, storage, directory) as base:
            results[storage] = measure(base, astute, args.writes, args.reads)
    print("| request | sql (ms) | git (ms) | git / sql |")
    print("|---|---|---|---|")
    for name in results["sql"]:
        sql, git = results["sql"][name], results["git"][name]
        print("| {0} | {1:.1f} | {2:.1f} | {3:.2f} |".format(name, sql, git, git / sql))


if __name__ == "__main__":
    main()
