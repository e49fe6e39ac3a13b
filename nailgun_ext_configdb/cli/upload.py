"""``fuel2 config upload``: a node's Hiera directory into ConfigDB (the spec's "Orchestration" task).

Every ``*.yaml`` under the directory goes to the data source named by its path without
the extension: ``astute.yaml`` → ``astute``, ``override/plugins.yaml`` →
``override/plugins``, ``override/configuration/role.yaml`` → ``override/configuration/role``.
Everything is parsed before the first request, so a malformed file uploads nothing: with
libyaml when PyYAML has it, the node directories of ``config upload env`` in a process per core,
then the documents go in batches of whole nodes (``POST .../documents``: one request, one transaction and one
revision for many documents), or one PUT each, ``--jobs`` at a time, to a server without the batch route.
The component, its resource definitions and the environment are created when missing;
an unchanged file makes no new version (the server keeps equal documents as they are).
"""
import argparse
import concurrent.futures
import itertools
import json
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
#: PUTs under way at once (without batches): enough to keep the server busy while the client encodes the next bodies
JOBS = 4
#: requests' connection pool keeps 10 connections per host; more threads would open and drop extra ones
MAX_JOBS = 10
#: node directories per process parsing them: an environment of a few nodes is read in this one
DIRECTORIES_PER_PROCESS = 8
TIMESTAMP = "tag:yaml.org,2002:timestamp"
#: times a request is sent again after a 503 with Retry-After, and the longest wait for each
BUSY_RETRIES, BUSY_WAIT = 3, 10
#: the most documents and bytes of one batch (``POST .../documents``; the server's limits are 1,000 documents and
#: its ``MAX_REQUEST_BODY``, 10 MB by default: a lower one answers 413, and the batch is sent again in halves):
#: small enough that a batch holds the environment's lock well under a second, large enough that a request's own
#: cost (authentication, the request log, a transaction and its commit) is spread over many documents
BATCH_DOCUMENTS, BATCH_BYTES = 100, 2 * 1024 * 1024
#: batches under way at once: one stored while the next is sent and decoded (they take the environment's lock in
#: turn, so more would only wait, and could outwait the client's timeout)
BATCHES_AT_ONCE = 2


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
        #: whether documents go in batches: until the server shows it has no batch route
        self.batches = True

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
        """Writes the data sources of ``nodes`` (``{node: {data source: mapping}}``, a node named as given: the
        server decides what it names), in that order: in batches (``in_batches``, each all or nothing), ``jobs`` at
        a time, or one PUT per document from a server without the batch route.

        ``done(node)`` is called, in order, when a node's documents and those of every node before it are
        written. After a failure no new request starts, those under way finish, and the first failure in that
        order is raised once ``done`` has been called for the nodes before it: what one PUT at a time did,
        but for the requests that were already under way.
        """
        items = [(node, name, data) for node, sources in nodes.items() for name, data in sorted(sources.items())]
        if self.batches:
            try:
                return self._in_order(in_batches(items, self._batch_item), self._batch, done, probe=True,
                                      at_once=min(self.jobs, BATCHES_AT_ONCE))
            except NoBatchRoute:
                self.batches = False  # a server without the route: each document's own PUT
        self._in_order(([item] for item in items), self._put_one, done)

    def _in_order(self, groups, send, done, probe=False, at_once=None):
        """``send(group)`` for each of ``groups`` (lists of ``(node, data source, mapping)``, in order, made while
        the first are sent), ``at_once`` (``jobs``) at a time (with ``probe``, the first alone: its answer tells
        whether the others can go the same way); ``done`` of each node once its groups and every one before them
        are sent (``upload``)."""
        stop = threading.Event()

        def sending(group):
            if stop.is_set():
                return
            try:
                send(group)
            except BaseException:
                stop.set()
                raise

        pool = concurrent.futures.ThreadPoolExecutor(at_once or self.jobs, thread_name_prefix="config-upload")
        try:
            answers = []
            for group in groups:
                if stop.is_set():
                    break
                answers.append((group, pool.submit(sending, group)))
                if probe and len(answers) == 1:
                    concurrent.futures.wait([answers[0][1]])
            done = done or (lambda node: None)
            pending = None  # the last node of the groups answered: its documents may go on in the next group
            for group, answer in answers:
                nodes = list(dict.fromkeys(node for node, _, _ in group))
                if pending is not None and pending != nodes[0]:
                    done(pending)
                try:
                    answer.result()
                except APIError as exc:  # a batch whose documents before the refused one were written one by one
                    written = {node for node, _, _ in group[:getattr(exc, "written", 0)]}
                    for node in nodes:
                        if node in written and not any(item[0] == node for item in group[exc.written:]):
                            done(node)
                    raise
                for node in nodes[:-1]:
                    done(node)
                pending = nodes[-1]
            if pending is not None:
                done(pending)
        except BaseException:
            stop.set()  # a failure, or Ctrl-C: the requests not started yet are not sent
            raise
        finally:
            pool.shutdown(cancel_futures=True)

    def _put_one(self, group):
        (node, name, data), = group
        self._retried(self.client.put, self._values_url(node, name), data)

    def _batch_item(self, node, name, data):
        """One document of a batch as JSON bytes: the node's level and the data source's id."""
        return json.dumps({"level": "{0}/{1}".format(NODE_LEVEL, node), "resource": self.definition_ids[name],
                           "data": data}).encode("utf-8")

    def _batch(self, group):
        """POSTs one batch; NoBatchRoute when the server has none (404 not naming an item, 405). A batch the
        server finds too large (413: its ``MAX_REQUEST_BODY`` is lower) is sent again in halves. A batch refused
        otherwise wrote nothing: its documents are sent again one PUT each, in order, so that those before the
        refused one are written and the refusal is that document's own, as one PUT at a time did."""
        body = b'{"documents": [' + b", ".join(group.encoded) + b"]}"
        try:
            self._retried(self.client.post, ROOT + "environments/{0}/documents".format(self.env), body)
        except APIError as exc:
            if exc.status == 413 and len(group) > 1:
                half = len(group) // 2
                for offset, part in ((0, group.part(0, half)), (half, group.part(half, len(group)))):
                    try:
                        self._batch(part)
                    except APIError as refused:
                        refused.written = getattr(refused, "written", 0) + offset
                        raise
                return
            if exc.status in (404, 405) and _refused_item(exc) is None:
                raise NoBatchRoute()
            if exc.status is None or not 400 <= exc.status < 500:
                raise
            for index, item in enumerate(group):
                try:
                    self._put_one([item])
                except APIError as refused:
                    refused.written = index  # the documents of the batch written before it (``_in_order``)
                    raise

    def _retried(self, send, url, data):
        """``send(url, data)``, sent again (at most ``BUSY_RETRIES`` times) while the server answers 503 with
        ``Retry-After``: busy for a moment (an equal document sent again makes no new version). An upload with HTTP
        Basic that outlasts the server's cache of checked credentials sends several requests needing a password
        check at once, more than it checks at a time."""
        for attempt in range(BUSY_RETRIES + 1):
            try:
                return send(url, data)
            except APIError as exc:
                if exc.status != 503 or exc.retry_after is None or attempt == BUSY_RETRIES:
                    raise
                time.sleep(min(exc.retry_after, BUSY_WAIT))

    def _values_url(self, node, name):
        return resource_path(self.env, [(NODE_LEVEL, node)], self.definition_ids[name])


