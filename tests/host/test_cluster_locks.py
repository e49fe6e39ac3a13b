"""Writers of what the environment model shows take the cluster row lock (issue 12, H6).

Each writer races a cluster-scope session deploy that stages a network change, through a real
``nailgun-api`` (threads with their own connections, barrier-started). The deploy compares the
model with its snapshot at open after taking the cluster lock, so the outcome is one of the two
serial orders: the writer first (the model changed under the session: 409) or the deploy first
(200, then the writer). Never a 500 (deadlock), never both missing.
"""
import threading

import pytest
import requests

from tests.races import together

ROUNDS = 20
HEADER = "X-Configuration-Session"
PATCH = {"Content-Type": "application/env-model-json-patch"}


@pytest.fixture
def api(live_server):
    return live_server.url + "/api/v1"


def _cluster(api, name):
    release = requests.post(api + "/releases/", json={"name": name, "version": "v", "operating_system": "Ubuntu"})
    cluster = requests.post(api + "/clusters/", json={"name": name, "release_id": release.json()["id"]})
    assert cluster.status_code in (200, 201), cluster.text
    return cluster.json()["id"]


def _staged_deploy(api, cluster, number):
    """A session staging a management network change; the deploy call to race."""
    prefix = "{0}/clusters/{1}".format(api, cluster)
    sid = requests.post(prefix + "/configure").json()["id"]
    staged = requests.patch("{0}/model/".format(prefix), headers=dict(PATCH, **{HEADER: sid}), json=[
        {"op": "replace", "path": "/networking_parameters/vlan_range", "value": [1000 + number, 1100 + number]}])
    assert staged.status_code == 200, staged.text
    return lambda client: client.post("{0}/sessions/{1}/deploy".format(prefix, sid))


def _check(answers, writer_ok, deploy_ok=(200, 409)):
    """``deploy_ok``: 200 (deploy first) or what the deploy answers once the writer landed first."""
    deploy, writer = answers
    assert deploy.status_code in deploy_ok, deploy.text
    assert writer.status_code in writer_ok, writer.text


def test_node_group_created_while_a_deploy_lands(api):
    cluster = _cluster(api, "ng-create")
    for number in range(ROUNDS):
        deploy = _staged_deploy(api, cluster, number)
        answers = together(deploy, lambda c, n=number: c.post(api + "/nodegroups/",
                                                          json={"cluster_id": cluster, "name": "rack{0}".format(n)}))
        _check(answers, (200, 201))
    groups = requests.get(api + "/nodegroups/?cluster_id={0}".format(cluster)).json()
    assert len(groups) == ROUNDS + 1


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_node_group_changed_while_a_deploy_lands(api, method):
    cluster = _cluster(api, "ng-" + method.lower())
    for number in range(ROUNDS):
        group = requests.post(api + "/nodegroups/", json={"cluster_id": cluster, "name": "g{0}".format(number)})
        assert group.status_code in (200, 201), group.text
        url = "{0}/nodegroups/{1}".format(api, group.json()["id"])
        deploy = _staged_deploy(api, cluster, number)
        body = {"json": {"name": "h{0}".format(number)}} if method == "PUT" else {}
        answers = together(deploy, lambda c: c.request(method, url, **body))
        _check(answers, (200, 204))
    names = {g["name"] for g in requests.get(api + "/nodegroups/?cluster_id={0}".format(cluster)).json()}
    assert names == ({"default"} | {"h{0}".format(n) for n in range(ROUNDS)} if method == "PUT" else {"default"})


def _node(api, number):
    node = requests.post(api + "/nodes/", json={"mac": "52:54:00:00:{0:02x}:{1:02x}".format(number // 256,
                                                                                         number % 256)})
    assert node.status_code in (200, 201), node.text
    return node.json()["id"]


@pytest.mark.parametrize("how", ["PUT /nodes", "PUT /nodes/<id>", "DELETE /nodes"])
def test_nodes_written_while_a_deploy_lands(api, how):
    for number in range(ROUNDS):  # a cluster each round: a node in error leaves its cluster deployed
        cluster = _cluster(api, "nodes-{0}-{1}".format(len(how), number))
        node = _node(api, number + 100 * len(how))
        requests.put(api + "/nodes/", json=[{"id": node, "cluster_id": cluster}]).raise_for_status()
        deploy = _staged_deploy(api, cluster, number)
        if how == "PUT /nodes":
            write = lambda c: c.put(api + "/nodes/", json=[{"id": node, "cluster_id": None}])  # noqa: E731
        elif how == "PUT /nodes/<id>":
            write = lambda c: c.put("{0}/nodes/{1}".format(api, node), json={"status": "error"})  # noqa: E731
        else:
            write = lambda c: c.delete("{0}/nodes/?ids={1}".format(api, node))  # noqa: E731
        # a node in error makes the cluster deployed: a deploy after it refuses the network change (403)
        _check(together(deploy, write), (200, 204), (200, 403, 409) if how == "PUT /nodes/<id>" else (200, 409))
        assert not requests.get(api + "/nodes/?cluster_id={0}".format(cluster)).json() or how == "PUT /nodes/<id>"


