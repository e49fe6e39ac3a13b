"""The session, patch, deployment and feed commands' pure parts: arguments, reading patches, how
documents, conflicts and changes are printed."""
import io
import json

import pytest
from hypothesis import given, strategies as st

from nailgun_platform.client import documents, errors, sessions
from nailgun_platform.client.patches import PatchFileError, read_patch
from nailgun_ext_configdb.cli import changes, sessions as config_sessions, values
from nailgun_ext_upgrade import cli as upgrade_cli

SESSION_ID = "0123456789abcdef0123456789abcdef"
#: the keys the printing code looks at, so that random bodies use them with values of every type
KEYS = st.sampled_from(["document", "type", "kind", "resource", "resource_name", "level", "changed_keys", "revision",
                        "author", "conflicts", "op", "path", "from", "value", "allowed", "patch", "change",
                        "version", "session"]) | st.text()
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda children: st.lists(children) | st.dictionaries(KEYS, children), max_leaves=30)


def parse(command_class, *argv):
    return command_class(None, None).get_parser("fuel2").parse_args([str(a) for a in argv])


@pytest.mark.parametrize("command_class, argv", [
    (values.ConfigGet, ("--env", 1, "--resource", "astute")),
    (values.ConfigSet, ("--env", 1, "--resource", "astute", "--key", "a", "--value", "1")),
    (values.ConfigOverride, ("--env", 1, "--resource", "astute", "--key", "a", "--value", "1")),
    (values.ConfigDelete, ("--env", 1, "--resource", "astute", "--key", "a")),
    (values.ConfigRevert, ("--env", 1, "--resource", "astute", "--to", 1)),
    (values.ConfigPatch, ("--env", 1, "--resource", "astute", "patch.json")),
    (upgrade_cli.EnvModelShow, (1,)),
    (upgrade_cli.EnvModelEdit, (1, "patch.json")),
])
def test_session_comes_from_the_option_else_from_fuel_session(command_class, argv, monkeypatch):
    monkeypatch.delenv(sessions.ENV_VARIABLE, raising=False)
    assert parse(command_class, *argv).session is None
    assert parse(command_class, *argv, "--session", SESSION_ID).session == SESSION_ID
    monkeypatch.setenv(sessions.ENV_VARIABLE, "f" * 32)
    assert parse(command_class, *argv).session == "f" * 32
    assert parse(command_class, *argv, "--session", SESSION_ID).session == SESSION_ID


@pytest.mark.parametrize("command_class, argv", [(values.ConfigHistory, ()), (values.ConfigDiff, ("--from", 1))])
def test_history_and_diff_read_stored_versions_and_take_no_session(command_class, argv, capsys):
    assert parse(command_class, "--env", 1, "--resource", "astute", *argv).env == 1
    with pytest.raises(SystemExit):
        parse(command_class, "--env", 1, "--resource", "astute", *argv, "--session", SESSION_ID)
    assert "unrecognized arguments: --session" in capsys.readouterr().err


@pytest.mark.parametrize("command_class, prefix", [
    (sessions.SessionShow, "clusters/3"), (config_sessions.ConfigSessionShow, "config/environments/3"),
    (sessions.SessionDeploy, "clusters/3"), (config_sessions.ConfigSessionAbandon, "config/environments/3"),
])
def test_a_session_command_takes_the_id_or_fuel_session(command_class, prefix, monkeypatch):
    monkeypatch.delenv(sessions.ENV_VARIABLE, raising=False)
    command = command_class(None, None)
    args = command.get_parser("fuel2").parse_args(["--env", "3", SESSION_ID])
    assert command.session_path(args, "/diff") == "{0}/sessions/{1}/diff".format(prefix, SESSION_ID)
    with pytest.raises(sessions.SessionError, match="Give the session id \\(or set FUEL_SESSION\\)"):
        command.session_path(command.get_parser("fuel2").parse_args(["--env", "3"]))
    monkeypatch.setenv(sessions.ENV_VARIABLE, SESSION_ID)
    args = command.get_parser("fuel2").parse_args(["--env", "3"])
    assert command.session_path(args) == "{0}/sessions/{1}".format(prefix, SESSION_ID)


def test_a_session_id_cannot_leave_its_url_segment():
    command = sessions.SessionShow(None, None)
    args = command.get_parser("fuel2").parse_args(["--env", "1", "../../nodes"])
    assert command.session_path(args) == "clusters/1/sessions/..%2F..%2Fnodes"


def test_the_environment_is_required_and_an_integer(capsys):
    for argv in ([], ["--env", "x"]):
        with pytest.raises(SystemExit):
            parse(config_sessions.ConfigSessionOpen, *argv)
    assert parse(sessions.SessionOpen, "--env", 2, "--ttl", 60).ttl == 60
    assert parse(sessions.Deployments, 4).env == 4  # env deployments ENV
    assert parse(config_sessions.ConfigDeployments, "--env", 4, "--limit", 2, "--diff").limit == 2


def test_changes_need_since_and_follow_is_optional(capsys):
    with pytest.raises(SystemExit):
        parse(changes.ConfigChanges, "--env", 1)
    args = parse(changes.ConfigChanges, "--env", 1, "--since", 0)
    assert (args.since, args.follow, args.wait) == (0, False, None)
    args = parse(changes.ConfigChanges, "--env", 1, "--since", 7, "--follow", "--wait", 5, "-f", "json")
    assert (args.since, args.follow, args.wait, args.formatter) == (7, True, 5, "json")