class NoBatchRoute(Exception):
    """The server has no batch route (older than it): nothing was written."""


def _refused_item(exc):
    """The index of the batch's item a refusal names (``errors[0].item``), or None."""
    try:
        errors = json.loads(exc.body or "").get("errors")
        item = errors[0]["item"] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else None
    except (ValueError, AttributeError, KeyError):
        return None
    return item if isinstance(item, int) and not isinstance(item, bool) else None


class Batch(list):
    """Items ``(node, data source, mapping)`` of one batch, with each one's JSON (``encoded``)."""

    def __init__(self, items=(), encoded=()):
        super().__init__(items)
        self.encoded = list(encoded)
        self.size = sum(len(text) for text in self.encoded)

    def add(self, item, text):
        self.append(item)
        self.encoded.append(text)
        self.size += len(text)

    def part(self, start, end):
        return Batch(self[start:end], self.encoded[start:end])


def in_batches(items, encode):
    """``items`` in order, in batches of whole nodes of at most ``BATCH_DOCUMENTS`` documents and ``BATCH_BYTES``
    (a node beyond either alone is cut), each item encoded once (``encode(node, data source, mapping)``) as its
    batch is made."""
    batch = Batch()
    for _, node_items in itertools.groupby(items, key=lambda item: item[0]):
        encoded = [(item, encode(*item)) for item in node_items]
        size = sum(len(text) for _, text in encoded)
        if batch and (len(batch) + len(encoded) > BATCH_DOCUMENTS or batch.size + size > BATCH_BYTES):
            yield batch
            batch = Batch()
        for item, text in encoded:
            if batch and (len(batch) >= BATCH_DOCUMENTS or batch.size + len(text) > BATCH_BYTES):
                yield batch
                batch = Batch()
            batch.add(item, text)
    if batch:
        yield batch


def jobs_count(text):
    jobs = int(text)
    if not 1 <= jobs <= MAX_JOBS:
        raise argparse.ArgumentTypeError("from 1 to {0}".format(MAX_JOBS))
    return jobs


def add_jobs_option(parser):
    parser.add_argument("-j", "--jobs", type=jobs_count, default=JOBS, metavar="N",
                        help="requests under way at once (batches: at most {1}), and the most processes parsing node "
                             "directories (one per core at most); default %(default)s, at most {0}".format(
                                 MAX_JOBS, BATCHES_AT_ONCE))


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
