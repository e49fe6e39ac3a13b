"""Versioned resource definitions over HTTP (seed 004, issue 13).

Creating a definition whose name its component has makes the next version, and so does new content
for an existing one; numbers are never reused, deletes included; every version's id works on the
by-id routes; ``?name=``, ``?version=`` and ``?only_latest=`` select versions; a rename or a move
takes every version along. On PostgreSQL, concurrent creations of one name give distinct numbers or
a clear 409, never a duplicate and never a 500.
"""
import itertools

import pytest
import requests
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_ext_configdb.models import Document, EnvironmentPin
from tests.configdb.conftest import API
from tests.races import together

DEFS = API + "/resource_definitions"


def def_url(definition_id):
    return "{0}/{1}".format(DEFS, definition_id)


def create(app, name, component_id, content=None, status=201):
    body = {"name": name, "component_id": component_id}
    if content is not None:
        body["content"] = content
    return app.post_json(DEFS, body, status=status).json


def listing(app, query="", status=200):
    return app.get(DEFS + ("?" + query if query else ""), status=status).json


def write_values(cdb, env_id, ref, data, levels="", kind="values"):
    """PUT a document as a client does: following a 308 (by name, or by an id that is not the one
    the documents are kept under) to the URL it names; 204 in the end."""
    resp = cdb.app.put_json(cdb.url(env_id, ref, levels, kind), data, expect_errors=True)
    if resp.status_int == 308:
        resp = cdb.app.put_json(resp.headers["Location"], data, expect_errors=True)
    assert resp.status_int == 204, (ref, resp.status, resp.text)
    return resp


def versions_of(app, name):
    """``[(version, latest)]`` of the live versions of ``name``, as listed (oldest first)."""
    return [(d["version"], d["latest"]) for d in listing(app, "name=" + name)]


@pytest.fixture
def comp(cdb):
    return cdb.component("comp", [])


# --- numbering ---------------------------------------------------------------------------------------

def test_posting_an_existing_name_makes_the_next_version(cdb, comp):
    v1 = create(cdb.app, "astute", comp["id"], {"a": 1})
    assert (v1["version"], v1["latest"], v1["name"], v1["component_id"]) == (1, True, "astute", comp["id"])
    v2 = create(cdb.app, "astute", comp["id"], {"a": 2})
    assert (v2["version"], v2["latest"], v2["content"]) == (2, True, {"a": 2})
    assert v2["id"] != v1["id"]
    assert cdb.app.get(def_url(v1["id"])).json == dict(v1, latest=False)
    v3 = create(cdb.app, "astute", comp["id"], {"a": 3})
    assert v3["version"] == 3 and len({v1["id"], v2["id"], v3["id"]}) == 3
    assert versions_of(cdb.app, "astute") == [(1, False), (2, False), (3, True)]
    # another name in the same component starts at 1
    assert create(cdb.app, "globals", comp["id"])["version"] == 1
    # the same name in another component is another data source
    other = cdb.component("other", [])
    assert create(cdb.app, "astute", other["id"])["version"] == 1


def test_putting_new_content_answers_a_new_version_and_leaves_the_old_one(cdb, comp):
    v1 = create(cdb.app, "astute", comp["id"], {"schema": {"type": "object"}})
    answer = cdb.app.put_json(def_url(v1["id"]), {"content": {"schema": {"type": "object", "maxProperties": 3}}},
                              status=200).json
    assert answer["id"] != v1["id"]
    assert answer == {"id": answer["id"], "name": "astute", "component_id": comp["id"],
                      "content": {"schema": {"type": "object", "maxProperties": 3}}, "version": 2, "latest": True}
    assert cdb.app.get(def_url(v1["id"])).json == dict(v1, latest=False)
    assert cdb.app.get(def_url(answer["id"])).json == answer
    # PATCH does what PUT does; new content for an old version is still the next number
    third = cdb.app.patch_json(def_url(v1["id"]), {"content": {"x": 3}}, status=200).json
    assert (third["version"], third["latest"], third["content"]) == (3, True, {"x": 3})
    assert cdb.app.get(def_url(answer["id"])).json == dict(answer, latest=False)
    assert versions_of(cdb.app, "astute") == [(1, False), (2, False), (3, True)]


