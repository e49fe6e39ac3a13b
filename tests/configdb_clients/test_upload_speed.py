"""What makes ``config upload`` fast (issues 14 and 27) changes nothing it reads, writes or says.

libyaml parses the Hiera files in place of PyYAML's pure-Python parser, and plain documents are built from its
events (``plain_yaml``) rather than composed and constructed: the documents read must be the same,
types included (``repr``: ``1 == True`` in Python), and a malformed file must give the same message. The
node directories are parsed in several processes and the PUTs go several at a time: what is stored, what
is printed and the exit code stay those of one PUT at a time. The timings are in benchmarks/config_upload.py.

Where libyaml and the pure-Python scanner disagree, off these generators: a tab after a value, which YAML
allows and only the pure-Python scanner refused (such a file is read now); an empty value tagged only ``!``
(null for one, "" for the other); byte order marks and NEL characters inside a document.
"""
import io
import json
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from nailgun_ext_configdb.cli import plain_yaml, upload
from nailgun_ext_configdb.cli.paths import ConfigDBError
from tests.configdb_clients.conftest import HIERA_TREE

needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML is built without libyaml")

#: plain scalars as people and Nailgun write them, where YAML 1.1's implicit types hide
WORDS = ["yes", "No", "ON", "off", "y", "n", "true", "False", "~", "null", "Null", ".inf", "-.Inf", ".NaN",
         "0", "-0", "+12", "0x1F", "0o17", "017", "0b101", "1_000", "1:30", "190:20:30", "1e3", "1.5e3",
         "6.8523015e+5", "685.230_15e+03", "=", "<<", "ha_compact", "br-mgmt", "/var/lib/nova", "node-1.domain.tld",
         "10.109.0.2", "192.168.0.0/24", "1000:1030", "DEFAULT/debug", "2016-05-05", "2016-05-05 10:00:00"]
TIMESTAMPS = st.from_regex(r"\A[12][0-9]{3}-[01]?[0-9]-[0-3]?[0-9]([Tt ][0-2]?[0-9]:[0-5][0-9]:[0-5][0-9]"
                           r"(\.[0-9]{1,6})?( ?(Z|[-+][0-2]?[0-9](:[0-5][0-9])?))?)?\Z")
NUMBERS = st.from_regex(r"\A[-+]?[0-9][0-9_]{0,6}(\.[0-9_]{0,4})?([eE][-+]?[0-9]{1,3})?\Z")
NAMES = st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9_./-]{0,12}\Z")
PLAIN = st.sampled_from(WORDS) | TIMESTAMPS | NUMBERS | NAMES
KEYS = st.sampled_from(["debug", "uid", "yes", "1", "0x1F", "2016-05-05", "quantum_settings", "L2", "<<"]) | NAMES


def scalar_text(draw_style, text):
    """A scalar as written: plain, single- or double-quoted."""
    if draw_style == "single":
        return "'{0}'".format(text.replace("'", "''"))
    if draw_style == "double":
        return json.dumps(text)
    return text


SCALARS = st.builds(scalar_text, st.sampled_from(["plain", "plain", "plain", "single", "double"]), PLAIN)
TREES = st.recursive(SCALARS, lambda inner: st.tuples(st.sampled_from(["block", "flow"]), st.lists(
    st.tuples(KEYS, inner), max_size=4)) | st.tuples(st.sampled_from(["block list", "flow list"]), st.lists(
        inner, max_size=4)), max_leaves=20)


def flow(tree):
    if isinstance(tree, str):
        return tree
    kind, items = tree
    if kind.endswith("list"):
        return "[{0}]".format(", ".join(flow(item) for item in items))
    return "{{{0}}}".format(", ".join("{0}: {1}".format(key, flow(value)) for key, value in items))


def block(items, indent=0):
    """A block mapping (``items``: (key, tree) pairs) as a person indents it, with a comment now and then."""
    lines, pad = [], " " * indent
    for position, (key, value) in enumerate(items):
        if position % 3 == 2:
            lines.append("{0}# about {1}".format(pad, key))
        if isinstance(value, tuple) and value[0] == "block" and value[1]:
            lines.append("{0}{1}:".format(pad, key))
            lines.append(block(value[1], indent + 2))
        elif isinstance(value, tuple) and value[0] == "block list" and value[1]:
            lines.append("{0}{1}:".format(pad, key))
            lines.extend("{0}  - {1}".format(pad, flow(item)) for item in value[1])
        else:
            lines.append("{0}{1}: {2}".format(pad, key, flow(value)))
    return "\n".join(lines)


HAND_WRITTEN = st.lists(st.tuples(KEYS, TREES), min_size=1, max_size=6).map(lambda items: block(items) + "\n")

