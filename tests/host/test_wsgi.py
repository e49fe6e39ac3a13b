"""The WSGI callable under gunicorn: several workers sharing one database."""
import requests


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
