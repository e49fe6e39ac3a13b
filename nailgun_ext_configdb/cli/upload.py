"""``fuel2 config upload``: a node's Hiera directory into ConfigDB (the spec's "Orchestration" task).

Every ``*.yaml`` under the directory goes to the data source named by its path without
the extension: ``astute.yaml`` → ``astute``, ``override/plugins.yaml`` →
``override/plugins``, ``override/configuration/role.yaml`` → ``override/configuration/role``.
Everything is parsed before the first request, so a malformed file uploads nothing: with
libyaml when PyYAML has it, the node directories of ``config upload env`` in a process per core,
then the PUTs go ``--jobs`` at a time.
The component, its resource definitions and the environment are created when missing;
an unchanged file makes no new version (the server keeps equal PUTs as they are).
"""
import argparse
import concurrent.futures
import os
import sys
import threading
import time

import yaml
from cliff.command import Command

from nailgun_platform.client import APIError, ClientMixin
from nailgun_ext_configdb.cli import plain_yaml
from nailgun_ext_configdb.cli.paths import NODE_LEVEL, ROOT, ConfigDBError, resource_path

COMPONENT = "fuel"
DEFAULT_DIR = "/etc/hiera"
#: PUTs under way at once: enough to keep the server busy while the client encodes the next bodies
JOBS = 4
#: requests' connection pool keeps 10 connections per host; more threads would open and drop extra ones
MAX_JOBS = 10
#: node directories per process parsing them: an environment of a few nodes is read in this one
DIRECTORIES_PER_PROCESS = 8
TIMESTAMP = "tag:yaml.org,2002:timestamp"
#: times a PUT is sent again after a 503 with Retry-After, and the longest wait for each
BUSY_RETRIES, BUSY_WAIT = 3, 10


def without_timestamps(loader):
    """Keeps timestamps as the strings they are: Hiera values must stay JSON."""
    loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    return loader


@without_timestamps
class HieraLoader(yaml.SafeLoader):
    """PyYAML's safe loader, in pure Python."""


if yaml.__with_libyaml__:
    @without_timestamps
    class HieraCLoader(yaml.CSafeLoader):
        """The same loader with libyaml's parser: parsing is most of an upload's time, and libyaml's is
        5-10x faster. The resolver (which plain scalar is an int, a bool, a string) and the constructor stay
        the pure-Python loader's, so the documents read are the same (tests/configdb_clients/test_upload_speed.py)."""

    #: the loader ``load_source`` uses
    Loader = HieraCLoader
else:  # PyYAML built without libyaml
    Loader = HieraLoader


def parse(stream):
    """A YAML document as the pure-Python loader reads it, at libyaml's speed when PyYAML has it.

    A plain document (no tags, anchors or merge keys: every Hiera file Nailgun writes) is built from the
    parser's events (``plain_yaml``), three times faster than the loader composes and constructs it.
    On a file libyaml refuses, the pure-Python loader reads it again: its error (line, column and words) is
    the one this command always gave. The parsers disagree only on edge cases no Hiera file relies on (the
    tests name them): a tab after a value, refused by the pure-Python scanner alone, is now read."""
    try:
        try:
            return plain_yaml.load(stream, Loader)
        except plain_yaml.Unusual:
            stream.seek(0)
            return yaml.load(stream, Loader=Loader)
    except yaml.YAMLError:
        if Loader is HieraLoader:
            raise
        stream.seek(0)
        return yaml.load(stream, Loader=HieraLoader)


def load_source(path):
    """One file's mapping; a syntax error names the file and line."""
    try:
        with open(path, encoding="utf-8") as stream:
            data = parse(stream)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ConfigDBError("{0}, line {1}, column {2}: {3}".format(
            path, mark.line + 1, mark.column + 1, exc.problem or exc.context))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigDBError("{0}: {1}".format(path, exc))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigDBError("{0}: a data source must be a mapping, not a {1}".format(path, type(data).__name__))
    return data


def read_tree(directory):
    """``{data source name: mapping}`` for every YAML file under ``directory``."""
    if not os.path.isdir(directory):
        raise ConfigDBError("{0} is not a directory".format(directory))
    sources = {}
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".yaml"):
                path = os.path.join(root, name)
                source = os.path.relpath(path, directory)[:-len(".yaml")].replace(os.sep, "/")
                sources[source] = load_source(path)
    if not sources:
        raise ConfigDBError("No YAML files under {0}".format(directory))
    return sources


