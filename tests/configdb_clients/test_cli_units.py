"""The CLI's pure parts: level and value parsing, output formats, reading a Hiera tree."""
import io
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
