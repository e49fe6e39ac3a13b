"""ConfigDB writes racing a node's departure from its cluster, through gunicorn on PostgreSQL (issue 9, item 5).

Both sides take the linked environment's row lock, so a node's document is either
written before it leaves (and deleted with its level) or refused (404): none is left
behind for a node no longer in the cluster, and no race answers 500.
"""
import concurrent.futures

import pytest
import requests
import sqlalchemy as sa

from nailgun_ext_configdb.models import Document

ROUNDS = 6
WRITERS = 6


@pytest.fixture
def api(db_url, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("a race between gunicorn workers needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    return request.getfixturevalue("gunicorn")


@pytest.fixture
def linked_cluster(cdb, env):
    cluster = env.create_cluster()
    other = env.create_cluster(name="other")
    cdb.component("c", ["r"])
    cdb.environment(["c"], id=cluster["id"])
    return cluster, other


def _node_documents(session, node_id):
    session.expire_all()
    return session.scalars(sa.select(Document.level_path).where(
        Document.level_path == "nodes/{0}".format(node_id))).all()


def _race(api, node, departure):
    """WRITERS concurrent writes of the node's values and one departure request; their answers."""
    url = api + "config/environments/{0}/nodes/{1}/resources/1/values".format(node["cluster"], node["id"])
    jobs = [lambda i=i: requests.put(url, json={"w": i}, timeout=60) for i in range(WRITERS)]
    jobs.insert(WRITERS // 2, lambda: departure(api, node))
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda job: job(), jobs))
    writes = answers[:WRITERS // 2] + answers[WRITERS // 2 + 1:]
    assert {a.status_code for a in writes} <= {204, 404}, [a.text for a in writes]
    return answers[WRITERS // 2]


DEPARTURES = {
    "unassignment": lambda api, node: requests.post(
        api + "clusters/{0}/unassignment/".format(node["cluster"]), json=[{"id": node["id"]}], timeout=60),
    "deletion": lambda api, node: requests.delete(api + "nodes/{0}/".format(node["id"]), timeout=60),
    "move": lambda api, node: requests.put(
        api + "nodes/{0}/".format(node["id"]), json={"cluster_id": node["other"]}, timeout=60),
}


@pytest.mark.parametrize("departure", sorted(DEPARTURES))
def test_no_document_outlives_the_nodes_departure(api, env, linked_cluster, session, departure):
    cluster, other = linked_cluster
    for _ in range(ROUNDS):
        node = dict(env.create_node(cluster_id=cluster["id"], roles=["compute"]), other=other["id"])
        answer = _race(api, node, DEPARTURES[departure])
        assert answer.status_code in (200, 204), answer.text
        assert _node_documents(session, node["id"]) == []


def test_one_node_moved_twice_at_once_answers_no_500(api, env, linked_cluster, session):
    cluster, other = linked_cluster
    third = env.create_cluster(name="third")
    for _ in range(ROUNDS):
        node = env.create_node(cluster_id=cluster["id"], roles=["compute"])
        url = api + "nodes/{0}/".format(node["id"])
        jobs = [lambda: requests.put(url, json={"cluster_id": other["id"]}, timeout=60),
                lambda: requests.put(url, json={"cluster_id": third["id"]}, timeout=60),
                lambda: requests.post(api + "clusters/{0}/unassignment/".format(cluster["id"]),
                                      json=[{"id": node["id"]}], timeout=60),
                lambda: requests.delete(url, timeout=60)]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            answers = list(pool.map(lambda job: job(), jobs))
        assert all(a.status_code < 500 for a in answers), [a.text for a in answers]
        assert all(a.headers["Content-Type"].startswith("application/json") for a in answers if a.content)
        assert _node_documents(session, node["id"]) == []


def test_cluster_deletion_racing_writes_and_moves_answers_no_500(api, cdb, env, session):
    other = env.create_cluster(name="other")
    cdb.component("c", ["r"])
    for round_ in range(ROUNDS):
        cluster = env.create_cluster(name="doomed-{0}".format(round_))
        cdb.environment(["c"], id=cluster["id"])
        node = env.create_node(cluster_id=cluster["id"], roles=["compute"])
        values = api + "config/environments/{0}/nodes/{1}/resources/1/values".format(cluster["id"], node["id"])
        jobs = [lambda: requests.put(values, json={"w": 1}, timeout=60),
                lambda: requests.put(api + "nodes/{0}/".format(node["id"]), json={"cluster_id": other["id"]},
                                     timeout=60),
                lambda: requests.delete(api + "clusters/{0}/".format(cluster["id"]), timeout=60),
                lambda: requests.put(values, json={"w": 2}, timeout=60)]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            answers = list(pool.map(lambda job: job(), jobs))
        assert all(a.status_code < 500 for a in answers), [a.text for a in answers]
        assert answers[2].status_code == 204
        session.expire_all()
        assert session.scalars(sa.select(Document).where(Document.environment_id == cluster["id"])).all() == []
