"""Hiera lookups of 500 keys for one node: ConfigDB backends against Hiera's YAML files.

The YAML backend reading the node's own files is the physical limit. Both sides get the
same 7 Fuel data sources (500 distinct keys, most found only in astute, the last one),
and every figure comes from ONE process doing all 500 lookups, so start-up does not
dominate:

- Puppet 7 / Hiera 5: ``puppet apply`` of a manifest looking up the 500 keys; the figure
  is Puppet's own "Compiled catalog ... in N seconds" (the lookups happen while compiling),
  with the whole process's wall time beside it.
- Hiera 3: one Ruby process timing ``Hiera#lookup`` of the 500 keys.

Run from the repository root (hiera and puppet installed):
    .venv/bin/python benchmarks/hiera_lookup.py [--runs 5] [--db-url URL]
"""
import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.configdb_clients import puppet_env  # noqa: E402

KEYS = 500


def value(rng, i):
    kind = i % 5
    if kind == 0:
        return rng.randint(0, 10 ** 6)
    if kind == 1:
        return "value-{0}-{1}".format(i, rng.random())
    if kind == 2:
        return [rng.choice(["a", "b", "c"]) * rng.randint(1, 8) for _ in range(rng.randint(1, 6))]
    if kind == 3:
        return {"enabled": rng.random() > 0.5, "port": rng.randint(1000, 9999),
                "nested": {"name": "n{0}".format(i), "list": list(range(rng.randint(1, 5)))}}
    return rng.random() > 0.5


def write_tree(root):
    """A Hiera tree of 500 keys: astute has most, the other data sources add and shadow some."""
    rng = random.Random(42)
    keys = ["key_{0:03d}".format(i) for i in range(KEYS)]
    sources = {
        "astute": keys[:330],
        "globals": keys[330:420] + rng.sample(keys[:330], 20),
        "override/plugins": rng.sample(keys, 25),
        "override/configuration/node": rng.sample(keys, 10),
        "override/configuration/role": rng.sample(keys, 10),
        "override/configuration/cluster": rng.sample(keys, 10),
        "override/node": keys[420:] + rng.sample(keys[:420], 10),
    }
    for source, mine in sources.items():
        path = root / (source + ".yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({k: value(rng, int(k[4:])) for k in mine}))
    return keys


def start_server(db_url):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([str(Path(sys.executable).parent / "nailgun-api"), "--db-url", db_url,
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return server, port
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("nailgun-api did not start")


def upload(port, tree, home):
    (home / "fuel").mkdir(parents=True, exist_ok=True)
    (home / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump({"SERVER_PORT": str(port)}))
    subprocess.run([str(Path(sys.executable).parent / "fuel-ext"), "config", "upload", "--env", "1",
                    "--node", "node-1.domain.tld", "--dir", str(tree)],
                   check=True, env=dict(os.environ, XDG_CONFIG_HOME=str(home)), stdout=subprocess.DEVNULL)


def puppet_run(codedir, keys, out_file):
    started = time.monotonic()
    result = puppet_env.puppet_apply(codedir, puppet_env.lookup_all_manifest(keys, out_file))
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    compiled = float(re.search(r"Compiled catalog for \S+ in environment \S+ in ([0-9.]+) seconds",
                               result.stdout).group(1))
    return compiled, wall, json.loads(Path(out_file).read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hiera-bench-"))
    tree = work / "hiera"
    keys = write_tree(tree)
    server, port = start_server(args.db_url or "sqlite:///{0}".format(work / "nailgun.db"))
    try:
        upload(port, tree, work / "home")
        url = "http://127.0.0.1:{0}/api/v1/config".format(port)
        sides = {"configdb": puppet_env.write_puppet_code(work / "code-configdb", configdb_url=url),
                 "yaml": puppet_env.write_puppet_code(work / "code-yaml", yaml_tree=tree)}
        results = {name: [] for name in sides}
        answers = {}
        for _ in range(args.runs):
            for name, codedir in sides.items():
                compiled, wall, answers[name] = puppet_run(codedir, keys, work / "out-{0}.json".format(name))
                results[name].append((compiled, wall))
        assert answers["configdb"] == answers["yaml"] and len(answers["yaml"]) == KEYS, "the backends disagree"
        scope = puppet_env.write_scope(work)
        (work / "h3-configdb").mkdir()
        (work / "h3-yaml").mkdir()
        h3 = {"configdb": puppet_env.write_hiera3(work / "h3-configdb", url),
              "yaml": puppet_env.write_hiera3(work / "h3-yaml", yaml_tree=tree)}
        hiera3 = {name: [] for name in h3}
        for _ in range(args.runs):
            for name, config in h3.items():
                run = puppet_env.hiera_all(config, scope, keys, work)
                answers[name] = run["values"]
                hiera3[name].append(run["seconds"])
        assert answers["configdb"] == answers["yaml"], "the Hiera 3 backends disagree"
    finally:
        server.terminate()
        server.wait()
    report(results, hiera3, args.runs)


def report(results, hiera3, runs):
    compile_median = {n: statistics.median(c for c, _ in r) for n, r in results.items()}
    wall_median = {n: statistics.median(w for _, w in r) for n, r in results.items()}
    h3_median = {n: statistics.median(r) for n, r in hiera3.items()}
    print("{0} lookups for one node, median of {1} runs".format(KEYS, runs))
    print("| backend | puppet apply: catalog compile (s) | puppet apply: process wall (s) | Hiera 3 lookups (s) |")
    print("|---|---|---|---|")
    for name, label in (("configdb", "ConfigDB (HTTP, live server)"), ("yaml", "YAML files (local)")):
        print("| {0} | {1:.2f} | {2:.2f} | {3:.3f} |".format(label, compile_median[name], wall_median[name],
                                                              h3_median[name]))
    print("| ratio ConfigDB / YAML | {0:.2f}x | {1:.2f}x | {2:.2f}x |".format(
        compile_median["configdb"] / compile_median["yaml"], wall_median["configdb"] / wall_median["yaml"],
        h3_median["configdb"] / h3_median["yaml"]))


if __name__ == "__main__":
    main()
