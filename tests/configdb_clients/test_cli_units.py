"""The CLI's pure parts: level and value parsing, output formats, reading a Hiera tree."""
import io
import json
import subprocess
import sys

import pytest

from nailgun_ext_configdb.cli import formats, upload
from nailgun_ext_configdb.cli.paths import ConfigDBError, parse_levels, resource_path
from tests.configdb_clients.conftest import HIERA_TREE, tree_sources


def test_levels_accept_the_specs_node_spelling_and_several_levels():
    assert parse_levels("node=node-1.domain.tld") == [("nodes", "node-1.domain.tld")]
    assert parse_levels("rack=A, nodes=3") == [("rack", "A"), ("nodes", "3")]
    assert parse_levels(None) == []
    with pytest.raises(ConfigDBError, match="NAME=VALUE"):
        parse_levels("nodes")


def test_resource_path_keeps_slashes_of_a_resource_name_and_quotes_level_values():
    assert resource_path(1, [("nodes", "a b")], "override/plugins", "overrides") == \
        "config/environments/1/nodes/a%20b/resources/override/plugins/overrides"
    assert resource_path(2, [], 7) == "config/environments/2/resources/7/values"


@pytest.mark.parametrize("text, value_type, expected", [
    ("2", None, 2), ("abc", None, "abc"), ('{"a": [1]}', None, {"a": [1]}),
    ("2", "str", "2"), ("7", "int", 7), ("True", "bool", True), ("0", "bool", False),
    ('[1, "x"]', "json", [1, "x"]), ("a: {b: 1}", "yaml", {"a": {"b": 1}}),
])
def test_typed_values(text, value_type, expected):
    assert formats.parse_typed(text, value_type) == expected


@pytest.mark.parametrize("text, value_type", [("x", "int"), ("maybe", "bool"), ("{", "json"), ("a: [", "yaml")])
def test_a_value_that_does_not_match_its_type_is_refused(text, value_type):
    with pytest.raises(ConfigDBError, match="Cannot read"):
        formats.parse_typed(text, value_type)


def test_cells_are_json_values_a_string_bare_in_a_table_and_value():
    assert formats.output_cell("node-1", "value") == "node-1" == formats.output_cell("node-1", "table")
    assert formats.output_cell(True, "value") == "true"
    assert formats.output_cell({"b": [1], "a": None}, "value") == '{"a": null, "b": [1]}'
    nested = formats.output_cell({"b": {"d": 1, "c": 2}, "a": 1}, "json")
    assert list(nested.machine_readable()) == ["a", "b"] and list(nested.machine_readable()["b"]) == ["c", "d"]
    assert nested.human_readable() == '{"a": 1, "b": {"c": 2, "d": 1}}'


def test_read_tree_names_data_sources_by_path():
    sources = upload.read_tree(str(HIERA_TREE))
    assert sorted(sources) == ["astute", "globals", "override/configuration/cluster",
                               "override/configuration/node", "override/configuration/role",
                               "override/node", "override/plugins"]
    assert sources == tree_sources()


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    (tmp_path / "astute.yaml").write_text("a: 1\n")
    (tmp_path / "override").mkdir()
    (tmp_path / "override" / "plugins.yaml").write_text("debug: true\nsyslog: {port: 1\nnext: 2\n")
    with pytest.raises(ConfigDBError) as error:
        upload.read_tree(str(tmp_path))
    assert str(error.value).startswith(str(tmp_path / "override" / "plugins.yaml") + ", line 3,")


