"""Deploys that race, through a real ``nailgun-api`` (threads, one connection each; run on PostgreSQL
with ``NAILGUN_TEST_DB_URL``): the same session deployed twice gives one 200 and one 403; two sessions
on one document give one 200 and one 409; the document holds the winner's value."""
import os

import pytest
import requests

from tests.conftest import LiveServer
from tests.host.conftest import TOY_DIR
from tests.races import together

ROUNDS = 30
HEADER = "X-Configuration-Session"


@pytest.fixture
def toy_server(toy_extensions, migrated_db, db_url):
    path = os.pathsep.join(filter(None, [TOY_DIR, os.environ.get("PYTHONPATH")]))
    server = LiveServer(db_url, env={"PYTHONPATH": path})
    yield server.url + "/api/v1"
    server.stop()


def _cluster(api):
    release = requests.post(api + "/releases/", json={"name": "r", "version": "v", "operating_system": "Ubuntu"})
    cluster = requests.post(api + "/clusters/", json={"name": "race", "release_id": release.json()["id"]})
    return cluster.json()["id"]


def test_one_session_deployed_twice_at_once_lands_once(toy_server):
    api = toy_server
    cluster = _cluster(api)
    prefix = "{0}/clusters/{1}".format(api, cluster)
    for number in range(ROUNDS):
        sid = requests.post(prefix + "/configure").json()["id"]
        staged = requests.put("{0}/toy/docs/{1}/nova".format(api, cluster), json={"round": number},
                              headers={HEADER: sid})
        assert staged.status_code == 200, staged.text
        deploy = "{0}/sessions/{1}/deploy".format(prefix, sid)
        answers = together(lambda client: client.post(deploy), lambda client: client.post(deploy))
        assert sorted(a.status_code for a in answers) == [200, 403], [a.text for a in answers]
        assert "deployed" in next(a for a in answers if a.status_code == 403).json()["message"]
        assert requests.get("{0}/toy/docs/{1}/nova".format(api, cluster)).json() == {"round": number}
    history = requests.get(prefix + "/deployments?limit=500").json()["deployments"]
    assert [d["revision"] for d in history] == list(range(ROUNDS, 0, -1))


def test_two_sessions_on_one_document_first_deploy_wins(toy_server):
    api = toy_server
    cluster = _cluster(api)
    prefix = "{0}/clusters/{1}".format(api, cluster)
    for number in range(ROUNDS):
        sessions = [requests.post(prefix + "/configure").json()["id"] for _ in range(2)]
        for index, sid in enumerate(sessions):
            requests.put("{0}/toy/docs/{1}/nova".format(api, cluster), json={"round": number, "by": index},
                         headers={HEADER: sid}).raise_for_status()
        answers = together(*[lambda client, sid=sid: client.post("{0}/sessions/{1}/deploy".format(prefix, sid))
                          for sid in sessions])
        assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
        winner = [a.status_code for a in answers].index(200)
        assert requests.get("{0}/toy/docs/{1}/nova".format(api, cluster)).json() == {"round": number, "by": winner}
        loser = sessions[1 - winner]
        assert requests.get("{0}/sessions/{1}".format(prefix, loser)).status_code == 403