def test_putting_the_same_content_makes_no_version(cdb, comp):
    v1 = create(cdb.app, "astute", comp["id"], {"schema": {"type": "object"}, "k": [1, "a"]})
    same = cdb.app.put_json(def_url(v1["id"]), {"content": {"k": [1, "a"], "schema": {"type": "object"}}},
                            status=200).json
    assert same == v1
    renamed_only = cdb.app.put_json(def_url(v1["id"]), {"name": "astute2"}, status=200).json
    assert (renamed_only["id"], renamed_only["version"]) == (v1["id"], 1)
    assert [d["id"] for d in listing(cdb.app)] == [v1["id"]]
    # a type change is a content change (1 is not true, nor "1")
    changed = cdb.app.put_json(def_url(v1["id"]), {"content": {"k": [True, "a"], "schema": {"type": "object"}}},
                               status=200).json
    assert changed["version"] == 2


def test_every_version_id_works_on_the_by_id_routes(cdb, comp):
    ids = [create(cdb.app, "astute", comp["id"], {"n": n})["id"] for n in range(3)]
    for number, definition_id in enumerate(ids, 1):
        body = cdb.app.get(def_url(definition_id)).json
        assert (body["id"], body["version"], body["content"], body["latest"]) == (
            definition_id, number, {"n": number - 1}, number == 3)
    # a rename through an old version's id renames them all
    cdb.app.put_json(def_url(ids[0]), {"name": "renamed"}, status=200)
    assert [cdb.app.get(def_url(i)).json["name"] for i in ids] == ["renamed"] * 3
    # deleting an old version: only that one goes
    cdb.app.delete(def_url(ids[1]), status=204)
    for method in (cdb.app.get, cdb.app.delete):
        assert "not found" in method(def_url(ids[1]), status=404).json["message"]
    cdb.app.put_json(def_url(ids[1]), {"content": {"n": 9}}, status=404)
    assert cdb.app.get(def_url(ids[0])).json["version"] == 1
    assert cdb.app.get(def_url(ids[2])).json["latest"] is True


def test_by_id_routes_follow_the_id_rule(cdb, comp):
    create(cdb.app, "astute", comp["id"])
    for bad in ("abc", "0", "-1", "1.0", "99999999999999999999"):
        resp = cdb.app.get(def_url(bad), expect_errors=True)
        assert resp.status_int in (400, 404), (bad, resp.status_int, resp.text)
        assert resp.json["message"]


def test_queries_select_versions(cdb, comp):
    astute = [create(cdb.app, "astute", comp["id"], {"n": n}) for n in range(3)]
    globals_ = create(cdb.app, "globals", comp["id"])
    assert listing(cdb.app, "name=astute") == [dict(a, latest=a is astute[-1]) for a in astute]
    assert listing(cdb.app, "name=astute&version=2") == [dict(astute[1], latest=False)]
    assert listing(cdb.app, "name=astute&version=3") == [astute[2]]
    assert listing(cdb.app, "only_latest=true") == [astute[2], globals_]
    assert listing(cdb.app, "only_latest=1&name=astute") == [astute[2]]
    assert len(listing(cdb.app, "only_latest=false")) == 4
    assert len(listing(cdb.app)) == 4
    assert listing(cdb.app, "name=nothing") == []
    assert listing(cdb.app, "component_id={0}&name=globals".format(comp["id"])) == [globals_]
    assert listing(cdb.app, "name=astute&version=9", status=404)["message"]
    assert listing(cdb.app, "name=nothing&version=1", status=404)["message"]
    for query in ("version=1", "version=1&only_latest=true"):
        assert "name" in listing(cdb.app, query, status=400)["message"]
    for query in ("name=astute&version=x", "name=astute&version=0", "only_latest=maybe", "name="):
        assert listing(cdb.app, query, status=400)["message"]