def read_trees(directories, jobs=1):
    """``read_tree`` of each directory, in order; with many directories, in up to ``jobs`` processes (one per core
    at most): parsing is CPU-bound, threads would share one core. The first error in order is raised, as
    reading the directories one by one would."""
    workers = min(jobs, os.cpu_count() or 1, len(directories) // DIRECTORIES_PER_PROCESS)
    if workers > 1:
        try:
            pool = concurrent.futures.ProcessPoolExecutor(workers)
        except (OSError, NotImplementedError):  # no POSIX semaphores here (some containers): one process
            pass
        else:
            with pool:
                return list(pool.map(read_tree, directories, chunksize=max(1, len(directories) // (workers * 8))))
    return [read_tree(directory) for directory in directories]


def node_of(name, nodes):
    """The id of the node of ``nodes`` (the API's node list) that ``name`` names by the server's rule
    (``objects.levels``): a whole number names an id (``01`` too), anything else an FQDN; None when none does."""
    text = str(name)
    if text.isascii() and text.isdigit():
        return next((node["id"] for node in nodes if node["id"] == int(text)), None)
    return next((node["id"] for node in nodes if node.get("fqdn") == text), None)


class Uploader:
    """Creates what is missing in ConfigDB, then PUTs each node's data sources by id, ``jobs`` at a time.

    The threads share the command's client. Every request goes to one server, so through one urllib3
    connection pool (thread-safe, 10 connections: ``MAX_JOBS``); the API sets no cookies; keystoneauth1's
    password plugin gets and renews the token under a lock; fuel2's token is got by the requests of
    ``prepare``, before the PUTs start.
    """

    def __init__(self, client, env, component=COMPONENT, jobs=JOBS):
        self.client = client
        self.env = env
        self.component = component
        self.jobs = jobs
        self.definition_ids = {}
        self.linked = False

    def prepare(self, names):
        component = self._component(names)
        have = {d["name"]: d["id"] for d in component.get("resource_definitions", [])}
        for name in sorted(set(names) - set(have)):
            have[name] = self._definition(component["id"], name)
        self.definition_ids = have
        self.linked = bool(self._environment(component["id"]).get("linked"))

    def check_nodes(self, names):
        """Refuse, before any PUT, node names the server would refuse, or that name one node twice (the later
        upload would silently replace the other's): in an environment linked to its cluster (the server's stored
        flag) a ``nodes`` value is one of the cluster's nodes, by id or FQDN (``node_of``)."""
        if not self.linked:
            return
        nodes = self.client.get("nodes/", params={"cluster_id": self.env})
        named = {}
        for name in names:
            named.setdefault(node_of(name, nodes), []).append(str(name))
        if None in named:
            raise ConfigDBError("Cluster {0} has no node {1} (environment {0} is linked to it): nothing uploaded".format(
                self.env, ", ".join(sorted(named[None]))))
        twice = sorted(sorted(same) for same in named.values() if len(same) > 1)
        if twice:
            raise ConfigDBError("{0} name the same node of cluster {1} (environment {1} is linked to it): nothing "
                                "uploaded".format("; ".join(" and ".join(same) for same in twice), self.env))

    def _definition(self, component_id, name):
        """The id of a new definition; when another node created it meanwhile (409), that one's."""
        try:
            return self.client.post(ROOT + "resource_definitions", {
                "name": name, "component_id": component_id, "content": {}})["id"]
        except APIError as exc:
            if exc.status != 409:
                raise
            found = self.client.get(ROOT + "resource_definitions", params={"component_id": component_id})
            ids = [d["id"] for d in found if d["name"] == name]
            if not ids:
                raise
            return ids[0]

    def _find_component(self):
        return next((c for c in self.client.get(ROOT + "components") if c["name"] == self.component), None)

    def _component(self, names):
        component = self._find_component()
        if component is None:
            try:
                component = self.client.post(ROOT + "components", {
                    "name": self.component,
                    "resource_definitions": [{"name": n, "content": {}} for n in sorted(names)]})
            except APIError as exc:
                if exc.status != 409:
                    raise
                component = self._find_component()  # another node created it meanwhile
        return component

    def _environment(self, component_id):
        url = ROOT + "environments/{0}".format(self.env)
        try:
            environment = self.client.get(url)
        except APIError as exc:
            if exc.status != 404:
                raise
            try:
                return self.client.post(ROOT + "environments", {
                    "id": self.env, "components": [component_id], "hierarchy_levels": [NODE_LEVEL]})
            except APIError as exc:
                if exc.status != 409:
                    raise
                environment = self.client.get(url)
        if component_id not in environment["components"]:
            self.client.patch(url, {"components": environment["components"] + [component_id]})
        return environment

    def upload(self, nodes, done=None):
        """PUTs the data sources of ``nodes`` (``{node: {data source: mapping}}``, a node named as given: the
        server decides what it names), in that order.

        ``done(node)`` is called, in order, when a node's PUTs and those of every node before it have
        answered. After a failure no new PUT starts, those under way finish, and the first failure in that
        order is raised once ``done`` has been called for the nodes before it: what one PUT at a time did,
        but for the PUTs that were already under way.
        """
        stop = threading.Event()

        def put(url, data):
            if stop.is_set():
                return
            try:
                self._put(url, data)
            except BaseException:
                stop.set()
                raise

        pool = concurrent.futures.ThreadPoolExecutor(self.jobs, thread_name_prefix="config-upload")
        try:
            answers = [(node, [pool.submit(put, self._values_url(node, name), data)
                               for name, data in sorted(sources.items())])
                       for node, sources in nodes.items()]
            for node, puts in answers:
                for answer in puts:
                    answer.result()
                if done:
                    done(node)
        except BaseException:
            stop.set()  # a failure, or Ctrl-C: the PUTs not started yet are not sent
            raise
        finally:
            pool.shutdown(cancel_futures=True)

    def _put(self, url, data):
        """The PUT, sent again (at most ``BUSY_RETRIES`` times) while the server answers 503 with ``Retry-After``:
        busy for a moment (an equal PUT sent again makes no new version). An upload with HTTP Basic that outlasts
        the server's cache of checked credentials sends several PUTs needing a password check at once, more than
        it checks at a time."""
        for attempt in range(BUSY_RETRIES + 1):
            try:
                return self.client.put(url, data)
            except APIError as exc:
                if exc.status != 503 or exc.retry_after is None or attempt == BUSY_RETRIES:
                    raise
                time.sleep(min(exc.retry_after, BUSY_WAIT))

    def _values_url(self, node, name):
        return resource_path(self.env, [(NODE_LEVEL, node)], self.definition_ids[name])


def jobs_count(text):
    jobs = int(text)
    if not 1 <= jobs <= MAX_JOBS:
        raise argparse.ArgumentTypeError("from 1 to {0}".format(MAX_JOBS))
    return jobs


def add_jobs_option(parser):
    parser.add_argument("-j", "--jobs", type=jobs_count, default=JOBS, metavar="N",
                        help="PUTs under way at once, and the most processes parsing node directories (one per "
                             "core at most); default %(default)s, at most {0}".format(MAX_JOBS))


class Progress:
    """A one-line progress bar on stderr."""

    WIDTH = 30

    def __init__(self, total, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.done = 0

    def step(self, label):
        self.done += 1
        filled = self.WIDTH * self.done // self.total
        self.stream.write("\r[{0}{1}] {2}/{3} nodes ({4})".format(
            "#" * filled, "." * (self.WIDTH - filled), self.done, self.total, label))
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


class ConfigUpload(ClientMixin, Command):
    """Upload a node's Hiera directory (default /etc/hiera) to its ConfigDB data sources."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-e", "--env", type=int, required=True, help="environment (cluster) id")
        parser.add_argument("-n", "--node", required=True, help="node id or FQDN")
        parser.add_argument("-d", "--dir", default=DEFAULT_DIR, help="the Hiera data directory")
        parser.add_argument("--component", default=COMPONENT, help="component that defines the data sources")
        add_jobs_option(parser)
        return parser

    def take_action(self, args):
        sources = read_tree(args.dir)
        uploader = Uploader(self.client, args.env, args.component, args.jobs)
        uploader.prepare(sources)
        uploader.check_nodes([args.node])
        uploader.upload({args.node: sources})
        self.app.stdout.write("Uploaded {0} data sources of node {1} to environment {2}\n".format(
            len(sources), args.node, args.env))


class ConfigUploadEnv(ClientMixin, Command):
    """Upload the Hiera directories of a whole environment: DIR/<node id or FQDN>/... per node."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-e", "--env", type=int, required=True, help="environment (cluster) id")
        parser.add_argument("-d", "--dir", required=True, help="a directory holding one Hiera directory per node")
        parser.add_argument("--component", default=COMPONENT, help="component that defines the data sources")
        add_jobs_option(parser)
        return parser

    def take_action(self, args):
        if not os.path.isdir(args.dir):
            raise ConfigDBError("{0} is not a directory".format(args.dir))
        nodes = sorted(n for n in os.listdir(args.dir)
                       if not n.startswith(".") and os.path.isdir(os.path.join(args.dir, n)))
        if not nodes:
            raise ConfigDBError("No node directories under {0}".format(args.dir))
        trees = dict(zip(nodes, read_trees([os.path.join(args.dir, node) for node in nodes], args.jobs)))
        uploader = Uploader(self.client, args.env, args.component, args.jobs)
        uploader.prepare({name for tree in trees.values() for name in tree})
        uploader.check_nodes(nodes)
        progress = Progress(len(nodes), self.app.stderr)
        uploader.upload({node: trees[node] for node in nodes}, done=progress.step)
        self.app.stdout.write("Uploaded {0} nodes to environment {1}\n".format(len(nodes), args.env))
