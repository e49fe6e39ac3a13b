"""An upgrade's assign moves nodes through the host, so ConfigDB hears it: the nodes' facts in the
orig's linked environment go with them, in the same statements for one node or several."""
import pytest

from nailgun_ext_configdb.models import Document
from tests.configdb.conftest import ConfigAPI
from tests.upgrade.conftest import ASSIGN, CLONE


@pytest.fixture
def cdb(app):
    return ConfigAPI(app)


def _orig_with_facts(env, cdb, count, tag):
    """An orig of ``count`` nodes whose linked environment holds values and overrides at each node's
    level and one value at the environment's own; its seed; the nodes' ids."""
    old = env.create_release(name="Old {0}".format(tag), version="liberty-8.0")
    new = env.create_release(name="New {0}".format(tag), version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="orig-{0}".format(tag))
    ids = [env.create_node(cluster_id=orig["id"], roles=["compute"], status="ready")["id"] for _ in range(count)]
    component = cdb.component("fuel-{0}".format(tag), ["astute", "override/node"])
    resources = {r["name"]: r["id"] for r in component["resource_definitions"]}
    cdb.environment([component["name"]], id=orig["id"])
    cdb.put(orig["id"], resources["astute"], {"root": 1})
    for node_id in ids:
        level = "nodes/{0}/".format(node_id)
        cdb.put(orig["id"], resources["astute"], {"n": node_id}, levels=level)
        cdb.put(orig["id"], resources["override/node"], {"o": 1}, levels=level, kind="overrides")
    seed = env.app.post_json(CLONE.format(orig["id"]), {"name": "seed-{0}".format(tag), "release_id": new["id"]}).json
    return orig, seed, ids


def _stored_levels(session, environment_id):
    session.expire_all()
    levels = sorted({d.level_path for d in session.query(Document).filter_by(environment_id=environment_id)})
    session.rollback()
    return levels


@pytest.mark.parametrize("reprovision", [True, False])
def test_moved_nodes_leave_no_documents_in_the_orig_environment(env, cdb, session, reprovision):
    orig, seed, ids = _orig_with_facts(env, cdb, 3, "docs")
    assert _stored_levels(session, orig["id"]) == [""] + sorted("nodes/{0}".format(i) for i in ids)
    env.app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": ids[:2], "reprovision": reprovision},
                      status=202 if reprovision else 200)
    assert _stored_levels(session, orig["id"]) == ["", "nodes/{0}".format(ids[2])]
    assert {n["cluster"] for n in env.app.get("/api/v1/nodes/").json if n["id"] in ids[:2]} == {seed["id"]}


def test_assign_with_documents_runs_the_same_statements_for_one_node_or_several(env, cdb, session, query_counter):
    def moved(count):
        orig, seed, ids = _orig_with_facts(env, cdb, count, count)
        with query_counter.counting():
            env.app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": ids}, status=202)
        assert _stored_levels(session, orig["id"]) == [""]
        return query_counter.statements

    one, four = moved(1), moved(4)
    assert any(s.lstrip().upper().startswith("DELETE FROM CONFIGDB_DOCUMENTS") for s in one), one
    assert len(four) == len(one), "moving 4 nodes took {0} statements, moving 1 took {1}".format(len(four), len(one))
