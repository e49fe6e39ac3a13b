"""How long the console's pages take to draw in a real browser for an environment of N nodes.

    python benchmarks/console_pages.py [--nodes 200] [--rounds 5] [--db-url URL] [--requests]

Starts ``nailgun-api`` (authentication off, loopback) on a new SQLite file (or ``--db-url``, whose tables must be
empty), and loads through the API what a Fuel master of N nodes holds: a release, a cluster of N nodes cloned into an
upgrade seed that half of them moved to, the linked ConfigDB environment with an astute-like document at the
environment level and one per node (about 2 KB each, a secret among them), three versions of one node's document,
and an open session with a staged change. Then Debian's chromium (headless, through chromium-driver) opens each
page afresh, rounds interleaved, and the figure is the time from the start of the navigation to the page drawn (the
console's ``console-ready`` mark: the shell, its script modules, the identity and the page's API requests). The
reference in the same run is the same browser loading ``/api/v1/version`` of the same server (one request, nothing
drawn). Prints the median and the worst in ms per page.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.references import load_average  # noqa: E402
from benchmarks.servers import served, free_port  # noqa: E402

SETTINGS = "ADMIN_NETWORK:\n  cidr: 10.20.0.0/20\n  gateway: 10.20.0.1\n  ip_ranges: [[10.20.0.3, 10.20.15.254]]\n"


def call(api, method, path, body=None, headers=None):
    answer = requests.request(method, api + path, json=body, headers=headers, timeout=300)
    answer.raise_for_status()
    return answer.json() if answer.content else None


def astute(index):
    """An astute.yaml-like document of about 2 KB."""
    return {"uid": str(index), "fqdn": "node-{0}.domain.tld".format(index), "role": "compute",
            "nova": {"debug": False, "workers": 4, "db_password": "secret-{0}".format(index)},
            "network_scheme": {"endpoints": {"br-mgmt": {"IP": ["192.168.0.{0}/24".format(index % 250 + 1)]}},
                               "roles": {name: "br-mgmt" for name in ("management", "keystone", "nova", "glance",
                                                                     "swift", "cinder", "neutron", "horizon")}},
            "nodes": [{"uid": str(n), "name": "node-{0}".format(n), "role": "controller"} for n in range(12)]}


def seed(api, count):
    """The data of the pages; returns the hash paths to measure."""
    old = call(api, "POST", "/releases/", {"name": "Liberty", "version": "liberty-8.0", "operating_system": "Ubuntu"})
    new = call(api, "POST", "/releases/", {"name": "Mitaka", "version": "mitaka-9.0", "operating_system": "Ubuntu"})
    orig = call(api, "POST", "/clusters/", {"name": "orig", "release_id": old["id"]})
    nodes = []
    for index in range(count):
        mac = "52:54:00:{0:02x}:{1:02x}:01".format(index // 256, index % 256)
        node = call(api, "POST", "/nodes/", {"mac": mac, "meta": {"interfaces": [{"name": "eth0", "mac": mac}]}})
        call(api, "PUT", "/nodes/{0}/".format(node["id"]),
             {"cluster_id": orig["id"], "roles": ["compute"], "status": "ready"})
        nodes.append(node["id"])
    component = call(api, "POST", "/config/components", {"name": "fuel", "resource_definitions": [
        {"name": "astute"}, {"name": "globals"}]})
    astute_id = component["resource_definitions"][0]["id"]
    environment = call(api, "POST", "/config/environments", {"id": orig["id"], "components": ["fuel"],
                                                             "hierarchy_levels": ["nodes"]})
    documents = [{"resource": "astute", "data": astute(0)}] + [
        {"level": "nodes/{0}".format(node), "resource": "astute", "data": astute(node)} for node in nodes]
    call(api, "POST", "/config/environments/{0}/documents".format(environment["id"]), {"documents": documents})
    first = nodes[0]
    document = "/config/environments/{0}/nodes/{1}/resources/{2}/values".format(environment["id"], first, astute_id)
    for workers in (8, 16):
        data = astute(first)
        data["nova"]["workers"] = workers
        call(api, "PUT", document, data)
    session = call(api, "POST", "/config/environments/{0}/configure".format(environment["id"]))
    call(api, "PUT", document, dict(astute(first), role="controller"), headers={
        "X-Configuration-Session": session["id"]})
    seed_cluster = call(api, "POST", "/clusters/{0}/upgrade/clone/".format(orig["id"]),
                        {"name": "seed", "release_id": new["id"]})
    call(api, "POST", "/clusters/{0}/upgrade/assign/".format(seed_cluster["id"]), {"nodes_ids": nodes[:count // 2]})
    env = environment["id"]
    return {
        "environments": "#/environments",
        "environment": "#/environments/{0}".format(env),
        "effective values of a node": "#/environments/{0}/effective/nodes/{1}".format(env, nodes[-1]),
        "history of a document": "#/environments/{0}/history/values/{1}/nodes/{2}".format(env, astute_id, first),
        "sessions": "#/environments/{0}/sessions".format(env),
        "session diff": "#/environments/{0}/sessions/{1}".format(env, session["id"]),
        "clusters": "#/clusters",
        "cluster with its seed": "#/clusters/{0}".format(orig["id"]),
    }


def browser(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--window-size=1400,1000", "--user-data-dir=" + profile):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def drawn_ms(driver, url):
    """Milliseconds from the start of a fresh navigation to ``url`` to the console's ``console-ready`` mark."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return performance.getEntriesByName('console-ready').length > 0"))
    return driver.execute_script("return performance.getEntriesByName('console-ready')[0].startTime")


