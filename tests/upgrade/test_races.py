"""Concurrent upgrade moves through gunicorn: one provisioning task for the seed, no 500 (issue 9, items 4, 5)."""
import concurrent.futures

import pytest
import requests

from tests.upgrade.conftest import ASSIGN


@pytest.fixture
def api(db_url, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("a race between gunicorn workers needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    return request.getfixturevalue("gunicorn")


def _post_all(api, seed_id, bodies):
    url = api + ASSIGN.format(seed_id)[len("/api/v1/"):]
    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda body: requests.post(url, json=body, timeout=60), bodies))


def test_concurrent_assign_moves_start_one_provisioning_task(upgrade_env, api):
    seed = upgrade_env.clone()
    nodes = [n["id"] for n in upgrade_env.controllers] + [upgrade_env.compute["id"]]
    answers = _post_all(api, seed["id"], [{"nodes_ids": [node_id]} for node_id in nodes])
    assert sorted(a.status_code for a in answers) == [202, 409, 409], [a.text for a in answers]
    tasks = upgrade_env.app.get("/api/v1/tasks/?cluster_id={0}".format(seed["id"])).json
    assert [(t["name"], t["status"]) for t in tasks] == [("provision", "pending")]


def test_one_node_moved_twice_at_once_moves_once(upgrade_env, api):
    seed = upgrade_env.clone()
    node_id = upgrade_env.controllers[0]["id"]
    answers = _post_all(api, seed["id"], [{"nodes_ids": [node_id], "reprovision": False}] * 4)
    assert sorted(a.status_code for a in answers) == [200, 400, 400, 400], [a.text for a in answers]
    assert upgrade_env.env.get_node(node_id)["cluster"] == seed["id"]
