"""At most one pending or running provision/deployment task per cluster (issue 9, item 4).

The handlers check under the cluster's row lock; the database holds the rule too
(partial unique index), so a path that skips the check still cannot start a second task.
"""
import concurrent.futures

import pytest
import requests
import sqlalchemy as sa

from nailgun_host.db.models import Task
from nailgun_host.objects import task as task_obj

REQUESTS = 30


def test_the_database_refuses_a_second_active_task_of_a_cluster(env, session):
    first, second = env.create_cluster(name="a")["id"], env.create_cluster(name="b")["id"]
    session.add_all([Task(name="provision", cluster_id=first, status="running"),
                     Task(name="deployment", cluster_id=first, status="ready"),
                     Task(name="provision", cluster_id=second, status="pending"),
                     Task(name="other", cluster_id=first, status="running")])
    session.commit()
    session.add(Task(name="deployment", cluster_id=first, status="pending"))
    with pytest.raises(sa.exc.IntegrityError):
        session.commit()
    session.rollback()


def test_a_task_that_passed_a_stale_check_is_refused_with_409(app, env, session, monkeypatch):
    """What a racing request sees when the other one committed after its check: 409, nothing written."""
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    session.add(Task(name="deployment", cluster_id=cluster["id"], status="running"))
    session.commit()
    checks = []
    monkeypatch.setattr(task_obj, "check_no_running_task", checks.append)
    resp = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=409)
    assert resp.json == {"message": "Another task is already running for environment {0}".format(cluster["id"]),
                         "errors": []}
    assert checks  # the check was passed over, as in a race
    assert [t.name for t in session.query(Task)] == ["deployment"]
    assert env.get_node(node["id"])["status"] != "provisioning"


def test_concurrent_provisioning_starts_one_task(db_url, env, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("a race between gunicorn workers needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    cluster = env.create_cluster()
    for _ in range(2):
        env.create_node(cluster_id=cluster["id"], roles=["controller"])
    url = request.getfixturevalue("gunicorn") + "clusters/{0}/provision/".format(cluster["id"])
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: requests.put(url, timeout=60), range(REQUESTS)))
    assert sorted(a.status_code for a in answers) == [202] + [409] * (REQUESTS - 1)
    assert all(set(a.json()) == {"message", "errors"} for a in answers if a.status_code == 409)
    tasks = env.app.get("/api/v1/tasks/?cluster_id={0}".format(cluster["id"])).json
    assert [t["status"] for t in tasks] == ["pending"]
