"""The references our figures are compared with, started by the benchmark scripts in the same run.

- ``waitress(app)``: a WSGI application under ``waitress-serve`` with the production recipe's flags
  (docs/operator/production.md: 8 threads, channel timeout 60 s, cleanup every second);
- ``minimal_app(answers)``: the limit of that server: a WSGI app handing out from memory the very bytes and
  headers of our answers (and a 304 for a matching ``If-None-Match``), under the same ``waitress``;
- ``nginx_files(files)``: Debian's nginx serving the same bytes as files;
- ``etcd()``: etcd 3.4 (Debian's ``etcd-server``) on loopback, the store users would pick instead, spoken to
  through its v3 JSON gateway (``Etcd.put``/``get``), as an HTTP client of ours is.

``wrk`` runs a load, ``interleaved`` alternates targets round by round (the order turned each round) so that a
machine that gets busier during a run weighs on every target alike, and ``ratios`` gives each round's ratio.
"""
import base64
import contextlib
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import requests
import yaml

from servers import ROOT, free_port, served

FIXTURE = os.path.join(ROOT, "tests", "configdb_clients", "fixtures", "hiera", "astute.yaml")
#: waitress-serve's flags in the production recipe (docs/operator/production.md), but the address
WAITRESS_FLAGS = ("--threads=8", "--channel-timeout=60", "--cleanup-interval=1")

MINIMAL_APP = '''
import json, os
ANSWERS = {}
with open(os.environ["MINIMAL_ANSWERS"]) as stream:
    for target, (body_file, headers) in json.load(stream).items():
        with open(body_file, "rb") as body:
            data = body.read()
        etag = next((v for k, v in headers if k.lower() == "etag"), None)
        ANSWERS[target] = (data, [tuple(h) for h in headers] + [("Content-Length", str(len(data)))], etag)
def application(environ, start_response):
    body, headers, etag = ANSWERS[environ["PATH_INFO"] + "?" + environ.get("QUERY_STRING", "")]
    if etag is not None and environ.get("HTTP_IF_NONE_MATCH") == etag:
        start_response("304 Not Modified", [("ETag", etag)])
        return []
    start_response("200 OK", headers)
    return [body]
'''


def sized_documents(sizes=(("1 KB", 1000), ("39 KB", 39000), ("1 MB", 1000000))):
    """``{label: document}`` of about the given sizes of JSON, made of the real astute.yaml's keys."""
    with open(FIXTURE) as stream:
        astute = yaml.safe_load(stream)
    sized = {}
    for label, size in sizes:
        document, copy = {}, 0
        while len(json.dumps(document)) < size:
            for key, value in astute.items():
                document["{0}_{1}".format(key, copy) if copy else key] = value
                if size < 2000 and len(json.dumps(document)) >= size:
                    break
            copy += 1
        sized[label] = document
    return sized


def waitress(app, env=None, cwd=ROOT, flags=WAITRESS_FLAGS):
    """``waitress-serve`` of ``app`` (``module:callable`` importable from ``cwd``) on a free loopback port, with
    the production recipe's flags; a context manager giving its base URL."""
    port = free_port()
    binary = shutil.which("waitress-serve", path=os.path.dirname(sys.executable)) or shutil.which("waitress-serve")
    return served([binary, "--listen=127.0.0.1:{0}".format(port), *flags, app], port, env, cwd)


@contextlib.contextmanager
def minimal_app(answers, flags=WAITRESS_FLAGS):
    """The minimal app under ``waitress`` with ``flags``, answering ``{"path?query": (body bytes, [(header,
    value), ...])}`` (the query part may be empty: ``"/x?"``); its base URL."""
    with tempfile.TemporaryDirectory(prefix="minimal-app-") as directory:
        index = {}
        for number, (target, (body, headers)) in enumerate(answers.items()):
            path = os.path.join(directory, "body{0}".format(number))
            with open(path, "wb") as stream:
                stream.write(body)
            index[target if "?" in target else target + "?"] = [path, [list(h) for h in headers]]
        with open(os.path.join(directory, "answers.json"), "w") as stream:
            json.dump(index, stream)
        with open(os.path.join(directory, "minimal_app.py"), "w") as stream:
            stream.write(MINIMAL_APP)
        with waitress("minimal_app:application", {"MINIMAL_ANSWERS": os.path.join(directory, "answers.json")},
                      cwd=directory, flags=flags) as url:
            yield url


NGINX_CONF = '''
daemon off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {root}/tmp;
    proxy_temp_path {root}/tmp;
    fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp;
    scgi_temp_path {root}/tmp;
    default_type application/json;
    server {{
        listen 127.0.0.1:{port};
        root {root}/files;
    }}
}}
'''


