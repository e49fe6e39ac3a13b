"""``config def`` with versioned definitions and ``config env show|pin`` (seed 004) through fuel-ext and the
real fuel2, against a real ``nailgun-api``.

The acceptance sequence of issue 13 as an operator types it: astute v1, an environment pinned to it
with values, astute v2 with a stricter schema; the environment still validates against v1; the dry
run lists the documents v2 rejects; the move is refused, then done after a fix (or forced), as one
revision.
"""
import json

import pytest

from nailgun_platform.client import APIError
from nailgun_ext_configdb.cli.pins import pin_label, refused, rejected_line
from tests.commands import IN_PROCESS
from tests.configdb_clients.conftest import FUEL2, FUEL_EXT_SCRIPT

LOOSE = {"schema": {"type": "object"}}
#: v2: deployment_id must be an integer
STRICT = {"schema": {"type": "object", "properties": {"deployment_id": {"type": "integer"}}}}
#: v3: and uid is required
STRICTER = {"schema": {"type": "object", "properties": {"deployment_id": {"type": "integer"}}, "required": ["uid"]}}
ASTUTE = ("--env", "1", "--resource", "astute")


def as_json(result):
    return json.loads(result.stdout)


def create_definition(fuel, content, name="astute", component=1):
    return as_json(fuel("config", "def", "create", "--name", name, "--component-id", component,
                        "--content", json.dumps(content), "-f", "json"))


def pinned_env(fuel):
    """Component ``fuel`` (1) with astute v1 (any object), environment 1 pinned to it, with values at the
    environment level and at nodes 1 (``deployment_id: "one"``, which v1 takes)."""
    fuel("config", "comp", "create", "--name", "fuel")
    assert create_definition(fuel, LOOSE)["version"] == 1
    assert as_json(fuel("config", "env", "create", "-i", "fuel", "-l", "nodes", "-f", "json"))["id"] == 1
    fuel("config", "set", *ASTUTE, "--format", "json", stdin='{"deployment_id": 1, "uid": "0"}')
    fuel("config", "set", *ASTUTE, "--level", "nodes=1", "--key", "deployment_id", "--value", "one")


def env_shown(fuel):
    return as_json(fuel("config", "env", "show", "1", "-f", "json"))


def pin(fuel, *args, ok=True):
    return fuel("config", "env", "pin", "1", "astute", *args, ok=ok)


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_def_list_shows_the_latest_versions_unless_all_versions(fuel):
    fuel("config", "comp", "create", "--name", "fuel")
    first = create_definition(fuel, LOOSE)
    created = fuel("config", "def", "create", "--name", "astute", "--component-id", "1",
                   "--content", json.dumps(STRICT), "-f", "json")
    second = as_json(created)
    assert (second["version"], second["latest"], json.loads(second["content"])) == (2, True, STRICT)
    assert second["id"] != first["id"]
    assert "Version 2 of astute (id {0}): environments stay on the version they are pinned to".format(
        second["id"]) in created.stderr
    create_definition(fuel, {}, name="globals")

    def listed(*args):
        return [(d["name"], d["version"], d["latest"]) for d in as_json(fuel("config", "def", "list", *args,
                                                                              "-f", "json"))]

    assert listed() == [("astute", 2, True), ("globals", 1, True)]
    assert listed("--all-versions") == [("astute", 1, False), ("astute", 2, True), ("globals", 1, True)]
    assert listed("--name", "astute") == [("astute", 2, True)]
    assert listed("--name", "astute", "--all-versions", "--component-id", "1") == [
        ("astute", 1, False), ("astute", 2, True)]
    assert listed("--name", "nothing") == []
    table = fuel("config", "def", "list", "--all-versions", "-c", "name", "-c", "version", "-c", "latest").stdout
    assert "| name    | version | latest |" in table and "| astute  |       1 | False  |" in table


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_def_show_by_id_or_by_name_and_version(fuel):
    fuel("config", "comp", "create", "--name", "fuel")
    first, second = create_definition(fuel, LOOSE), create_definition(fuel, STRICT)
    by_id = as_json(fuel("config", "def", "show", first["id"], "-f", "json"))
    assert (by_id["id"], by_id["version"], by_id["latest"]) == (first["id"], 1, False)
    assert as_json(fuel("config", "def", "show", "--name", "astute", "-f", "json")) == second
    assert as_json(fuel("config", "def", "show", "--name", "astute", "--def-version", "1", "-f", "json")) == by_id
    assert as_json(fuel("config", "def", "show", "--name", "astute", "--component", "1", "--def-version", "2",
                        "-f", "json")) == second
    assert as_json(fuel("config", "def", "show", first["id"], "--def-version", "2", "-f", "json")) == second
    table = fuel("config", "def", "show", first["id"], "-c", "version", "-c", "latest").stdout
    assert "| version | 1     |" in table and "| latest  | False |" in table
    missing = fuel("config", "def", "show", "--name", "astute", "--def-version", "3", ok=False)
    assert missing.returncode == 1 and "Resource definition astute version 3 not found (404)" in missing.stderr
    unknown = fuel("config", "def", "show", "--name", "globals", ok=False)
    assert unknown.returncode == 1 and "No resource definition named globals" in unknown.stderr
    neither = fuel("config", "def", "show", ok=False)
    assert neither.returncode == 1 and "Give a resource definition id or --name" in neither.stderr
    both = fuel("config", "def", "show", first["id"], "--name", "astute", ok=False)
    assert both.returncode == 1 and "not both" in both.stderr