def test_a_change_is_one_line():
    change = {"revision": 12, "resource": 3, "resource_name": "astute", "level": "/nodes/5/", "kind": "values",
              "change": "write", "version": 3, "author": "bob", "session": SESSION_ID, "created": "2026-11-23T19:00:00"}
    assert changes.line(change) == "12 write values of astute at /nodes/5/ version 3 by bob session " + SESSION_ID
    assert changes.line(dict(change, change="delete", version=None, session=None, level="/")) == \
        "12 delete values of astute at / by bob"


def test_documents_are_named_for_people():
    assert documents.label({"type": "model"}) == "the environment model"
    descriptor = {"type": "configdb", "resource": 3, "resource_name": "astute", "level": "/nodes/5/",
                  "kind": "overrides"}
    assert documents.label(descriptor) == "overrides of astute at /nodes/5/"
    assert documents.staged_line({"document": descriptor, "changed_keys": ["/nova/debug", "/a"]}) == \
        "overrides of astute at /nodes/5/: /nova/debug, /a"
    assert documents.conflict_line({"document": descriptor, "revision": 9, "author": "bob"}) == \
        "overrides of astute at /nodes/5/: changed in revision 9 by bob"
    assert documents.Documents([{"document": {"type": "model"}, "changed_keys": []}]).machine_readable() == \
        [{"document": {"type": "model"}, "changed_keys": []}]


def test_error_details_name_the_conflicting_documents():
    descriptor = {"type": "configdb", "resource": 3, "resource_name": "nova", "level": "/", "kind": "overrides"}
    assert errors.details([{"document": descriptor, "revision": 9, "author": "bob"},
                           {"document": {"type": "model"}, "revision": 9}]) == [
        "overrides of nova at /: changed in revision 9 by bob", "the environment model: changed in revision 9"]
    assert errors.details([{"id": SESSION_ID, "conflicts": [{"document": descriptor}]}]) == [
        "overrides of nova at /: changed"]
    # the policy's message already names the operation, path and allowed ones
    assert errors.details([{"op": "remove", "path": "/keystone/admin_token", "allowed": ["replace"]}]) == []
    assert errors.details(["a schema message", {"path": "/a"}]) == []


@given(JSON)
def test_error_details_and_labels_never_fail_on_any_json(value):
    """An error body of an unexpected shape must still print the server's message, never a traceback."""
    assert all(isinstance(line, str) for line in errors.details(value))
    assert all(isinstance(line, str) for line in errors.details([value]))
    assert isinstance(documents.label(value), str)
    assert isinstance(sessions.Revisions(value).human_readable(), str)
    if isinstance(value, dict):
        assert isinstance(documents.conflict_line(value), str)
        assert isinstance(documents.staged_line(value), str)
        assert isinstance(changes.line(value), str)
        assert isinstance(documents.Documents([value]).human_readable(), str)
        assert isinstance(sessions.Diffs([value]).human_readable(), str)


def test_state_note_only_for_a_session_that_is_no_longer_open():
    assert sessions.state_note(SESSION_ID, {sessions.STATE_HEADER: "open"}) is None
    assert sessions.state_note(SESSION_ID, {}) is None
    assert sessions.state_note(None, {sessions.STATE_HEADER: "deployed"}) is None
    assert sessions.state_note(SESSION_ID, {sessions.STATE_HEADER: "deployed"}) == (
        "Session {0} is deployed: this is the current state, not staged changes.\n".format(SESSION_ID))


def test_a_deployment_diff_prints_one_operation_a_line():
    diff = sessions.Diffs([{"document": {"type": "model"}, "patch": [
        {"op": "replace", "path": "/name", "value": "prod"}, {"op": "remove", "path": "/a"},
        {"op": "move", "from": "/b", "path": "/c"}]}])
    assert diff.human_readable() == ('the environment model:\n  replace /name "prod"\n  remove /a\n'
                                     '  move /c from /b')


def test_a_deployment_names_each_counter_it_moved_one_a_line():
    moved = sessions.Revisions({"configdb_environment": {"id": 3, "revision": 4}, "cluster": {"id": 3, "revision": 1}})
    assert moved.human_readable() == "cluster 3: 1\nconfigdb_environment 3: 4"
    assert moved.machine_readable() == {"configdb_environment": {"id": 3, "revision": 4},
                                        "cluster": {"id": 3, "revision": 1}}
    assert sessions.Revisions(None).human_readable() == ""
    assert "revisions" in sessions.DEPLOYMENT_COLUMNS and "revisions" in sessions.SESSION_COLUMNS


def test_a_patch_is_read_as_json_or_yaml_from_a_file_or_stdin(tmp_path):
    ops = [{"op": "replace", "path": "/a", "value": 1}]
    (tmp_path / "p.json").write_text(json.dumps(ops))
    (tmp_path / "p.yaml").write_text("- op: replace\n  path: /a\n  value: 1\n")
    assert read_patch(str(tmp_path / "p.json"), None) == ops
    assert read_patch(str(tmp_path / "p.yaml"), None) == ops
    assert read_patch("-", io.StringIO(json.dumps(ops))) == ops
    assert read_patch("-", io.StringIO("- {op: replace, path: /a, value: 1}\n")) == ops
    with pytest.raises(PatchFileError, match="Cannot read standard input: "):
        read_patch("-", io.StringIO("- [\n"))
    with pytest.raises(PatchFileError, match='in ".*broken.yaml", line 2'):
        (tmp_path / "broken.yaml").write_text("- op: replace\n  path: [/a\n")
        read_patch(str(tmp_path / "broken.yaml"), None)
    with pytest.raises(PatchFileError, match="Cannot read the patch file .*missing.json: "):
        read_patch(str(tmp_path / "missing.json"), None)
