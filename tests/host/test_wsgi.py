"""The WSGI callable under gunicorn: several workers sharing one database."""
import concurrent.futures

import pytest
import requests

WRITERS = 20


def test_two_workers_serve_one_database(gunicorn):
    release = requests.post(gunicorn + "releases/", json={
        "name": "R", "version": "mitaka-9.0", "operating_system": "Ubuntu"}).json()
    cluster = requests.post(gunicorn + "clusters/", json={"name": "env", "release_id": release["id"]}).json()
    for index in range(12):
        node = requests.post(gunicorn + "nodes/", json={
            "mac": "52:54:00:bb:00:{0:02x}".format(index), "cluster_id": cluster["id"], "roles": ["compute"]})
        assert node.status_code == 201, node.text
    for _ in range(10):  # requests land on both workers
        response = requests.get(gunicorn + "nodes/?cluster_id={0}".format(cluster["id"]))
        assert len(response.json()) == 12
    addresses = [d["ip"] for n in response.json() for d in n["network_data"] if d["name"] == "management"]
    assert len(addresses) == len(set(addresses)) == 12


def test_concurrent_attribute_patches_lose_no_update(gunicorn, db_url):
    """Each PATCH merges into the stored tree: it reads the cluster under its row lock, or loses updates."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL): SQLite runs one writer at a time")
    release = requests.post(gunicorn + "releases/", json={
        "name": "R", "version": "mitaka-9.0", "operating_system": "Ubuntu"}).json()
    cluster = requests.post(gunicorn + "clusters/", json={"name": "env", "release_id": release["id"]}).json()
    url = gunicorn + "clusters/{0}/attributes/".format(cluster["id"])

    def patch(writer):
        with requests.Session() as http:
            return http.patch(url, json={"editable": {"writers": {
                "w{0}".format(writer): {"value": writer, "type": "text"}}}}).status_code

    with concurrent.futures.ThreadPoolExecutor(WRITERS) as pool:
        assert set(pool.map(patch, range(WRITERS))) == {200}
    written = requests.get(url).json()["editable"]["writers"]
    assert sorted(written) == sorted("w{0}".format(writer) for writer in range(WRITERS))


@pytest.mark.parametrize("path, status, location", [
    ("a%2Fb", 308, "resources/1/values"), ("a/b", 308, "resources/1/values"), ("1", 204, None),
    ("a%252Fb", 404, None), ("%31", 204, None)])
def test_gunicorn_and_nailgun_api_route_encoded_slashes_alike(gunicorn, live_server, session, path, status, location):
    """``%2F`` is a ``/`` under every server (issue 9, item 7): one URL, one handler, one answer."""
    api = live_server.url + "/api/v1/config/"
    requests.post(api + "components", json={"name": "c", "resource_definitions": [{"name": "a/b"}]}).raise_for_status()
    requests.post(api + "environments", json={"components": ["c"], "hierarchy_levels": []}).raise_for_status()
    answers = []
    for root in (api, gunicorn + "config/"):
        resp = requests.put(root + "environments/1/resources/{0}/values".format(path), json={"x": 1},
                            allow_redirects=False)
        assert resp.status_code == status, resp.text
        assert (resp.headers.get("Location") or "").endswith(location or ""), resp.headers.get("Location")
        answers.append(resp.json() if resp.content else None)
    if status == 404:
        assert answers[0] == answers[1] == {"message": "Data source a%2Fb is not supported in environment 1",
                                            "errors": []}


def test_a_raw_uri_is_decoded_under_its_own_script_name_each_time():
    """The path decoded from the raw URI is remembered by URI and script name (the same few URIs come on every hot
    read): the same URI under another mount point, or another URI, is decoded anew; a long one is not kept."""
    from nailgun_host import app

    uri = "/nailgun/api/v1/x%2Fy?effective"
    assert app._decoded_path({"REQUEST_URI": uri, "SCRIPT_NAME": "/nailgun"}) == "/api/v1/x/y"
    assert app._decoded_path({"REQUEST_URI": uri, "SCRIPT_NAME": "/nailgun"}) == "/api/v1/x/y"
    assert app._decoded_path({"REQUEST_URI": uri, "SCRIPT_NAME": ""}) == "/nailgun/api/v1/x/y"
    assert app._decoded_path({"RAW_URI": "/api/v1/%252F", "REQUEST_URI": uri}) == "/api/v1/%2F"
    long_uri = "/api/v1/" + "a" * app.REMEMBERED_LENGTH
    assert app._decoded_path({"REQUEST_URI": long_uri}) == long_uri
    assert (long_uri, "") not in app._decoded