def test_a_data_source_must_be_a_mapping(tmp_path):
    (tmp_path / "globals.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigDBError, match="globals.yaml: a data source must be a mapping, not a list"):
        upload.read_tree(str(tmp_path))


def test_timestamps_stay_strings_so_values_remain_json(tmp_path):
    (tmp_path / "astute.yaml").write_text("built: 2016-05-05 10:00:00\nempty:\n")
    assert upload.read_tree(str(tmp_path)) == {"astute": {"built": "2016-05-05 10:00:00", "empty": None}}


def test_progress_bar_counts_nodes():
    stream = io.StringIO()
    progress = upload.Progress(2, stream)
    progress.step("node-1")
    progress.step("node-2")
    assert stream.getvalue().endswith("] 2/2 nodes (node-2)\n")
    assert "[###############...............] 1/2 nodes (node-1)" in stream.getvalue()


BLOCKER = """
import sys

class ServerSideBlocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("web", "sqlalchemy", "alembic"):
            raise ImportError("the client imported a server module: " + name)

sys.meta_path.insert(0, ServerSideBlocker())
from importlib.metadata import entry_points
from cliff.app import App
from cliff.commandmanager import CommandManager
commands = [e.load() for e in entry_points(group="fuelclient") if e.value.startswith("nailgun_ext_configdb.")]
app = App("t", "1", CommandManager("none"))
for command in commands:
    command(app, None).get_parser("fuel2 config").format_help()
print(len(commands), sorted(m for m in sys.modules if m.partition(".")[0] in ("web", "sqlalchemy", "alembic")))
"""


def test_the_cli_imports_nothing_of_the_server():
    result = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["34", "[]"]  # 24, issue 12: patch, changes, deployments, 6 session; 13: env pin


BUSY = (503, {"Retry-After": "1"})


class _Answers:
    """A transport answering each request with the next of ``answers``: (status, headers[, JSON body]); it keeps
    what was sent, the bodies in ``bodies``."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []
        self.bodies = []

    def send(self, method, url, **kwargs):
        import requests
        self.sent.append((method, url))
        self.bodies.append(json.loads(kwargs["data"]) if kwargs.get("data") else None)
        status, headers, *body = self.answers.pop(0)
        response = requests.Response()
        response.status_code, response.headers = status, requests.structures.CaseInsensitiveDict(headers)
        default = {"message": "Too many passwords are being checked now", "errors": []} if status >= 400 else {}
        response._content = json.dumps(body[0] if body else default).encode()
        return response


def _uploader(answers, batches=False, names=("astute",)):
    """An uploader of environment 1 whose server answers ``answers``; one PUT per document unless ``batches``."""
    from nailgun_platform.client.base import APIClient
    transport = _Answers(answers)
    uploader = upload.Uploader(APIClient(root="http://127.0.0.1:1", settings={}, transport=transport), 1, jobs=1)
    uploader.definition_ids = {name: 5 + index for index, name in enumerate(names)}
    uploader.batches = batches
    return uploader, transport


BATCH = ("POST", "http://127.0.0.1:1/api/v1/config/environments/1/documents")


def _put(node, resource):
    return ("PUT", "http://127.0.0.1:1/api/v1/config/environments/1/nodes/{0}/resources/{1}/values".format(
        node, resource))


def test_an_upload_sends_its_documents_in_batches_of_whole_nodes(monkeypatch):
    """Three nodes of two documents, batches of at most four documents: two batches, a node never cut; progress
    per node, in order, once its batch is answered."""
    monkeypatch.setattr(upload, "BATCH_DOCUMENTS", 4)
    uploader, transport = _uploader([(200, {})] * 2, batches=True, names=("astute", "globals"))
    done = []
    uploader.upload({node: {"astute": {"a": node}, "globals": {"g": node}} for node in ("n1", "n2", "n3")},
                    done.append)
    assert transport.sent == [BATCH, BATCH] and done == ["n1", "n2", "n3"]
    assert transport.bodies[0] == {"documents": [
        {"level": "nodes/n1", "resource": 5, "data": {"a": "n1"}}, {"level": "nodes/n1", "resource": 6,
                                                                    "data": {"g": "n1"}},
        {"level": "nodes/n2", "resource": 5, "data": {"a": "n2"}}, {"level": "nodes/n2", "resource": 6,
                                                                    "data": {"g": "n2"}}]}
    assert [item["level"] for item in transport.bodies[1]["documents"]] == ["nodes/n3", "nodes/n3"]


def test_a_node_larger_than_a_batch_is_cut_and_done_once_its_last_batch_is_answered(monkeypatch):
    monkeypatch.setattr(upload, "BATCH_DOCUMENTS", 2)
    names = ("a", "b", "c")
    uploader, transport = _uploader([(200, {})] * 2, batches=True, names=names)
    done = []
    uploader.upload({"n1": {name: {} for name in names}, "n2": {"a": {}}}, done.append)
    assert [len(body["documents"]) for body in transport.bodies] == [2, 2] and done == ["n1", "n2"]


@pytest.mark.parametrize("missing", [(404, {}, {"message": "Not Found", "errors": []}), (405, {"Allow": "GET"})])
def test_a_server_without_the_batch_route_gets_one_put_per_document(missing):
    uploader, transport = _uploader([missing, (204, {}), (204, {})], batches=True, names=("astute", "globals"))
    uploader.upload({"n1": {"astute": {}, "globals": {}}})
    assert transport.sent == [BATCH, _put("n1", 5), _put("n1", 6)]
    assert not uploader.batches


def test_a_batch_the_server_finds_too_large_is_sent_again_in_halves():
    uploader, transport = _uploader([(413, {}), (200, {}), (200, {})], batches=True, names=("astute", "globals"))
    uploader.upload({"n1": {"astute": {"a": 1}, "globals": {"g": 1}}})
    assert transport.sent == [BATCH] * 3
    assert [len(body["documents"]) for body in transport.bodies] == [2, 1, 1]


def test_a_refused_batch_is_sent_again_one_put_each_up_to_the_refused_document():
    """Nothing of a refused batch was written: its documents go one PUT each, so that those before the refused one
    are written, their nodes done, and the refusal is that PUT's, as before batches."""
    names = ("astute", "globals")
    refused = (400, {}, {"message": "Document 2 of the batch (...): NUL", "errors": [{"item": 2}]})
    put_refused = (400, {}, {"message": "Values must not contain NUL characters", "errors": []})
    uploader, transport = _uploader([refused, (204, {}), (204, {}), put_refused], batches=True, names=names)
    done = []
    with pytest.raises(upload.APIError) as failure:
        uploader.upload({node: {name: {} for name in names} for node in ("n1", "n2")}, done.append)
    assert str(failure.value) == "Values must not contain NUL characters (400)"
    assert transport.sent == [BATCH, _put("n1", 5), _put("n1", 6), _put("n2", 5)] and done == ["n1"]


def test_a_batch_the_busy_server_answers_503_with_retry_after_is_sent_again_after_the_wait(monkeypatch):
    waits = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    uploader, transport = _uploader([BUSY, BUSY, (200, {})], batches=True)
    uploader.upload({"node-1": {"astute": {"a": 1}}})
    assert waits == [1, 1] and transport.sent == [BATCH] * 3


def test_a_put_the_busy_server_answers_503_with_retry_after_is_sent_again_after_the_wait(monkeypatch):
    """As an upload with HTTP Basic outlasts the server's credential cache, several PUTs need a password check at
    once, more than the server checks at a time: it answers 503 with Retry-After and the upload goes on."""
    waits = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    uploader, transport = _uploader([BUSY, BUSY, (200, {})])
    uploader.upload({"node-1": {"astute": {"a": 1}}})
    assert waits == [1, 1]
    assert transport.sent == [("PUT", "http://127.0.0.1:1/api/v1/config/environments/1/nodes/node-1/resources/5/"
                                      "values")] * 3


@pytest.mark.parametrize("answers, waited", [
    ([BUSY] * (upload.BUSY_RETRIES + 1), upload.BUSY_RETRIES),  # still busy after the retries: its message
    ([(503, {})], 0),  # no Retry-After: the server does not say it will pass soon
    ([(500, {"Retry-After": "1"})], 0),
    ([(409, {"Retry-After": "1"})], 0),
])
def test_other_failures_and_a_server_busy_for_long_end_the_upload_with_the_servers_message(monkeypatch, answers,
                                                                                           waited):
    waits = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    uploader, transport = _uploader(answers)
    with pytest.raises(upload.APIError) as failure:
        uploader.upload({"node-1": {"astute": {"a": 1}}})
    assert failure.value.status == answers[-1][0]
    assert str(failure.value).startswith("Too many passwords are being checked now")
    assert len(waits) == waited and len(transport.sent) == waited + 1


def test_an_answer_with_retry_after_in_seconds_says_so_and_a_date_is_not_read():
    from nailgun_platform.client.base import APIClient
    client = APIClient(root="http://127.0.0.1:1", settings={}, transport=_Answers([
        (503, {"Retry-After": "7"}), (503, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})]))
    for expected in (7, None):
        with pytest.raises(upload.APIError) as failure:
            client.get("nodes/")
        assert failure.value.retry_after == expected