def test_component_listings_show_only_the_latest_version(cdb, comp):
    create(cdb.app, "astute", comp["id"], {"n": 1})
    latest = create(cdb.app, "astute", comp["id"], {"n": 2})
    globals_ = create(cdb.app, "globals", comp["id"])
    shown = cdb.app.get(API + "/components/{0}".format(comp["id"])).json
    assert shown["resource_definitions"] == [latest, globals_]
    assert cdb.app.get(API + "/components").json == [shown]
    # deleting the latest shows the previous one again, as the latest
    cdb.app.delete(def_url(latest["id"]), status=204)
    shown = cdb.app.get(API + "/components/{0}".format(comp["id"])).json
    assert [(d["name"], d["version"], d["latest"]) for d in shown["resource_definitions"]] == [
        ("astute", 1, True), ("globals", 1, True)]


def test_deleting_the_latest_then_creating_gives_a_new_number(cdb, comp):
    create(cdb.app, "astute", comp["id"], {"n": 1})
    v2 = create(cdb.app, "astute", comp["id"], {"n": 2})
    cdb.app.delete(def_url(v2["id"]), status=204)
    assert versions_of(cdb.app, "astute") == [(1, True)]
    assert listing(cdb.app, "name=astute&version=2", status=404)["message"]
    v3 = create(cdb.app, "astute", comp["id"], {"n": 3})
    assert v3["version"] == 3
    cdb.app.delete(def_url(v3["id"]), status=204)
    first = listing(cdb.app, "name=astute")[0]
    assert cdb.app.put_json(def_url(first["id"]), {"content": {"n": 4}}, status=200).json["version"] == 4
    assert versions_of(cdb.app, "astute") == [(1, False), (4, True)]


def test_a_data_source_deleted_whole_comes_back_with_the_next_number_and_no_documents(cdb, comp, session):
    v1 = create(cdb.app, "astute", comp["id"], {"n": 1})
    env = cdb.environment([comp["id"]])  # pinned to v1
    v2 = create(cdb.app, "astute", comp["id"], {"n": 2})
    keep = create(cdb.app, "globals", comp["id"])
    cdb.put(env["id"], v1["id"], {"a": 1})
    cdb.put(env["id"], v1["id"], {"a": 2}, levels="nodes/1/")
    cdb.put(env["id"], v1["id"], {"o": 1}, kind="overrides")
    cdb.put(env["id"], keep["id"], {"g": 1})
    assert session.query(Document).filter_by(resource_definition_id=v1["id"]).count() == 3
    session.rollback()
    cdb.app.delete(def_url(v2["id"]), status=204)  # nobody uses version 2
    cdb.app.delete(def_url(v1["id"]), status=204)  # the last live version: the data source goes
    assert listing(cdb.app, "name=astute") == []
    assert session.query(Document).filter_by(resource_definition_id=v1["id"]).count() == 0
    assert session.query(EnvironmentPin).filter_by(lineage_id=v1["id"]).count() == 0
    session.rollback()
    cdb.get(env["id"], "astute", status=404)
    cdb.get(env["id"], v1["id"], status=404)
    v3 = create(cdb.app, "astute", comp["id"], {"n": 3})
    assert (v3["version"], v3["latest"]) == (3, True)
    assert versions_of(cdb.app, "astute") == [(3, True)]
    # the environment uses it again, from nothing
    for ref in ("astute", v3["id"]):
        assert cdb.get(env["id"], ref).json == {}, ref
        assert cdb.get(env["id"], ref, levels="nodes/1/").json == {}
        assert cdb.get(env["id"], ref, kind="overrides").json == {}
        assert cdb.get(env["id"], ref, query="effective", levels="nodes/1/").json == {}
    assert cdb.get(env["id"], keep["id"]).json == {"g": 1}
    pins = cdb.app.get(API + "/environments/{0}/pins".format(env["id"])).json
    assert {(p["resource"], p["version"]) for p in pins} == {("astute", 3), ("globals", 1)}
    # and it can be written again, by name as by id
    write_values(cdb, env["id"], "astute", {"b": 1})
    write_values(cdb, env["id"], v3["id"], {"b": 2}, levels="nodes/1/")
    assert cdb.get(env["id"], "astute", query="effective", levels="nodes/1/").json == {"b": 2}
    assert cdb.get(env["id"], v3["id"]).json == {"b": 1}


