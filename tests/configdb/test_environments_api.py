"""ConfigDB environments over HTTP."""
import pytest

from nailgun_ext_configdb.models import Document, DocumentVersion
from tests.configdb.conftest import API


def test_create_by_component_names_and_ids(cdb):
    a = cdb.component("a", ["r1"])
    b = cdb.component("b", ["r2"])
    body = cdb.environment(["b", a["id"]], levels=["rack", "nodes"])
    assert body == {"id": body["id"], "components": [b["id"], a["id"]], "hierarchy_levels": ["rack", "nodes"],
                    "revision": 0, "linked": False,
                    "pins": [{"resource": "r1", "id": a["resource_definitions"][0]["id"], "version": 1,
                              "latest_version": 1},
                             {"resource": "r2", "id": b["resource_definitions"][0]["id"], "version": 1,
                              "latest_version": 1}]}
    assert cdb.app.get(API + "/environments/{0}".format(body["id"])).json == body
    assert cdb.app.get("/api/config/environments").json == [body]


def test_explicit_id_and_its_conflict(cdb):
    cdb.component("a", ["r"])
    assert cdb.environment(["a"], id=7)["id"] == 7
    resp = cdb.app.post_json(API + "/environments", {"id": 7, "components": [], "hierarchy_levels": []},
                             status=409)
    assert resp.json["message"] == "Environment with id 7 already exists"
    assert cdb.environment([])["id"] == 8


def test_name_is_accepted_as_in_tuning_box_demo(cdb):
    cdb.component("comp1", ["resource1"])
    assert cdb.environment(["comp1"], name="env1")["id"] == 1


@pytest.mark.parametrize("body, status", [
    ({"components": []}, 400),
    ({"components": [], "hierarchy_levels": ["a/b"]}, 400),
    ({"components": [], "hierarchy_levels": ["resources"]}, 400),
    ({"components": [], "hierarchy_levels": ["x", "x"]}, 400),
    ({"components": [True], "hierarchy_levels": []}, 400),
    ({"components": [42], "hierarchy_levels": []}, 404),
    ({"components": ["nope"], "hierarchy_levels": []}, 404),
    ({"components": ["a", "a"], "hierarchy_levels": []}, 409),
    ({"components": ["a", 1], "hierarchy_levels": []}, 409),
    ({"components": ["a", "b"], "hierarchy_levels": []}, 409),
])
def test_bad_environments_change_nothing(cdb, body, status):
    cdb.component("a", ["same"])
    cdb.component("b", ["same"])
    resp = cdb.app.post_json(API + "/environments", body, status=status)
    assert resp.json["message"]
    assert cdb.app.get(API + "/environments").json == []


def test_update_components_clash_is_409(cdb):
    a = cdb.component("a", ["same"])
    cdb.component("b", ["same"])
    env = cdb.environment(["a"])
    url = API + "/environments/{0}".format(env["id"])
    resp = cdb.app.patch_json(url, {"components": ["a", "b"]}, status=409)
    assert "define the resource same" in resp.json["message"]
    assert cdb.app.get(url).json["components"] == [a["id"]]


def test_update_levels_drops_documents_of_removed_levels(cdb):
    comp = cdb.component("a", ["r"])
    env = cdb.environment(["a"], levels=["rack", "nodes"])
    cdb.put(env["id"], "1", {"root": 1})
    cdb.put(env["id"], "1", {"rack": 1}, levels="rack/A/")
    cdb.put(env["id"], "1", {"node": 1}, levels="rack/A/nodes/n1/")
    url = API + "/environments/{0}".format(env["id"])
    body = cdb.app.put_json(url, {"hierarchy_levels": ["rack"]}).json
    assert body["hierarchy_levels"] == ["rack"] and body["components"] == [comp["id"]]
    assert cdb.get(env["id"], "r", levels="rack/A/", query="effective").json == {"root": 1, "rack": 1}
    cdb.app.patch_json(url, {"hierarchy_levels": ["rack", "nodes"]})
    assert cdb.get(env["id"], "r", levels="rack/A/nodes/n1/").json == {}


def test_id_cannot_change(cdb):
    env = cdb.environment([])
    cdb.app.put_json(API + "/environments/{0}".format(env["id"]), {"id": 99}, status=400)


def test_delete_environment_deletes_its_documents(cdb, session):
    cdb.component("a", ["r"])
    env = cdb.environment(["a"])
    cdb.put(env["id"], "1", {"k": 1})
    cdb.app.delete(API + "/environments/{0}".format(env["id"]), status=204)
    resp = cdb.app.get(API + "/environments/{0}".format(env["id"]), status=404)
    assert resp.json["message"] == "Cannot find an environment with the given identifier {0}".format(env["id"])
    assert session.query(Document).count() == 0 and session.query(DocumentVersion).count() == 0


def test_unknown_environment_is_404_everywhere(cdb):
    for url in ("/environments/5", "/environments/5/resources/r/values", "/environments/5/resources/r/overrides",
                "/environments/5/nodes/1/resources/r/values?effective"):
        assert "Cannot find an environment" in cdb.app.get(API + url, status=404).json["message"]
    cdb.app.put_json(API + "/environments/5/resources/r/values", {}, status=404)
    cdb.app.delete(API + "/environments/5", status=404)


# -- ids (issue 9, item 7) -----------------------------------------------------------------------

def test_the_largest_explicit_id_does_not_stop_id_less_creation(cdb):
    """An explicit id, even the largest, never moves an id counter past what the routes reach."""
    from nailgun_host.validation import MAX_ID
    cdb.component("c", ["r"])
    assert cdb.environment(["c"], id=MAX_ID)["id"] == MAX_ID
    first = cdb.environment(["c"])
    assert cdb.environment(["c"], id=1 if first["id"] != 1 else 2)
    created = [first] + [cdb.environment(["c"]) for _ in range(3)]
    ids = [e["id"] for e in created]
    assert len(set(ids)) == len(ids) and all(0 < i < MAX_ID for i in ids)
    for environment in created:
        assert cdb.app.get(API + "/environments/{0}".format(environment["id"])).json == environment
    cdb.put(ids[-1], "r", {"k": 1}, status=308)


def test_id_less_creations_racing_explicit_ids_always_succeed(db_url, request, session):
    if not db_url.startswith("postgresql"):
        pytest.skip("a race between gunicorn workers needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    import concurrent.futures
    import requests
    api = request.getfixturevalue("gunicorn") + "config/environments"
    bodies = [dict({"components": [], "hierarchy_levels": []}, **({"id": i} if i % 2 else {})) for i in range(1, 31)]
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda body: requests.post(api, json=body, timeout=60), bodies))
    for body, answer in zip(bodies, answers):
        assert answer.status_code in ((201, 409) if "id" in body else (201,)), answer.text
    created = sorted(a.json()["id"] for a in answers if a.status_code == 201)
    assert sorted(e["id"] for e in requests.get(api, timeout=60).json()) == created
    assert len(set(created)) == len(created)
