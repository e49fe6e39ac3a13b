"""Hiera lookups of 500 keys for one node: ConfigDB backends against Hiera's YAML files.

The YAML backend reading the node's own files is the physical limit. Both sides get the
same 7 Fuel data sources (500 distinct keys, most found only in astute, the last one),
and every figure comes from ONE process doing all 500 lookups, so start-up does not
dominate:

- Puppet 7 / Hiera 5: ``puppet apply`` of a manifest looking up the 500 keys, through
  ``configdb::data_hash`` (one location, then one per data source: ``uris``),
  ``configdb::lookup_key``, and ``yaml_data`` over the files. Figures: Puppet's own
  "Compiled catalog ... in N seconds" (the lookups happen while compiling; printed to
  10 ms), the lookups alone (timed by the manifest with Puppet's clock), and the whole
  process's wall time.
- Hiera 3: one Ruby process timing ``Hiera#lookup`` of the 500 keys.

Each round runs every side once, in an order rotated from round to round, so that a
change of the machine's load hits every side alike; a ratio is the median of the rounds'
ratios to YAML in the same round. The load average is printed before and after.

Run from the repository root (hiera and puppet installed):
    .venv/bin/python benchmarks/hiera_lookup.py [--runs 7] [--db-url URL]
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


#: the Puppet 7 sides: (label, write_puppet_code's arguments besides the code dir); YAML, the limit, is last
PUPPET_SIDES = [
    ("configdb::data_hash", {"function": "data_hash"}),
    ("configdb::data_hash, uris", {"function": "data_hash", "uris": puppet_env.FUEL_ORDER}),
    ("configdb::lookup_key", {"function": "lookup_key"}),
    ("YAML files (yaml_data)", {}),
]
YAML = PUPPET_SIDES[-1][0]


def puppet_run(codedir, keys, out_file):
    """{"compile": s, "lookups": s, "wall": s}, {key: value} of one ``puppet apply``."""
    started = time.monotonic()
    result = puppet_env.puppet_apply(codedir, puppet_env.lookup_all_manifest(keys, out_file))
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    compiled = re.search(r"Compiled catalog for \S+ in environment \S+ in ([0-9.]+) seconds", result.stdout)
    lookups = re.search(r"lookups took ([0-9.e-]+) seconds", result.stdout)
    figures = {"compile": float(compiled.group(1)), "lookups": float(lookups.group(1)), "wall": wall}
    return figures, json.loads(Path(out_file).read_text())


def rounds(sides, runs, run_one):
    """{side: [figures of each round]}: each round runs every side once, the order rotated by one each round."""
    names = list(sides)
    results = {name: [] for name in names}
    for number in range(runs):
        for name in names[number % len(names):] + names[:number % len(names)]:
            results[name].append(run_one(name))
    return results


def median_ratio(results, name, reference, measure=None):
    """The median over the rounds of name's figure divided by reference's in the same round."""
    pick = (lambda figures: figures[measure]) if measure else (lambda figure: figure)
    return statistics.median(pick(a) / pick(b) for a, b in zip(results[name], results[reference]))


def load_average():
    return "{0:.2f} {1:.2f} {2:.2f}".format(*os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--db-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hiera-bench-"))
    tree = work / "hiera"
    keys = write_tree(tree)
    server, port = start_server(args.db_url or "sqlite:///{0}".format(work / "nailgun.db"))
    try:
        upload(port, tree, work / "home")
        url = "http://127.0.0.1:{0}/api/v1/config".format(port)
        codedirs = {}
        for number, (name, arguments) in enumerate(PUPPET_SIDES):
            source = {"yaml_tree": tree} if name == YAML else {"configdb_url": url}
            codedirs[name] = puppet_env.write_puppet_code(work / "code-{0}".format(number), **source, **arguments)
        answers = {}

        def puppet_side(name):
            figures, answers[name] = puppet_run(codedirs[name], keys, work / "out.json")
            return figures

        scope = puppet_env.write_scope(work)
        (work / "h3-configdb").mkdir()
        (work / "h3-yaml").mkdir()
        configs = {"configdb": puppet_env.write_hiera3(work / "h3-configdb", url),
                   "yaml": puppet_env.write_hiera3(work / "h3-yaml", yaml_tree=tree)}

        def hiera3_side(name):
            run = puppet_env.hiera_all(configs[name], scope, keys, work)
            answers["Hiera 3 " + name] = run["values"]
            return run["seconds"]

        load_before = load_average()
        puppet = rounds(codedirs, args.runs, puppet_side)
        hiera3 = rounds(configs, args.runs, hiera3_side)
        load_after = load_average()
        assert len(answers[YAML]) == KEYS and all(answers[name] == answers[YAML] for name in codedirs), \
            "the Puppet backends disagree"
        assert answers["Hiera 3 configdb"] == answers["Hiera 3 yaml"] == answers[YAML], "the Hiera 3 backends disagree"
    finally:
        server.terminate()
        server.wait()
    report(puppet, hiera3, args.runs, load_before, load_after)


def report(puppet, hiera3, runs, load_before, load_after):
    print("{0} lookups for one node, {1} rounds; load average (1, 5, 15 min) {2} before, {3} after".format(
        KEYS, runs, load_before, load_after))
    print("medians, in seconds; a ratio is the median of the rounds' ratios to YAML")
    print()
    print("| Puppet 7 (Hiera 5) | catalog compile | ratio | lookups alone | ratio | process wall | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name in puppet:
        cells = []
        for measure in ("compile", "lookups", "wall"):
            cells.append("{0:.3f}".format(statistics.median(figures[measure] for figures in puppet[name])))
            cells.append("{0:.2f}x".format(median_ratio(puppet, name, YAML, measure)))
        print("| {0} | {1} |".format(name, " | ".join(cells)))
    print()
    print("| Hiera 3 | 500 lookups | ratio |")
    print("|---|---|---|")
    for name, label in (("configdb", "configdb backend (HTTP, live server)"), ("yaml", "yaml backend")):
        print("| {0} | {1:.3f} | {2:.2f}x |".format(label, statistics.median(hiera3[name]),
                                                   median_ratio(hiera3, name, "yaml")))


if __name__ == "__main__":
    main()
