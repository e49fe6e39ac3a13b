"""A logged-in user's requests while 40 clients guess passwords, with check slots and lockout and without.

    python benchmarks/login_starvation.py [--clients 40] [--seconds 20] [--requests 500] [--pg-url URL]

Starts the server of docs/operator/production.md (its ``waitress-serve`` line, on a free loopback
port) in ``local`` mode with a users file hashed at bcrypt's default cost, three times: without bounds (the
reference: as many check slots as waitress has threads, no lockout), with check slots only (a
guesser that is never locked: new names from ever new addresses), with the defaults (slots and
lockout), and with the defaults against guesses of the logged-in user's own name (locked: its
remembered Basic password gets 429, its token goes on). Each time ``--clients`` clients, each from
its own loopback address (127.0.0.2...), send wrong passwords for random user names (or that one)
as fast as the answers come, ignoring ``Retry-After``,
for ``--seconds`` or ``--requests`` each, while a logged-in user (a token, and a remembered Basic
password, in turn) sends ``GET /api/v1/clusters/`` every 20 ms from 127.0.0.1. Prints that
user's latency (p50, p99, max) and answers, the guesses' answers, and the load average.
"""
import argparse
import base64
import collections
import http.client
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import bcrypt
import yaml
from cryptography.fernet import Fernet

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.servers import ROOT, database, free_port, served  # noqa: E402

PASSWORD = "ops-secret"
#: the AUTH settings of each run (waitress has 8 threads: 8 slots bound nothing), and the name guessed
#: (None: a new random one each time)
RUNS = [
    ("no bounds (reference)", {"password_checks": 8, "lockout_failure_attempts": 0,
                               "lockout_address_failure_attempts": 0}, None),
    ("check slots only", {"lockout_failure_attempts": 0, "lockout_address_failure_attempts": 0}, None),
    ("defaults: slots and lockout", {}, None),
    ("defaults, guessing ops", {}, "ops"),
]


def recipe_command(port):
    """The Production page's ``waitress-serve`` line, listening on ``127.0.0.1:port``."""
    with open(os.path.join(ROOT, "docs", "operator", "production.md")) as stream:
        production = stream.read()
    lines = [line for block in re.findall(r"```bash\n(.*?)```", production, re.S) for line in block.splitlines()
             if line.startswith("waitress-serve ")]
    args = [arg.replace("0.0.0.0:8000", "127.0.0.1:{0}".format(port)) for arg in shlex.split(lines[0], comments=True)]
    return [os.path.join(os.path.dirname(sys.executable), args[0])] + args[1:]


def request(connection, headers):
    connection.request("GET", "/api/v1/clusters/", headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


def guesser(port, address, name, stop, limit, answers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(address, 0))
    for _ in range(limit):
        if stop.is_set():
            break
        try:
            answers[request(connection, basic(name or uuid.uuid4().hex[:8], "guess"))] += 1
        except (OSError, http.client.HTTPException):
            answers["error"] += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(address, 0))


def logged_in(port, token, stop, latencies, answers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    credentials = [{"X-Auth-Token": token}, basic("ops", PASSWORD)]
    while not stop.is_set():
        start = time.perf_counter()
        answers[request(connection, credentials[len(latencies) % 2])] += 1
        latencies.append(time.perf_counter() - start)
        time.sleep(0.02)


def run(db_url, directory, users_file, limits, name, args):
    config = os.path.join(directory, "settings.yaml")
    with open(config, "w") as stream:
        yaml.safe_dump({"AUTH": dict({"method": "local", "users_file": users_file}, **limits),
                        "LOG": {"file": os.path.join(directory, "api.log"), "level": "WARNING"}}, stream)
    port = free_port()
    with served(recipe_command(port), port, env={"NAILGUN_CONFIG": config, "NAILGUN_DB_URL": db_url}):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = json.dumps({"auth": {"passwordCredentials": {"username": "ops", "password": PASSWORD}}})
        connection.request("POST", "/keystone/v2.0/tokens", body, {"Content-Type": "application/json"})
        token = json.loads(connection.getresponse().read())["access"]["token"]["id"]
        assert request(connection, basic("ops", PASSWORD)) == 200  # checked once: remembered
        load = os.getloadavg()[0]
        stop, guesses, answers, latencies = threading.Event(), collections.Counter(), collections.Counter(), []
        guessers = [threading.Thread(target=guesser, args=(port, "127.0.0.{0}".format(2 + number), name, stop,
                                                           args.requests, guesses))
                    for number in range(args.clients)]
        user = threading.Thread(target=logged_in, args=(port, token, stop, latencies, answers))
        for thread in guessers + [user]:
            thread.start()
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline and any(thread.is_alive() for thread in guessers):
            time.sleep(0.1)
        stop.set()
        for thread in guessers + [user]:
            thread.join()
        return latencies, answers, guesses, (load, os.getloadavg()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=20, help="the longest guessing per run")
    parser.add_argument("--requests", type=int, default=500, help="the most guesses per client and run")
    parser.add_argument("--pg-url", help="a PostgreSQL URL: a scratch database next to it (default: SQLite)")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print("commit {0}, {1} cores, Python {2}".format(commit.strip(), os.cpu_count(), sys.version.split()[0]))
    directory = tempfile.mkdtemp(prefix="login-starvation-")
    users_file = os.path.join(directory, "users.yaml")
    with open(os.open(users_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as stream:  # as nailgun-users writes
        yaml.safe_dump({"token_secret": Fernet.generate_key().decode(), "users": {"ops": {
            "password": bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt()).decode(), "roles": ["reader"]}}}, stream)
    with database(args.pg_url, "nailgun_login_bench", directory) as db_url:
        subprocess.run([sys.executable, "-c", "from nailgun_host.cmd.syncdb import syncdb; syncdb()", "--db-url",
                        db_url], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        print("{0:<28} {1:>8} {2:>8} {3:>8} {4:>7}  {5:<24} {6:<34} {7}".format(
            "logged-in GET", "p50 ms", "p99 ms", "max ms", "GETs", "its answers", "guesses' answers", "load"))
        for label, limits, name in RUNS:
            latencies, answers, guesses, load = run(db_url, directory, users_file, limits, name, args)
            latencies.sort()
            print("{0:<28} {1:>8.1f} {2:>8.1f} {3:>8.1f} {4:>7}  {5:<24} {6:<34} {7:.1f}-{8:.1f}".format(
                label, statistics.median(latencies) * 1e3, latencies[int(len(latencies) * 0.99)] * 1e3,
                latencies[-1] * 1e3, len(latencies), str(dict(answers)), str(dict(guesses)), *load))


if __name__ == "__main__":
    main()