#: JSON-like documents, as Nailgun has them before it writes astute.yaml
JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\ufeff\x85")) | PLAIN)
DOCUMENTS = st.dictionaries(st.text(max_size=8) | KEYS, st.recursive(JSON_SCALARS, lambda inner: st.lists(
    inner, max_size=4) | st.dictionaries(st.text(max_size=8) | KEYS, inner, max_size=4), max_leaves=25), max_size=6)
DUMP_STYLES = st.fixed_dictionaries({"default_flow_style": st.sampled_from([False, True, None]),
                                     "allow_unicode": st.booleans(), "width": st.sampled_from([20, 80, 10 ** 6]),
                                     "indent": st.sampled_from([2, 4]), "explicit_start": st.booleans()})


def read(text, loader):
    """What a loader makes of ``text``: the document's repr (types show), or the error's kind."""
    try:
        return repr(yaml.load(text, Loader=loader))
    except yaml.YAMLError as exc:
        return type(exc).__name__


@needs_libyaml
@settings(max_examples=150, deadline=None)
@given(HAND_WRITTEN)
def test_both_loaders_read_hand_written_hiera_alike(text):
    """Which plain scalar is an int, a float, a bool, null or a string (timestamps: strings) is the same."""
    assert read(text, upload.HieraCLoader) == read(text, upload.HieraLoader)


@needs_libyaml
@settings(max_examples=150, deadline=None)
@given(DOCUMENTS, DUMP_STYLES)
def test_both_loaders_read_dumped_documents_alike(document, style):
    text = yaml.safe_dump(document, **style)
    assert read(text, upload.HieraCLoader) == read(text, upload.HieraLoader)


def parsed(text):
    """What ``config upload`` makes of ``text``: the document's repr (types show), or the error's kind."""
    path = io.StringIO(text)
    try:
        return repr(upload.parse(path))
    except yaml.YAMLError as exc:
        return type(exc).__name__


@needs_libyaml
@settings(max_examples=150, deadline=None)
@given(HAND_WRITTEN)
def test_hand_written_hiera_built_from_events_is_what_the_loader_reads(text):
    assert parsed(text) == read(text, upload.HieraLoader)


@needs_libyaml
@settings(max_examples=150, deadline=None)
@given(DOCUMENTS, DUMP_STYLES)
def test_dumped_documents_built_from_events_are_what_the_loader_reads(document, style):
    text = yaml.safe_dump(document, **style)
    assert parsed(text) == read(text, upload.HieraLoader)


#: what is more than plain mappings, sequences and scalars: read by the loader itself, as before
UNUSUAL = {
    "anchor and alias": "base: &b {a: 1}\ncopy: *b\n",
    "anchored scalar": "a: &x 1\nb: *x\n",
    "merge key": "base: &b {a: 1}\nnode: {<<: *b, c: 2}\n",
    "merge key without alias": "node: {<<: {a: 1}, c: 2}\n",
    "explicit tag": "port: !!str 8080\nflag: !!bool yes\n",
    "tagged mapping": "m: !!map {a: 1}\n",
    "non-specific tag": "a: ! 12\n",
    "local tag": "a: !custom 12\n",
    "value key": "a: =\n",
    "mapping as a key": "? {a: 1}\n: b\n",
    "sequence as a key": "? [a, b]\n: c\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "a set": "!!set {a, b}\n",
    "binary": "b: !!binary aGVsbG8=\n",
}


@needs_libyaml
@pytest.mark.parametrize("text", UNUSUAL.values(), ids=UNUSUAL.keys())
def test_documents_beyond_plain_ones_are_left_to_the_loader_and_read_alike(text):
    with pytest.raises(plain_yaml.Unusual):
        plain_yaml.load(text, upload.Loader)
    assert parsed(text) == read(text, upload.HieraLoader)


@needs_libyaml
def test_hiera_files_as_nailgun_writes_them_are_built_from_events(monkeypatch):
    """The fixture tree (Fuel's data sources) takes the fast way: no file of it is left to the loader."""
    def composed(*args, **kwargs):
        raise AssertionError("a Hiera file was composed by the loader")

    monkeypatch.setattr(upload.yaml, "load", composed)
    assert upload.read_tree(str(HIERA_TREE))


@needs_libyaml
def test_plain_scalars_repeated_in_a_document_are_new_objects_only_as_the_loader_makes_them():
    """Each distinct text is resolved once: equal scalars are shared, mappings and sequences never are."""
    document = plain_yaml.load("a: [1, 2]\nb: [1, 2]\nc: {x: yes}\nd: {x: yes}\n", upload.Loader)
    assert document == {"a": [1, 2], "b": [1, 2], "c": {"x": True}, "d": {"x": True}}
    assert document["a"] is not document["b"] and document["c"] is not document["d"]