def test_def_show_by_a_name_two_components_define_needs_the_component(fuel):
    fuel("config", "comp", "create", "--name", "fuel")
    fuel("config", "comp", "create", "--name", "lcm")
    create_definition(fuel, LOOSE, component=1)
    other = create_definition(fuel, STRICT, component=2)
    ambiguous = fuel("config", "def", "show", "--name", "astute", ok=False)
    assert ambiguous.returncode == 1 and "Components 1, 2 define astute: give --component-id" in ambiguous.stderr
    assert as_json(fuel("config", "def", "show", "--name", "astute", "-i", "2", "-f", "json")) == other


def test_def_update_with_new_content_shows_the_new_version(fuel):
    fuel("config", "comp", "create", "--name", "fuel")
    first = create_definition(fuel, LOOSE)
    updated = fuel("config", "def", "update", first["id"], "--content", json.dumps(STRICT), "-f", "json")
    new = as_json(updated)
    assert (new["version"], new["latest"], json.loads(new["content"])) == (2, True, STRICT)
    assert new["id"] != first["id"] and "Version 2 of astute" in updated.stderr
    old = as_json(fuel("config", "def", "show", first["id"], "-f", "json"))
    assert (json.loads(old["content"]), old["latest"]) == (LOOSE, False)  # a version's content never changes
    renamed = as_json(fuel("config", "def", "update", first["id"], "--name", "facts", "-f", "json"))
    assert (renamed["id"], renamed["name"], renamed["version"]) == (first["id"], "facts", 1)
    assert [d["name"] for d in as_json(fuel("config", "def", "list", "--all-versions", "-f", "json"))] == [
        "facts", "facts"]  # a name belongs to every version


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_an_environment_stays_on_its_version_until_moved_after_a_fix(fuel):
    pinned_env(fuel)
    second = create_definition(fuel, STRICT)
    # still pinned to v1: v1 takes what v2 would reject
    fuel("config", "set", *ASTUTE, "--level", "nodes=2", "--key", "deployment_id", "--value", "two")
    shown = env_shown(fuel)
    assert shown["pins"] == [{"resource": "astute", "id": 1, "version": 1, "latest_version": 2}]
    revision = shown["revision"]
    assert "| pins             | astute=1 (latest 2) |" in fuel("config", "env", "show", "1").stdout
    assert "astute=1 (latest 2)" in fuel("config", "env", "list").stdout

    dry = as_json(pin(fuel, "--latest", "--dry-run", "-f", "json"))
    assert (dry["from"], dry["to"], dry["moved"], dry["dry_run"]) == (1, 2, False, True)
    assert [(r["level"], r["kind"]) for r in dry["rejected"]] == [("/nodes/1/", "values"), ("/nodes/2/", "values")]
    assert "'one' is not of type 'integer'" in dry["rejected"][0]["message"]
    table = pin(fuel, "--to", "2", "--dry-run").stdout
    assert "values of astute at /nodes/1/: 'one' is not of type 'integer' (at 'deployment_id')" in table
    assert "values of astute at /nodes/2/: 'two' is not of type 'integer'" in table
    assert env_shown(fuel)["revision"] == revision

    moving = pin(fuel, "--latest", ok=False)
    assert moving.returncode == 1 and moving.stdout == ""
    expected = ("Version 2 of astute rejects 2 stored document(s) of environment 1: fix them, or force the move (409)\n"
                "  values of astute at /nodes/1/: 'one' is not of type 'integer' (at 'deployment_id')\n"
                "  values of astute at /nodes/2/: 'two' is not of type 'integer' (at 'deployment_id')\n")
    assert expected in moving.stderr, moving.stderr  # (fuel2 may warn about its own YAML loading first)
    assert (env_shown(fuel)["revision"], env_shown(fuel)["pins"][0]["version"]) == (revision, 1)

    for node, value in (("1", "1"), ("2", "2")):
        fuel("config", "set", *ASTUTE, "--level", "nodes=" + node, "--key", "deployment_id", "--value", value)
    fixed = env_shown(fuel)["revision"]
    moved = as_json(pin(fuel, "--latest", "-f", "json"))
    assert moved == {"resource": "astute", "from": 1, "to": 2, "moved": True, "dry_run": False,
                     "revision": fixed + 1, "rejected": []}
    after = env_shown(fuel)
    assert after["revision"] == fixed + 1  # one revision
    assert after["pins"] == [{"resource": "astute", "id": second["id"], "version": 2, "latest_version": 2}]
    assert "| pins             | astute=2 |" in fuel("config", "env", "show", "1").stdout
    refused_value = fuel("config", "set", *ASTUTE, "--level", "nodes=1", "--key", "deployment_id",
                         "--value", "three", ok=False)
    assert refused_value.returncode == 1 and "(400)" in refused_value.stderr  # now v2 validates
    changes = as_json(fuel("config", "changes", "--env", "1", "--since", fixed, "-f", "json"))
    assert [(c["change"], c["resource_name"], c["version"]) for c in changes] == [("pin", "astute", 2)]


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL_EXT_SCRIPT, FUEL2], indirect=True)
def test_a_refused_move_exits_non_zero_and_a_forced_one_moves(fuel):
    pinned_env(fuel)
    create_definition(fuel, STRICTER)
    revision = env_shown(fuel)["revision"]
    refused_move = pin(fuel, "--to", "2", ok=False)
    assert refused_move.returncode == 1 and refused_move.stdout == "" and "Traceback" not in refused_move.stderr
    assert "Version 2 of astute rejects 1 stored document(s) of environment 1: fix them, or force the move (409)\n" \
           "  values of astute at /nodes/1/: 'uid' is a required property\n" in refused_move.stderr
    assert env_shown(fuel)["pins"][0]["version"] == 1

    forced = as_json(pin(fuel, "--to", "2", "--force", "-f", "json"))
    assert (forced["from"], forced["to"], forced["moved"], forced["revision"]) == (1, 2, True, revision + 1)
    assert forced["rejected"] == [{"level": "/nodes/1/", "kind": "values", "message": "'uid' is a required property"}]
    assert env_shown(fuel)["pins"] == [{"resource": "astute", "id": 2, "version": 2, "latest_version": 2}]
    back = as_json(pin(fuel, "--to", "1", "-f", "json"))  # v1 takes everything
    assert (back["to"], back["moved"], back["rejected"]) == (1, True, [])
    unknown = pin(fuel, "--to", "7", ok=False)
    assert unknown.returncode == 1 and "Resource definition astute has no version 7 (404)" in unknown.stderr
    no_target = pin(fuel, ok=False)
    assert no_target.returncode == 2 and "one of the arguments --to --latest is required" in no_target.stderr


