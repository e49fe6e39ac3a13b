"""The WSGI callable under gunicorn: several workers sharing one database."""
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
import requests

from tests.conftest import free_port


@pytest.fixture
def gunicorn(migrated_db, db_url):
    if shutil.which("gunicorn", path=os.path.dirname(sys.executable)) is None:
        pytest.fail("gunicorn is a test dependency: pip install -e '.[test]'")
    port = free_port()
    process = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "gunicorn"), "-w", "2", "-b", "127.0.0.1:{0}".format(port),
         "nailgun_host.wsgi:application"],
        env=dict(os.environ, NAILGUN_DB_URL=db_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        time.sleep(0.1)
    yield "http://127.0.0.1:{0}/api/v1/".format(port)
    process.terminate()
    process.wait(10)


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
