"""Deploys racing each other and direct writes through gunicorn (2 workers) on PostgreSQL: the first
commit wins, the other gets 409, and no write is ever lost."""
import pytest
import requests

from tests.races import together

ROUNDS = 30
HEADER = "X-Configuration-Session"


@pytest.fixture
def api(db_url, migrated_db, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    base = request.getfixturevalue("gunicorn") + "config"
    component = requests.post(base + "/components", json={"name": "c", "resource_definitions": [{"name": "r"}]})
    assert component.status_code == 201, component.text
    rid = component.json()["resource_definitions"][0]["id"]
    assert requests.post(base + "/environments", json={"components": ["c"], "hierarchy_levels": []}).ok
    return base + "/environments/1", "{0}/environments/1/resources/{1}/values".format(base, rid)


def _open(env):
    answer = requests.post(env + "/configure", json={})
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def _stage(url, sid, data):
    answer = requests.put(url, json=data, headers={HEADER: sid})
    assert answer.status_code == 204, answer.text


def test_two_sessions_deploying_one_document(api):
    env, url = api
    for number in range(ROUNDS):
        a, b = _open(env), _open(env)
        _stage(url, a, {"round": number, "by": "a"})
        _stage(url, b, {"round": number, "by": "b"})
        answers = together(*[lambda client, s=s: client.post(env + "/sessions/{0}/deploy".format(s)) for s in (a, b)])
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [200, 409], [answer.text for answer in answers]
        winner = "ab"[[answer.status_code for answer in answers].index(200)]
        assert requests.get(url).json() == {"round": number, "by": winner}
    history = requests.get(url + "/history").json()
    assert len(history) == ROUNDS
    assert len({entry["revision"] for entry in history}) == ROUNDS


def test_a_deploy_and_a_direct_write_lose_nothing(api):
    env, url = api
    for number in range(ROUNDS):
        versions = len(requests.get(url + "/history").json())
        sid = _open(env)
        _stage(url, sid, {"round": number, "by": "session"})
        deployed, put = together(lambda client: client.post(env + "/sessions/{0}/deploy".format(sid)),
                                 lambda client: client.put(url, json={"round": number, "by": "put"}))
        assert put.status_code == 204, put.text
        assert deployed.status_code in (200, 409), deployed.text
        history = requests.get(url + "/history").json()
        final = requests.get(url).json()
        if deployed.status_code == 409:  # the direct write landed first
            assert final == {"round": number, "by": "put"}
            assert len(history) == versions + 1
        else:  # the deploy landed first, the write after it: both are versions
            assert len(history) == versions + 2
            assert final == {"round": number, "by": "put"}
