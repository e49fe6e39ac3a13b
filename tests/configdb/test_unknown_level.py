"""``X-Level-Unknown`` (issue 26): an effective GET at a level value the environment stores nothing at or under,
while it stores something under other values of that level, says so; the Hiera backends then refuse to take the
levels above it for the node's values. The property is checked against a model over random stored paths of a
two-level hierarchy, with values a SQL ``LIKE`` would confuse (``%``, ``_``)."""
import urllib.parse

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

VALUES = ["a", "b", "a%", "a_", "_"]
PATHS = st.lists(st.sampled_from(VALUES), min_size=1, max_size=2).map(tuple)


def _levels(path):
    return "".join("{0}/{1}/".format(name, urllib.parse.quote(value, safe=""))
                   for name, value in zip(("rack", "nodes"), path))


def _unknown(stored, path):
    """The model: nothing stored at ``path`` or below it, something below its parent under the same level."""
    mine = any(p[:len(path)] == path for p in stored)
    siblings = any(len(p) >= len(path) and p[:len(path) - 1] == path[:-1] for p in stored)
    return siblings and not mine


@hypothesis_settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(PATHS, max_size=4), asked=st.lists(PATHS, min_size=1, max_size=4))
def test_an_effective_get_says_when_its_level_value_is_unknown_among_stored_ones(cdb, stored, asked):
    components = cdb.app.get("/api/v1/config/components").json or [cdb.component("c", ["r", "other"])]
    ids = [d["id"] for d in components[0]["resource_definitions"]]
    env_id = cdb.environment(["c"], levels=("rack", "nodes"))["id"]
    cdb.put(env_id, ids[0], {"top": 1})
    for number, path in enumerate(stored):  # either data source: the level is known whatever it stores
        cdb.put(env_id, ids[number % 2], {"at": list(path)}, levels=_levels(path))
    for path in asked:
        answer = cdb.get(env_id, "r", _levels(path), query="effective")
        assert answer.headers.get("X-Level-Unknown") == ("true" if _unknown(stored, path) else None), (stored, path)
        assert answer.json["top"] == 1
        assert "X-Level-Unknown" not in cdb.get(env_id, "r", _levels(path)).headers  # effective GETs only


def test_the_etag_of_an_effective_get_changes_when_its_level_becomes_unknown(cdb):
    """A revalidation must not keep a client on an answer that did not carry the header it now needs."""
    resource = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env_id = cdb.environment(["c"])["id"]
    cdb.put(env_id, resource, {"top": 1})
    before = cdb.get(env_id, "r", "nodes/n1/", query="effective")
    assert "X-Level-Unknown" not in before.headers  # no node has anything: the environment's values are the node's
    cdb.put(env_id, resource, {"mine": 2}, levels="nodes/n2/")
    after = cdb.get(env_id, "r", "nodes/n1/", query="effective", headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_int == 200 and after.headers["X-Level-Unknown"] == "true"


@hypothesis_settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(PATHS, max_size=3), staged=st.lists(PATHS, min_size=1, max_size=3),
       asked=st.lists(PATHS, min_size=1, max_size=4))
def test_a_session_counts_the_documents_it_stages_as_stored(cdb, stored, staged, asked):
    """A session's reads show its staged documents: the header says the same of them as of stored ones, in the
    session, and nothing of them outside it."""
    components = cdb.app.get("/api/v1/config/components").json or [cdb.component("c", ["r", "other"])]
    ids = [d["id"] for d in components[0]["resource_definitions"]]
    env_id = cdb.environment(["c"], levels=("rack", "nodes"))["id"]
    cdb.put(env_id, ids[0], {"top": 1})
    for number, path in enumerate(stored):
        cdb.put(env_id, ids[number % 2], {"at": list(path)}, levels=_levels(path))
    session = cdb.app.post_json("/api/v1/config/environments/{0}/configure".format(env_id), {}).json["id"]
    in_session = {"X-Configuration-Session": session}
    for number, path in enumerate(staged):
        cdb.put(env_id, ids[number % 2], {"staged": list(path)}, levels=_levels(path), headers=in_session)
    for path in asked:
        seen = cdb.get(env_id, "r", _levels(path), query="effective", headers=in_session).headers
        assert seen.get("X-Level-Unknown") == ("true" if _unknown(stored + staged, path) else None), (path, "in")
        outside = cdb.get(env_id, "r", _levels(path), query="effective").headers
        assert outside.get("X-Level-Unknown") == ("true" if _unknown(stored, path) else None), (path, "out")