def requests_made(driver):
    """The API requests of the page last drawn: (path, ms from the navigation's start to its end, its ms)."""
    return driver.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/api/'))"
        ".map(e => [new URL(e.name).pathname + new URL(e.name).search, e.responseEnd, e.duration])")


def reference_ms(driver, url):
    """Milliseconds from the start of a navigation to ``url`` (one JSON answer) to its load event's end."""
    driver.get("about:blank")
    driver.get(url)
    return driver.execute_script("const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db-url", help="an empty, migrated database (default: a new SQLite file)")
    parser.add_argument("--requests", action="store_true", help="also list each page's API requests and their times")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="console-pages-")
    config = os.path.join(directory, "settings.yaml")
    with open(config, "w") as stream:
        stream.write(SETTINGS)
    db_url = args.db_url or "sqlite:///" + os.path.join(directory, "console.db")
    port = free_port()
    command = [sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()", "--db-url", db_url,
               "--port", str(port), "--config", config]
    with served(command, port) as base:
        api = base + "/api/v1"
        pages = seed(api, args.nodes)
        driver = browser(os.path.join(directory, "profile"))
        try:
            times = {name: [] for name in pages}
            reference = []
            for name, path in pages.items():  # a first load of each: the browser's caches warm, as an operator's
                drawn_ms(driver, base + "/ui/" + path)
            made = {}
            for _ in range(args.rounds):
                reference.append(reference_ms(driver, api + "/version"))
                for name, path in pages.items():
                    times[name].append(drawn_ms(driver, base + "/ui/" + path))
                    made[name] = requests_made(driver)
        finally:
            driver.quit()
    print("{0} nodes, {1} rounds, load average {2}".format(args.nodes, args.rounds, load_average()))
    print("{0:<28} {1:>10} {2:>10}".format("page", "median ms", "worst ms"))
    print("{0:<28} {1:>10.0f} {2:>10.0f}".format("reference: /api/v1/version", statistics.median(reference),
                                                 max(reference)))
    for name, figures in times.items():
        print("{0:<28} {1:>10.0f} {2:>10.0f}".format(name, statistics.median(figures), max(figures)))
    if args.requests:
        for name, found in made.items():
            print("\n{0} (last round): the API requests, ms from the navigation's start to their end, and their own ms"
                  .format(name))
            for path, end, took in found:
                print("  {0:>6.0f} {1:>6.0f}  {2}".format(end, took, path))
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