# --- the property -----------------------------------------------------------------------------------

_examples = itertools.count()
operations = st.lists(st.tuples(st.sampled_from(["create", "put", "put_same", "delete"]),
                                st.integers(min_value=0, max_value=10 ** 6)), min_size=1, max_size=12)


@hypothesis_settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=operations)
def test_any_sequence_of_operations_numbers_versions_strictly_and_never_twice(cdb, ops):
    """Whatever creations, new contents and deletes happen to one name, the numbers given out
    increase strictly and are never given again, and exactly the largest live one is the latest."""
    component = cdb.component("c{0}".format(next(_examples)), [])
    given_out = []  # every number ever answered, in order
    live = {}  # number -> id
    for step, (operation, pick) in enumerate(ops):
        content = {"step": step}
        if operation == "create" or not live:
            answer = create(cdb.app, "ds", component["id"], content)
        elif operation == "delete":
            number = sorted(live)[pick % len(live)]
            cdb.app.delete(def_url(live.pop(number)), status=204)
            answer = None
        else:
            number = sorted(live)[pick % len(live)]
            if operation == "put_same":
                current = cdb.app.get(def_url(live[number])).json["content"]
                same = cdb.app.put_json(def_url(live[number]), {"content": current}, status=200).json
                assert (same["id"], same["version"]) == (live[number], number)
                answer = None
            else:
                answer = cdb.app.put_json(def_url(live[number]), {"content": content}, status=200).json
        if answer is not None:
            assert all(answer["version"] > earlier for earlier in given_out), (answer, given_out)
            assert answer["latest"] is True
            given_out.append(answer["version"])
            live[answer["version"]] = answer["id"]
        listed = listing(cdb.app, "name=ds&component_id={0}".format(component["id"]))
        numbers = [d["version"] for d in listed]
        assert numbers == sorted(live), (numbers, live)
        assert [d["id"] for d in listed] == [live[n] for n in numbers]
        if live:
            assert [d["latest"] for d in listed] == [n == max(live) for n in numbers]
        latest = listing(cdb.app, "only_latest=true&component_id={0}".format(component["id"]))
        assert [d["version"] for d in latest] == ([max(live)] if live else [])
    assert given_out == sorted(set(given_out))


# --- renames and moves ------------------------------------------------------------------------------

def test_a_rename_renames_every_version_and_frees_the_old_name(cdb, comp):
    ids = [create(cdb.app, "astute", comp["id"], {"n": n})["id"] for n in range(3)]
    cdb.app.delete(def_url(ids[1]), status=204)  # a tombstone goes along too
    renamed = cdb.app.put_json(def_url(ids[0]), {"name": "hiera/astute"}, status=200).json
    assert (renamed["id"], renamed["name"], renamed["version"]) == (ids[0], "hiera/astute", 1)
    assert listing(cdb.app, "name=astute") == []
    assert [(d["id"], d["version"], d["latest"]) for d in listing(cdb.app, "name=hiera/astute")] == [
        (ids[0], 1, False), (ids[2], 3, True)]
    # numbering continues under the new name: 2 was given before the rename
    assert create(cdb.app, "hiera/astute", comp["id"])["version"] == 4
    # the old name is a new data source
    fresh = create(cdb.app, "astute", comp["id"])
    assert (fresh["version"], fresh["latest"]) == (1, True)


def test_a_move_to_another_component_moves_every_version(cdb, comp):
    other = cdb.component("other", ["kept"])
    ids = [create(cdb.app, "astute", comp["id"], {"n": n})["id"] for n in range(2)]
    env = cdb.environment([other["id"]])
    assert "astute" not in {p["resource"] for p in env["pins"]}
    moved = cdb.app.put_json(def_url(ids[1]), {"component_id": other["id"]}, status=200).json
    assert (moved["id"], moved["component_id"], moved["version"]) == (ids[1], other["id"], 2)
    assert [cdb.app.get(def_url(i)).json["component_id"] for i in ids] == [other["id"]] * 2
    assert listing(cdb.app, "component_id={0}".format(comp["id"])) == []
    shown = cdb.app.get(API + "/components/{0}".format(other["id"])).json["resource_definitions"]
    assert [(d["name"], d["version"]) for d in shown] == [("kept", 1), ("astute", 2)]
    assert cdb.app.get(API + "/components/{0}".format(comp["id"])).json["resource_definitions"] == []
    # an environment using the component it moved to uses it, at its latest version
    pins = cdb.app.get(API + "/environments/{0}/pins".format(env["id"])).json
    assert {(p["resource"], p["version"]) for p in pins} == {("kept", 1), ("astute", 2)}
    cdb.put(env["id"], ids[0], {"a": 1})
    assert cdb.get(env["id"], ids[1]).json == {"a": 1}
    # numbering follows the data source into its new component
    assert create(cdb.app, "astute", other["id"])["version"] == 3
    assert create(cdb.app, "astute", comp["id"])["version"] == 1