@contextlib.contextmanager
def nginx_files(files):
    """Debian's nginx (one worker) serving ``{"/path": body bytes}`` as files on a free loopback port; its base URL."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    with tempfile.TemporaryDirectory(prefix="nginx-files-") as root:
        os.chmod(root, 0o755)
        os.makedirs(os.path.join(root, "tmp"))
        for path, body in files.items():
            target = os.path.join(root, "files", path.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as stream:
                stream.write(body)
        for directory, _, _ in os.walk(root):
            os.chmod(directory, 0o755)
        port = free_port()
        with open(os.path.join(root, "nginx.conf"), "w") as stream:
            stream.write(NGINX_CONF.format(root=root, port=port))
        with served([binary, "-p", root, "-c", os.path.join(root, "nginx.conf"), "-e", os.path.join(root, "error.log")],
                    port) as url:
            yield url


class Etcd:
    """An etcd reached through its v3 JSON gateway (keys and values travel base64-encoded, as etcd asks)."""

    def __init__(self, url):
        self.url = url
        self.http = requests.Session()

    @staticmethod
    def encode(data):
        return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()

    def put(self, key, value):
        """Writes ``value`` (bytes) at ``key``; the revision etcd gave the write."""
        answer = self.http.post(self.url + "/v3/kv/put", json={"key": self.encode(key), "value": self.encode(value)})
        answer.raise_for_status()
        return int(answer.json()["header"]["revision"])

    def get(self, key):
        """The bytes at ``key``, or None."""
        answer = self.http.post(self.url + "/v3/kv/range", json={"key": self.encode(key)})
        answer.raise_for_status()
        kvs = answer.json().get("kvs")
        return base64.b64decode(kvs[0]["value"]) if kvs else None


@contextlib.contextmanager
def etcd(max_request_bytes=8 * 1024 * 1024):
    """etcd 3.4 alone on free loopback ports, with its data (and write-ahead log, fsync'ed as by default) in a
    scratch directory; an ``Etcd``. ``max_request_bytes``: etcd refuses larger writes (its default, 1.5 MiB, is
    raised so that a 1.2 MB document fits with its base64 encoding)."""
    binary = shutil.which("etcd")
    if binary is None:
        raise RuntimeError("etcd is not installed (apt-get install etcd-server)")
    client, peer = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="etcd-") as directory:
        command = [binary, "--name", "bench", "--data-dir", os.path.join(directory, "data"),
                   "--listen-client-urls", "http://127.0.0.1:{0}".format(client),
                   "--advertise-client-urls", "http://127.0.0.1:{0}".format(client),
                   "--listen-peer-urls", "http://127.0.0.1:{0}".format(peer),
                   "--initial-advertise-peer-urls", "http://127.0.0.1:{0}".format(peer),
                   "--initial-cluster", "bench=http://127.0.0.1:{0}".format(peer),
                   "--max-request-bytes", str(max_request_bytes), "--log-level", "error"]
        with served(command, client, env={"ETCD_UNSUPPORTED_ARCH": ""}) as url:
            store = Etcd(url)
            deadline = 30  # seconds
            while True:  # listening is not serving: wait for the member to be elected
                with contextlib.suppress(requests.RequestException):
                    if store.http.post(url + "/v3/kv/range", json={"key": "cHJvYmU="}, timeout=1).ok:
                        break
                deadline -= 1
                if deadline == 0:
                    raise RuntimeError("etcd did not start serving")
                time.sleep(1)
            yield store


def wrk(url, seconds, connections, headers=(), threads=2):
    """``{"rate": requests per second, "p50": ms, "p99": ms}`` of one wrk run (an answer but 2xx/3xx fails it)."""
    command = ["wrk", "-t", str(threads), "-c", str(connections), "-d", "{0}s".format(seconds), "--latency", url]
    for header in headers:
        command[1:1] = ["-H", header]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if re.search(r"Non-2xx or 3xx responses: \d+", out) or re.search(r"Socket errors:", out):
        raise RuntimeError("errors under load:\n" + out)

    def latency(percentile):
        value, unit = re.search(r"\s{0}%\s+([\d.]+)(us|ms|s)\b".format(percentile), out).groups()
        return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]

    return {"rate": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": latency(50),
            "p99": latency(99), "requests": int(re.search(r"(\d+) requests in", out).group(1))}


def server_cpu_seconds(url):
    """User and system CPU seconds spent so far by the process listening at ``url`` and its live children (the
    read cache's state reader, ``READ_CACHE.state_reader: process``) (Linux: ``ss``, ``/proc``)."""
    port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    listening = subprocess.run(["ss", "-ltnpH", "sport = :" + port], capture_output=True, text=True, check=True).stdout
    pid = int(re.search(r"pid=(\d+)", listening).group(1))
    children = []
    for task in glob.glob("/proc/{0}/task/*/children".format(pid)):  # a request thread starts the state reader
        with contextlib.suppress(FileNotFoundError), open(task) as stream:
            children.extend(int(child) for child in stream.read().split())
    return sum(_cpu_seconds(process) for process in [pid] + children)


def _cpu_seconds(pid):
    try:
        with open("/proc/{0}/stat".format(pid)) as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # a child gone meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_with_cpu(url, seconds, connections, headers=()):
    """``wrk``'s figures and ``cpu_us``: the server's CPU per answered request meanwhile (every thread of it)."""
    before = server_cpu_seconds(url)
    run = wrk(url, seconds, connections, headers)
    run["cpu_us"] = (server_cpu_seconds(url) - before) / run["requests"] * 1e6
    return run


def interleaved(targets, rounds, measure):
    """``{name: [measure(target) of each round]}``: every target once a round, the order turned by one each round."""
    names = list(targets)
    found = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            found[name].append(measure(targets[name]))
    return found


def ratios(ours, reference, key="rate"):
    """Each round's ``ours[key] / reference[key]`` (two lists of one ``interleaved`` run)."""
    return [a[key] / b[key] for a, b in zip(ours, reference)]


def median(values):
    return statistics.median(values)


def load_average():
    """``/proc/loadavg``'s three figures, for the record next to the results."""
    with open("/proc/loadavg") as stream:
        return " ".join(stream.read().split()[:3])