def outcome(path):
    """``load_source``'s answer for a file: the document's repr, or the message shown to the user."""
    try:
        return repr(upload.load_source(str(path)))
    except ConfigDBError as exc:
        return str(exc)


@needs_libyaml
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HAND_WRITTEN, st.sampled_from(list("[]{}:,'\"&*!|>%@`-?#") + ["\n", "  ", "\n  ", ": ", "- "]), st.data())
def test_a_malformed_file_gets_the_message_it_always_got(tmp_path, monkeypatch, text, damage, data):
    """Errors name the same file, line and column, in the pure-Python parser's words."""
    at = data.draw(st.integers(0, len(text)))
    path = tmp_path / "astute.yaml"
    path.write_text(text[:at] + damage + text[at:])
    fast = outcome(path)
    monkeypatch.setattr(upload, "Loader", upload.HieraLoader)
    before = outcome(path)
    assume("!" not in damage or "!" not in before)  # an empty value tagged "!": see the module's docstring
    assert fast == before


@needs_libyaml
def test_the_fixture_tree_reads_the_same_with_both_loaders(monkeypatch):
    fast = upload.read_tree(str(HIERA_TREE))
    monkeypatch.setattr(upload, "Loader", upload.HieraLoader)
    assert repr(fast) == repr(upload.read_tree(str(HIERA_TREE)))


@needs_libyaml
def test_timestamps_stay_strings_with_libyaml_too():
    text = "built: 2016-05-05 10:00:00\nday: 2016-05-05\nstamp: 2001-12-14t21:59:43.10-05:00\n"
    assert yaml.load(text, Loader=upload.HieraCLoader) == {
        "built": "2016-05-05 10:00:00", "day": "2016-05-05", "stamp": "2001-12-14t21:59:43.10-05:00"}


@needs_libyaml
def test_a_tab_after_a_value_is_read_as_yaml_says(tmp_path):
    """The one file the pure-Python scanner refused that is read now (libyaml follows the YAML spec)."""
    (tmp_path / "globals.yaml").write_text("debug: true\t# from a template\nport: 5673\t\n")
    assert upload.read_tree(str(tmp_path)) == {"globals": {"debug": True, "port": 5673}}