def test_a_move_through_the_component_moves_every_version(cdb, comp):
    other = cdb.component("other", [])
    ids = [create(cdb.app, "astute", comp["id"], {"n": n})["id"] for n in range(2)]
    body = cdb.app.put_json(API + "/components/{0}".format(other["id"]),
                            {"resource_definitions": [{"id": ids[0]}]}).json
    assert [(d["name"], d["version"], d["latest"]) for d in body["resource_definitions"]] == [("astute", 2, True)]
    assert {d["component_id"] for d in listing(cdb.app, "name=astute")} == {other["id"]}


@pytest.mark.parametrize("change", ["rename", "move"])
def test_a_name_clash_is_409_and_changes_nothing(cdb, comp, change):
    other = cdb.component("other", [])
    create(cdb.app, "astute", comp["id"], {"n": 1})
    create(cdb.app, "astute", comp["id"], {"n": 2})
    target_component = comp["id"] if change == "rename" else other["id"]
    create(cdb.app, "taken", target_component)
    create(cdb.app, "taken", target_component, {"n": 2})
    victim = create(cdb.app, "victim" if change == "rename" else "taken", comp["id"])
    before = listing(cdb.app)
    body = {"name": "taken"} if change == "rename" else {"component_id": other["id"]}
    # through any version's id, and through a component's listing
    for definition in [victim] + ([d for d in before if d["name"] == "astute"] if change == "rename" else []):
        resp = cdb.app.put_json(def_url(definition["id"]), body, status=409)
        assert "taken" in resp.json["message"] and "already exists" in resp.json["message"]
    if change == "move":
        resp = cdb.app.put_json(API + "/components/{0}".format(other["id"]),
                                {"resource_definitions": [{"id": victim["id"]}]}, status=409)
        assert "taken" in resp.json["message"]
    assert listing(cdb.app) == before


def test_renaming_onto_a_deleted_name_is_409(cdb, comp):
    gone = create(cdb.app, "gone", comp["id"])
    cdb.app.delete(def_url(gone["id"]), status=204)
    victim = create(cdb.app, "victim", comp["id"])
    resp = cdb.app.put_json(def_url(victim["id"]), {"name": "gone"}, status=409)
    assert "gone" in resp.json["message"]
    assert cdb.app.get(def_url(victim["id"])).json == victim


# --- races on PostgreSQL ----------------------------------------------------------------------------

WRITERS = 8
ROUNDS = 5


