"""Time the upgrade requests as octane makes them: clone an environment, move N nodes, copy VIPs.

Starts ``nailgun-api`` on a free port over a database it creates (a temporary SQLite
file, or ``--db-url``, whose tables it empties first), builds an orig environment
with N nodes through the API, and prints the median wall time of each request over
``--repeat`` runs, and the fastest move (a large move may set off a full garbage collection
of the server's heap, which the median then includes). Every run adds its nodes, so the server's admin network is a /20
(the default /24 holds 252 nodes in all):

    python benchmarks/upgrade_move_nodes.py --nodes 1 10 50 --repeat 3
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import requests
import sqlalchemy as sa


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: settings of the server: room in the admin network for every node of every run
SETTINGS = """
ADMIN_NETWORK:
  cidr: 10.20.0.0/20
  gateway: 10.20.0.1
  ip_ranges: [[10.20.0.3, 10.20.15.254]]
"""


def start_server(db_url, directory):
    port = free_port()
    config = os.path.join(directory, "settings.yaml")
    with open(config, "w") as stream:
        stream.write(SETTINGS)
    process = subprocess.Popen([sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()",
                                "--db-url", db_url, "--port", str(port), "--config", config],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get("http://127.0.0.1:{0}/api/v1/version".format(port), timeout=1)
            return process, "http://127.0.0.1:{0}/api/v1/".format(port)
        except requests.ConnectionError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError("nailgun-api did not start")


def empty_tables(db_url):
    engine = sa.create_engine(db_url)
    meta = sa.MetaData()
    meta.reflect(engine)
    with engine.begin() as connection:
        for table in reversed(meta.sorted_tables):
            if not table.name.endswith("alembic_version"):
                connection.execute(table.delete())
    engine.dispose()


def call(method, url, body=None):
    started = time.perf_counter()
    response = requests.request(method, url, json=body, timeout=300)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return response.json(), elapsed


def run(api, count, serial):
    old, _ = call("POST", api + "releases/", {"name": "Liberty {0}".format(serial), "version": "liberty-8.0",
                                              "operating_system": "Ubuntu"})
    new, _ = call("POST", api + "releases/", {"name": "Mitaka {0}".format(serial), "version": "mitaka-9.0",
                                              "operating_system": "Ubuntu"})
    orig, _ = call("POST", api + "clusters/", {"name": "orig-{0}".format(serial), "release_id": old["id"]})
    ids = []
    for index in range(count):
        mac = "52:54:{0:02x}:{1:02x}:{2:02x}:{3:02x}".format(serial % 256, index // 256, index % 256, 1)
        nic2 = mac[:-2] + "02"
        node, _ = call("POST", api + "nodes/", {"mac": mac, "meta": {"interfaces": [
            {"name": "eth0", "mac": mac, "pxe": True}, {"name": "eth1", "mac": nic2}]}})
        role = "controller" if index < 3 else "compute"
        call("PUT", api + "nodes/{0}/".format(node["id"]),
             {"cluster_id": orig["id"], "roles": [role], "status": "ready"})
        ids.append(node["id"])
    seed, clone = call("POST", api + "clusters/{0}/upgrade/clone/".format(orig["id"]),
                       {"name": "seed-{0}".format(serial), "release_id": new["id"]})
    _, move = call("POST", api + "clusters/{0}/upgrade/assign/".format(seed["id"]), {"nodes_ids": ids})
    _, vips = call("POST", api + "clusters/{0}/upgrade/vips/".format(seed["id"]))
    return clone, move, vips


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db-url", help="database to use (its tables are emptied); default: a new SQLite file")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    db_url = args.db_url or "sqlite:///" + os.path.join(tmp, "bench.db")
    process, api = start_server(db_url, tmp)
    try:
        if args.db_url:
            empty_tables(db_url)
        print("{0:>6} {1:>10} {2:>14} {3:>10} {4:>14}".format(
            "nodes", "clone ms", "move all ms", "vips ms", "move all min"))
        serial = 0
        for count in args.nodes:
            samples = []
            for _ in range(args.repeat):
                serial += 1
                samples.append(run(api, count, serial))
            clone, move, vips = (statistics.median(s[i] for s in samples) * 1000 for i in range(3))
            print("{0:>6} {1:>10.1f} {2:>14.1f} {3:>10.1f} {4:>14.1f}".format(
                count, clone, move, vips, min(s[1] for s in samples) * 1000))
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main()