def test_the_orchestrator_answer_while_a_deploy_lands(api, env, session):
    """``task.receive`` (its own connection, as Astute's answer) locks the cluster before the task: the
    deploy either refuses while provisioning runs (409) or comes after the answer (its checks see the
    finished state: 200 or 403 when the nodes made the cluster deployed); the answer always lands."""
    from nailgun_host.db import db
    from nailgun_host.objects import task as task_obj

    def receive(uuid, status):
        def call(_client):
            try:
                task_obj.receive({"task_uuid": uuid, "status": status})
                db.commit()
                return "landed"
            finally:
                db.remove()
        return call

    for number in range(ROUNDS):
        cluster = env.create_cluster()["id"]
        env.create_node(cluster_id=cluster, roles=["controller"])
        deploy = _staged_deploy(api, cluster, number)
        task = requests.put("{0}/clusters/{1}/provision/".format(api, cluster))
        assert task.status_code == 202, task.text
        answer, landed = together(deploy, receive(task.json()["uuid"], ("ready", "error")[number % 2]))
        assert landed == "landed"
        assert answer.status_code in (200, 403, 409), answer.text
        assert requests.get("{0}/tasks/{1}/".format(api, task.json()["id"])).json()["status"] in ("ready", "error")


def _held_back(api, db_url, cluster, call, table="clusters"):
    """Whether ``call`` waits while another connection holds the row lock of ``cluster`` (or of the row
    ``cluster`` names in ``table``), on PostgreSQL.

    The holder takes FOR NO KEY UPDATE: it conflicts with the writers' FOR UPDATE but not with the
    KEY SHARE lock a foreign key check takes, so only a writer that locks the row waits."""
    import sqlalchemy as sa
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as holder:
            holder.execute(sa.text("SELECT id FROM {0} WHERE id = :id FOR NO KEY UPDATE".format(table)),
                           {"id": cluster})
            done = threading.Event()
            answer = []
            thread = threading.Thread(target=lambda: (answer.append(call()), done.set()))
            thread.start()
            waited = not done.wait(1.0)
            holder.rollback()
        thread.join(30)
        assert answer and answer[0].status_code < 500, answer and answer[0].text
        return waited
    finally:
        engine.dispose()


@pytest.mark.parametrize("writer", ["POST /nodegroups", "PUT /nodegroups/<id>", "DELETE /nodegroups/<id>",
                                    "PUT /nodes", "PUT /nodes/<id>", "DELETE /nodes", "DELETE /nodes/<id>"])
def test_each_writer_waits_for_the_cluster_row_lock(api, db_url, writer):
    """Deterministic: a writer that skipped the lock would answer while it is held."""
    if not db_url.startswith("postgresql"):
        pytest.skip("row locks need PostgreSQL (SQLite serializes every writer with BEGIN IMMEDIATE)")
    cluster = _cluster(api, "held")
    group = requests.post(api + "/nodegroups/", json={"cluster_id": cluster, "name": "g"}).json()["id"]
    node = _node(api, 7)
    requests.put(api + "/nodes/", json=[{"id": node, "cluster_id": cluster}]).raise_for_status()
    calls = {
        "POST /nodegroups": lambda: requests.post(api + "/nodegroups/", json={"cluster_id": cluster, "name": "x"}),
        "PUT /nodegroups/<id>": lambda: requests.put("{0}/nodegroups/{1}".format(api, group), json={"name": "y"}),
        "DELETE /nodegroups/<id>": lambda: requests.delete("{0}/nodegroups/{1}".format(api, group)),
        "PUT /nodes": lambda: requests.put(api + "/nodes/", json=[{"id": node, "status": "error"}]),
        "PUT /nodes/<id>": lambda: requests.put("{0}/nodes/{1}".format(api, node), json={"status": "error"}),
        "DELETE /nodes": lambda: requests.delete("{0}/nodes/?ids={1}".format(api, node)),
        "DELETE /nodes/<id>": lambda: requests.delete("{0}/nodes/{1}".format(api, node)),
    }
    assert _held_back(api, db_url, cluster, calls[writer])


@pytest.mark.parametrize("writer", ["PUT /nodes/<id>", "DELETE /nodegroups/<id>", "DELETE /clusters/<id>"])
def test_a_writer_locks_its_cluster_and_not_the_clusters_release(api, db_url, writer):
    """A cluster is read with its release joined; locking the cluster must not lock that row too: writers of
    two clusters of one release then deadlocked on it (a cluster's deletion answered 409)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("row locks need PostgreSQL (SQLite serializes every writer with BEGIN IMMEDIATE)")
    cluster = _cluster(api, "of-a-shared-release")
    release = requests.get("{0}/clusters/{1}".format(api, cluster)).json()["release_id"]
    group = requests.post(api + "/nodegroups/", json={"cluster_id": cluster, "name": "g"}).json()["id"]
    node = _node(api, 8)
    requests.put(api + "/nodes/", json=[{"id": node, "cluster_id": cluster}]).raise_for_status()
    calls = {
        "PUT /nodes/<id>": lambda: requests.put("{0}/nodes/{1}".format(api, node), json={"status": "error"}),
        "DELETE /nodegroups/<id>": lambda: requests.delete("{0}/nodegroups/{1}".format(api, group)),
        "DELETE /clusters/<id>": lambda: requests.delete("{0}/clusters/{1}".format(api, cluster)),
    }
    assert not _held_back(api, db_url, release, calls[writer], table="releases")
