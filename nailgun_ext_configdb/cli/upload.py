"""``fuel2 config upload``: a node's Hiera directory into ConfigDB (the spec's "Orchestration" task).

Every ``*.yaml`` under the directory goes to the data source named by its path without
the extension: ``astute.yaml`` → ``astute``, ``override/plugins.yaml`` →
``override/plugins``, ``override/configuration/role.yaml`` → ``override/configuration/role``.
Everything is parsed before the first request, so a malformed file uploads nothing.
The component, its resource definitions and the environment are created when missing;
an unchanged file makes no new version (the server keeps equal PUTs as they are).
"""
import os
import sys

import yaml
from cliff.command import Command

from nailgun_ext_configdb.cli.paths import NODE_LEVEL, ROOT, ConfigDBError, NodeResolver, resource_path
from nailgun_host.client import APIError, ClientMixin

COMPONENT = "fuel"
DEFAULT_DIR = "/etc/hiera"


class HieraLoader(yaml.SafeLoader):
    """The safe loader, keeping timestamps as the strings they are: values must stay JSON."""


HieraLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def load_source(path):
    """One file's mapping; a syntax error names the file and line."""
    try:
        with open(path, encoding="utf-8") as stream:
            data = yaml.load(stream, Loader=HieraLoader)
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


class Uploader:
    """Creates what is missing in ConfigDB, then PUTs each node's data sources by id."""

    def __init__(self, client, env, component=COMPONENT):
        self.client = client
        self.env = env
        self.component = component
        self.definition_ids = {}

    def prepare(self, names):
        component = self._component(names)
        have = {d["name"]: d["id"] for d in component.get("resource_definitions", [])}
        for name in sorted(set(names) - set(have)):
            have[name] = self._definition(component["id"], name)
        self.definition_ids = have
        self._environment(component["id"])

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
                self.client.post(ROOT + "environments", {
                    "id": self.env, "components": [component_id], "hierarchy_levels": [NODE_LEVEL]})
                return
            except APIError as exc:
                if exc.status != 409:
                    raise
                environment = self.client.get(url)
        if component_id not in environment["components"]:
            self.client.patch(url, {"components": environment["components"] + [component_id]})

    def upload(self, node, sources):
        for name, data in sorted(sources.items()):
            self.client.put(resource_path(self.env, [(NODE_LEVEL, node)], self.definition_ids[name]), data)


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
        return parser

    def take_action(self, args):
        sources = read_tree(args.dir)
        node = NodeResolver(self.client, args.env).node(args.node)
        uploader = Uploader(self.client, args.env, args.component)
        uploader.prepare(sources)
        uploader.upload(node, sources)
        self.app.stdout.write("Uploaded {0} data sources of node {1} to environment {2}\n".format(
            len(sources), args.node, args.env))


class ConfigUploadEnv(ClientMixin, Command):
    """Upload the Hiera directories of a whole environment: DIR/<node id or FQDN>/... per node."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-e", "--env", type=int, required=True, help="environment (cluster) id")
        parser.add_argument("-d", "--dir", required=True, help="a directory holding one Hiera directory per node")
        parser.add_argument("--component", default=COMPONENT, help="component that defines the data sources")
        return parser

    def take_action(self, args):
        if not os.path.isdir(args.dir):
            raise ConfigDBError("{0} is not a directory".format(args.dir))
        nodes = sorted(n for n in os.listdir(args.dir)
                       if not n.startswith(".") and os.path.isdir(os.path.join(args.dir, n)))
        if not nodes:
            raise ConfigDBError("No node directories under {0}".format(args.dir))
        trees = {node: read_tree(os.path.join(args.dir, node)) for node in nodes}
        resolver = NodeResolver(self.client, args.env)
        node_ids = {node: resolver.node(node) for node in nodes}
        uploader = Uploader(self.client, args.env, args.component)
        uploader.prepare({name for tree in trees.values() for name in tree})
        progress = Progress(len(nodes), self.app.stderr)
        for node in nodes:
            uploader.upload(node_ids[node], trees[node])
            progress.step(node)
        self.app.stdout.write("Uploaded {0} nodes to environment {1}\n".format(len(nodes), args.env))