@pytest.fixture
def live(db_url, migrated_db, request):
    """A real threaded ``nailgun-api`` on the test database (PostgreSQL only)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    return request.getfixturevalue("live_server").url + "/api/v1/config"


def _component(base, name):
    answer = requests.post(base + "/components", json={"name": name, "resource_definitions": []})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def _check_race(answers):
    """Every answer a 201 or a clear 409; the versions of the 201s distinct. Their versions."""
    for answer in answers:
        assert answer is not None
        assert answer.status_code in (201, 200, 409), (answer.status_code, answer.text)
        if answer.status_code == 409:
            message = answer.json()["message"]
            assert "concurrently" in message and "try again" in message, message
    created = [answer.json()["version"] for answer in answers if answer.status_code in (200, 201)]
    assert created, [answer.text for answer in answers]
    assert len(created) == len(set(created)), created
    return created


def test_concurrent_creations_of_one_new_name_give_one_version_1(live):
    for number in range(ROUNDS):
        component_id = _component(live, "race{0}".format(number))
        body = {"name": "astute", "component_id": component_id}
        answers = together(*[lambda client, w=w: client.post(live + "/resource_definitions",
                                                               json=dict(body, content={"w": w}))
                             for w in range(WRITERS)])
        created = _check_race(answers)
        assert created.count(1) == 1, created
        listed = requests.get(live + "/resource_definitions",
                              params={"name": "astute", "component_id": component_id}).json()
        assert sorted(d["version"] for d in listed) == sorted(created)
        assert [d["version"] for d in listed].count(1) == 1
        assert [d["latest"] for d in listed].count(True) == 1
        assert len({d["id"] for d in listed}) == len(listed)
        # the next creation continues after every number given out
        after = requests.post(live + "/resource_definitions", json=body)
        assert after.status_code == 201 and after.json()["version"] == max(created) + 1, after.text


@pytest.mark.parametrize("how", ["post", "put"])
def test_concurrent_new_versions_of_one_name_are_distinct(live, how):
    for number in range(ROUNDS):
        component_id = _component(live, "race-{0}-{1}".format(how, number))
        first = requests.post(live + "/resource_definitions", json={"name": "astute", "component_id": component_id})
        assert first.status_code == 201, first.text
        url = "{0}/resource_definitions/{1}".format(live, first.json()["id"])

        def write(client, w):
            content = {"w": w}
            if how == "post":
                return client.post(live + "/resource_definitions",
                                   json={"name": "astute", "component_id": component_id, "content": content})
            return client.put(url, json={"content": content})

        answers = together(*[lambda client, w=w: write(client, w) for w in range(WRITERS)])
        created = _check_race(answers)
        assert 1 not in created, created
        listed = requests.get(live + "/resource_definitions",
                              params={"name": "astute", "component_id": component_id}).json()
        numbers = [d["version"] for d in listed]
        assert numbers == sorted([1] + created) and len(set(numbers)) == len(numbers)
        assert [d["latest"] for d in listed] == [n == max(numbers) for n in numbers]
        # every one of them is stored with the content its writer sent
        contents = {d["version"]: d["content"] for d in listed}
        winners = {a.json()["version"]: a.json()["content"] for a in answers if a.status_code in (200, 201)}
        assert {n: contents[n] for n in winners} == winners


# --- creating what exists --------------------------------------------------------------------------------

def test_creating_a_name_again_with_its_latest_content_makes_nothing(cdb, comp):
    v1 = create(cdb.app, "astute", comp["id"], {"a": 1})
    again = create(cdb.app, "astute", comp["id"], {"a": 1}, status=200)
    assert again == v1 and versions_of(cdb.app, "astute") == [(1, True)]
    v2 = create(cdb.app, "astute", comp["id"], {"a": 2})
    assert create(cdb.app, "astute", comp["id"], {"a": 1})["version"] == 3  # only the latest counts
    assert create(cdb.app, "astute", comp["id"], {"a": 1}, status=200)["version"] == 3
    assert [v for v, _ in versions_of(cdb.app, "astute")] == [1, 2, 3] and v2["version"] == 2
    # through a component's listing too
    cdb.app.put_json(API + "/components/{0}".format(comp["id"]),
                     {"resource_definitions": [{"name": "astute", "content": {"a": 1}}]})
    assert [v for v, _ in versions_of(cdb.app, "astute")] == [1, 2, 3]


def test_uploads_racing_on_a_new_name_make_one_version(cdb, comp, db_url, request):
    """What two nodes' ``config upload`` do at once: both POST the missing name with empty content."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    api = request.getfixturevalue("gunicorn") + "config"
    post = lambda client: client.post(api + "/resource_definitions", json={  # noqa: E731
        "name": "globals", "component_id": comp["id"], "content": {}})
    answers = together(*[post] * 8)
    assert {a.status_code for a in answers} <= {200, 201, 409}, [a.text for a in answers]
    assert [a.status_code for a in answers].count(201) == 1, [a.text for a in answers]
    assert versions_of(cdb.app, "globals") == [(1, True)]