def test_a_pinned_version_is_deleted_only_after_the_move(fuel):
    pinned_env(fuel)
    second = create_definition(fuel, dict(LOOSE, description="any object, again"))
    used = fuel("config", "def", "delete", "1", ok=False)
    assert used.returncode == 1
    assert "Version 1 of resource definition astute is used by environments 1: move them to another version " \
           "first (409)" in used.stderr
    pin(fuel, "--latest")
    assert fuel("config", "def", "delete", "1").stdout == "Deleted resource definition 1\n"
    assert [d["id"] for d in as_json(fuel("config", "def", "list", "--all-versions", "-f", "json"))] == [second["id"]]
    assert as_json(fuel("config", "get", *ASTUTE, "--raw")) == {"deployment_id": 1, "uid": "0"}
    # the last version: the data source goes, with its values and pins
    fuel("config", "def", "delete", second["id"])
    assert env_shown(fuel)["pins"] == []
    assert "(404)" in fuel("config", "get", *ASTUTE, ok=False).stderr
    third = create_definition(fuel, LOOSE)
    assert third["version"] == 3  # numbers are never given twice
    assert env_shown(fuel)["pins"] == [{"resource": "astute", "id": third["id"], "version": 3, "latest_version": 3}]
    assert as_json(fuel("config", "get", *ASTUTE, "--raw")) == {}


# -- the pure parts ---------------------------------------------------------------------------------------------

def test_a_pin_reads_name_equals_version_and_the_latest_when_behind():
    assert pin_label({"resource": "astute", "id": 1, "version": 1, "latest_version": 2}) == "astute=1 (latest 2)"
    assert pin_label({"resource": "override/node", "id": 3, "version": 2, "latest_version": 2}) == "override/node=2"


def test_a_refused_move_names_each_rejected_document_and_why():
    body = {"message": "Version 2 of astute rejects 1 stored document(s) of environment 1: fix them, or force the "
                       "move", "errors": [{"level": "/nodes/1/", "kind": "values", "message": "'x' is not of type "
                                           "'integer'", "document": "values of astute at /nodes/1/"}]}
    shown = refused(APIError(409, "generic", json.dumps(body)))
    assert str(shown) == body["message"] + " (409)\n  values of astute at /nodes/1/: 'x' is not of type 'integer'"
    assert shown.status == 409
    other = APIError(409, "Data source astute is defined by more than one component (409)",
                     json.dumps({"message": "Data source astute is defined by more than one component", "errors": []}))
    assert str(refused(other)) == "Data source astute is defined by more than one component (409)"
    not_json = APIError(409, "409 Conflict", "<html>")
    assert refused(not_json) is not_json
    assert rejected_line({"level": "/", "kind": "values", "message": "m"}, "astute") == "values of astute at /: m"
