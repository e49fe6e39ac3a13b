"""Twenty writers doing read-modify-write with If-Match through gunicorn (2 workers) lose no update."""
import concurrent.futures

import pytest
import requests

WRITERS = 20


def _writer(url, writer):
    """Append this writer's number: GET, change, PUT with If-Match; on 412 read again."""
    with requests.Session() as http:
        for attempt in range(200):
            current = http.get(url)
            assert current.status_code == 200
            data = current.json()
            data["writers"] = data.get("writers", []) + [writer]
            resp = http.put(url, json=data, headers={"If-Match": current.headers["ETag"],
                                                     "X-Config-Author": "writer-{0}".format(writer)})
            if resp.status_code == 204:
                return attempt
            assert resp.status_code == 412, resp.text
    raise AssertionError("writer {0} never succeeded".format(writer))


def test_no_lost_update(db_url, migrated_db, request):
    """``migrated_db`` makes ``clean_db`` empty the tables first: the gunicorn fixture is asked for lazily."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    api = request.getfixturevalue("gunicorn") + "config"
    component = requests.post(api + "/components", json={"name": "c", "resource_definitions": [{"name": "r"}]})
    assert component.status_code == 201, component.text
    rid = component.json()["resource_definitions"][0]["id"]
    assert requests.post(api + "/environments", json={"components": ["c"], "hierarchy_levels": ["nodes"]}).ok
    url = "{0}/environments/1/nodes/n1/resources/{1}/values".format(api, rid)
    with concurrent.futures.ThreadPoolExecutor(WRITERS) as pool:
        retries = list(pool.map(lambda w: _writer(url, w), range(WRITERS)))
    final = requests.get(url).json()
    assert sorted(final["writers"]) == list(range(WRITERS))
    history = requests.get(url + "/history").json()
    assert [h["version"] for h in history] == list(range(1, WRITERS + 1))
    assert sum(retries) > 0  # the writers did collide, and If-Match caught it