def test_without_libyaml_the_pure_python_loader_reads(tmp_path):
    """PyYAML built without libyaml (``yaml._yaml`` missing): the command still reads the tree, in pure Python."""
    script = """
import sys

class NoLibyaml:
    def find_spec(self, name, path=None, target=None):
        if name in ("yaml._yaml", "_yaml"):
            raise ImportError("no libyaml here")

sys.meta_path.insert(0, NoLibyaml())
import yaml
from nailgun_ext_configdb.cli import plain_yaml, upload
assert not yaml.__with_libyaml__ and upload.Loader is upload.HieraLoader
print(repr(upload.read_tree(sys.argv[1])))
"""
    result = subprocess.run([sys.executable, "-c", script, str(HIERA_TREE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(upload.read_tree(str(HIERA_TREE)))


def _node_directories(root, count):
    directories = []
    for index in range(1, count + 1):
        directory = root / "node-{0:02d}".format(index)
        (directory / "override").mkdir(parents=True)
        (directory / "astute.yaml").write_text("uid: '{0}'\nbuilt: 2016-05-05 10:00:00\n".format(index))
        (directory / "override" / "node.yaml").write_text("weight: {0}\n".format(index))
        directories.append(str(directory))
    return directories


def test_node_directories_parsed_in_several_processes_come_back_in_order(tmp_path):
    directories = _node_directories(tmp_path, 3 * upload.DIRECTORIES_PER_PROCESS)
    trees = upload.read_trees(directories, jobs=4)
    assert trees == [upload.read_tree(directory) for directory in directories]
    assert [tree["astute"]["uid"] for tree in trees] == [str(i) for i in range(1, len(directories) + 1)]


def test_the_first_malformed_file_in_order_is_the_one_named(tmp_path):
    directories = _node_directories(tmp_path, 3 * upload.DIRECTORIES_PER_PROCESS)
    for broken in (directories[-1], directories[5]):
        with open(broken + "/override/node.yaml", "a") as stream:
            stream.write("next: [1, 2\n")
    with pytest.raises(ConfigDBError) as error:
        upload.read_trees(directories, jobs=4)
    assert str(error.value).startswith(directories[5] + "/override/node.yaml, line 3, column 1: ")


def _write_node(root, node, uid):
    (root / node / "override").mkdir(parents=True)
    (root / node / "astute.yaml").write_text("uid: '{0}'\nbuilt: 2016-05-05 10:00:00\nroles: [compute]\n".format(uid))
    (root / node / "globals.yaml").write_text("deployment_mode: ha_compact\n")
    (root / node / "override" / "node.yaml").write_text("node_only: {0}\n".format(uid))


def test_an_environment_uploaded_several_puts_at_a_time_keeps_each_nodes_documents(fuel, tmp_path):
    """An environment not linked to a cluster (FQDNs are the level values), enough nodes to parse in processes."""
    nodes = ["node-{0:02d}.domain.tld".format(i) for i in range(1, 3 * upload.DIRECTORIES_PER_PROCESS + 1)]
    for uid, node in enumerate(nodes, 1):
        _write_node(tmp_path, node, uid)
    result = fuel("config", "upload", "env", "--env", "7", "--dir", tmp_path, "--jobs", "8")
    assert result.stdout == "Uploaded {0} nodes to environment 7\n".format(len(nodes))
    shown = re.findall(r"\] (\d+)/(\d+) nodes \(([^)]*)\)", result.stderr)
    assert shown == [(str(i), str(len(nodes)), node) for i, node in enumerate(nodes, 1)]
    for uid, node in enumerate(nodes, 1):
        for source, expected in (("astute", {"uid": str(uid), "built": "2016-05-05 10:00:00", "roles": ["compute"]}),
                                 ("override/node", {"node_only": uid})):
            got = fuel("config", "get", "--env", "7", "--level", "nodes=" + node, "--resource", source)
            assert json.loads(got.stdout) == expected, (node, source)


def test_a_refused_put_ends_the_upload_as_one_put_at_a_time_did(env, fuel, linked_env, tmp_path):
    """Node 2's globals hold a NUL, which the server refuses: the same message, progress and exit code whatever
    ``--jobs`` is, and one PUT at a time writes nothing after the refusal (the third directory, node 3 by its
    FQDN, stays unwritten; naming node 1 again is refused before any PUT)."""
    env.create_node(cluster_id=linked_env["id"], roles=["compute"])
    for node, uid in (("1", "1"), ("2", "2"), ("node-3.domain.tld", "3")):  # in this order: names sort as text
        _write_node(tmp_path, node, uid)
    (tmp_path / "2" / "globals.yaml").write_text('deployment_mode: "ha\\0compact"\n')
    one_at_a_time = fuel("config", "upload", "env", "--env", "1", "--dir", tmp_path, "--jobs", "1", ok=False)
    assert one_at_a_time.returncode == 1
    assert "] 1/3 nodes (1)" in one_at_a_time.stderr and "2/3" not in one_at_a_time.stderr
    assert "NUL" in one_at_a_time.stderr
    history = fuel("config", "history", "--env", "1", "--level", "nodes=1", "--resource", "astute", "-f", "json")
    assert len(json.loads(history.stdout)) == 1
    history = fuel("config", "history", "--env", "1", "--level", "nodes=3", "--resource", "astute", "-f", "json")
    assert json.loads(history.stdout) == []
    several = fuel("config", "upload", "env", "--env", "1", "--dir", tmp_path, "--jobs", "4", ok=False)
    assert (several.returncode, several.stdout, several.stderr) == (
        one_at_a_time.returncode, one_at_a_time.stdout, one_at_a_time.stderr)


def test_a_node_the_linked_cluster_lacks_is_refused_before_anything_is_uploaded(fuel, linked_env, tmp_path):
    """The environment is linked (the server's flag): node 150 is not its cluster's, so neither ``upload env``
    nor ``upload --node`` sends a PUT; node 1's documents stay as they were."""
    for node in ("1", "150", "node-2.domain.tld"):
        _write_node(tmp_path, node, node)
    whole = fuel("config", "upload", "env", "--env", "1", "--dir", tmp_path, ok=False)
    one = fuel("config", "upload", "--env", "1", "--node", "150", "--dir", tmp_path / "150", ok=False)
    for result in (whole, one):
        assert result.returncode == 1
        assert "Cluster 1 has no node 150 (environment 1 is linked to it): nothing uploaded" in result.stderr
    assert "1/3" not in whole.stderr
    for level in ("nodes=1", "nodes=node-2.domain.tld"):
        history = fuel("config", "history", "--env", "1", "--level", level, "--resource", "astute", "-f", "json")
        assert json.loads(history.stdout) == []


def test_jobs_are_bounded_by_the_connection_pool(fuel, tmp_path):
    _write_node(tmp_path, "1", 1)
    result = fuel("config", "upload", "--env", "1", "--node", "1", "--dir", tmp_path / "1", "--jobs", "11", ok=False)
    assert result.returncode == 2 and "from 1 to 10" in result.stderr
