"""The key repository as an operator looks after it: ``nailgun-secrets`` rotate, reencrypt, retire; the
canary that stops a server started with keys that do not fit its database."""
import os
import shutil
import subprocess
import sys
import time
import weakref

import pytest
import requests
import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken

from nailgun_host.db import sealed
from nailgun_host.db.models import Cluster, Release
from nailgun_host.settings import settings
from nailgun_platform import secrets
from nailgun_platform.secrets import keys, sealing
from tests.conftest import LiveServer

BIN = os.path.dirname(sys.executable)
RAW_JSON = sa.JSON()


@pytest.fixture
def own_keys(tmp_path, monkeypatch):
    """A key repository of this test's own (the canary is emptied with the tables before each test)."""
    path = str(tmp_path / "keys")
    monkeypatch.setenv("NAILGUN_KEY_REPOSITORY", path)
    settings["SECRETS"]["key_repository"] = path
    return path


def nailgun_secrets(db_url, *args):
    return subprocess.run([os.path.join(BIN, "nailgun-secrets"), "--db-url", db_url] + list(args),
                          capture_output=True, text=True, timeout=60)


def raw_tokens(session, cluster_id, columns=(Cluster.generated_attributes, Cluster.editable_attributes,
                                              Release.attributes_metadata)):
    """Every Fernet token stored in the cluster's attribute columns and its release's metadata (password
    defaults), or in ``columns``, read as the database holds them."""
    row = session.execute(sa.select(*(sa.type_coerce(column, RAW_JSON) for column in columns))
                          .join(Release, Release.id == Cluster.release_id)
                          .where(Cluster.id == cluster_id)).one()
    found = []
    stack = list(row)
    while stack:
        value = stack.pop()
        if sealing.is_sealed(value):
            found.append(value[sealing.MARKER])
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    session.rollback()
    return found


def opens(fernet, token):
    """Whether ``fernet`` opens ``token``."""
    try:
        fernet.decrypt(token.encode())
    except InvalidToken:
        return False
    return True


def stored_attributes(session, cluster_id):
    session.expire_all()
    cluster = session.get(Cluster, cluster_id)
    values = (cluster.generated_attributes, cluster.editable_attributes)
    session.rollback()
    return values


def key_files(path):
    return {int(name): open(os.path.join(path, name), "rb").read().strip() for name in os.listdir(path)}


def test_rotate_reencrypt_retire_keeps_every_value(own_keys, app, env, session, db_url):
    cluster = env.create()
    before = stored_attributes(session, cluster["id"])
    assert before[0]["mysql"]["root_password"]
    tokens = raw_tokens(session, cluster["id"])
    assert len(tokens) > 10

    rotated = nailgun_secrets(db_url, "rotate")
    assert rotated.returncode == 0, rotated.stderr
    status = nailgun_secrets(db_url, "status")
    assert "key 2: primary" in status.stdout and "key 1: old" in status.stdout
    stale = int(status.stdout.strip().splitlines()[-1].split()[0])
    assert stale == len(tokens) + 1  # and the canary
    refused = nailgun_secrets(db_url, "retire")
    assert refused.returncode == 1 and "run nailgun-secrets reencrypt first" in refused.stderr, refused.stderr
    assert 1 in key_files(own_keys)

    reencrypted = nailgun_secrets(db_url, "reencrypt")
    assert reencrypted.returncode == 0, reencrypted.stderr
    assert "clusters.generated_attributes: " in reencrypted.stdout
    assert nailgun_secrets(db_url, "status").stdout.strip().endswith("\n0 stored value(s) not yet under the "
                                                                     "primary key")
    retired = nailgun_secrets(db_url, "retire")
    assert (retired.returncode, retired.stdout.splitlines()) == (0, [
        "database: " + sa.make_url(db_url).render_as_string(), "key repository: " + own_keys,
        "retired key(s): 1"]), retired.stderr

    files = key_files(own_keys)
    assert sorted(files) == [0, 2]
    primary = Fernet(files[2])
    for token in raw_tokens(session, cluster["id"]):
        primary.decrypt(token.encode())  # each one now under the primary alone
        with pytest.raises(InvalidToken):
            Fernet(files[0]).decrypt(token.encode())
    assert stored_attributes(session, cluster["id"]) == before


def test_reencryption_is_not_a_change_of_any_document(own_keys, app, env, session, db_url):
    cluster = env.create()
    shown = app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json
    attributes = app.get("/api/v1/clusters/{0}/attributes".format(cluster["id"])).json
    assert nailgun_secrets(db_url, "rotate").returncode == 0
    assert nailgun_secrets(db_url, "reencrypt").returncode == 0
    assert app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json == shown
    assert app.get("/api/v1/clusters/{0}/attributes".format(cluster["id"])).json == attributes


def test_a_server_started_with_keys_that_do_not_fit_the_database_stops_with_a_message(own_keys, app, env,
                                                                                       db_url, tmp_path):
    env.create()  # the app wrote the canary with this test's keys
    for repository in (str(tmp_path / "other"), str(tmp_path / "missing" / "keys")):
        if repository.endswith("other"):
            keys.load(repository)  # another, valid repository
        started = subprocess.run(
            [sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()", "--db-url", db_url,
             "--no-migrate", "--port", "1"],
            env=dict(os.environ, NAILGUN_KEY_REPOSITORY=repository), capture_output=True, text=True, timeout=60)
        assert started.returncode == 1
        if repository.endswith("other"):
            assert "does not hold the keys this database's secrets are encrypted with" in started.stderr
        else:
            assert "does not exist, and this database holds secrets encrypted with keys" in started.stderr
            assert not os.path.exists(repository)  # not created with keys that would not fit
        assert "Traceback" not in started.stderr


def test_keys_that_stop_fitting_under_a_running_server_answer_503_not_garbage(own_keys, app, env, db_url,
                                                                            tmp_path):
    cluster = env.create()
    copy = str(tmp_path / "served-keys")
    shutil.copytree(own_keys, copy)
    server = LiveServer(db_url, env={"NAILGUN_KEY_REPOSITORY": copy})
    try:
        url = server.url + "/api/v1/clusters/{0}/attributes".format(cluster["id"])
        assert requests.get(url, timeout=10).status_code == 200
        for name in os.listdir(copy):  # an operator restores the wrong backup over it
            os.unlink(os.path.join(copy, name))
        keys.load(copy)
        os.utime(copy, ns=(1, 1))  # a new stamp even within the filesystem's time resolution
        time.sleep(secrets.RECHECK_AFTER + 0.2)
        answer = requests.get(url, timeout=10)
        assert answer.status_code == 503
        assert answer.json()["message"] == ("The server cannot read its secrets' keys; an operator must fix them "
                                            "(the key repository, or the key manager's objects)")
    finally:
        server.stop()


def test_the_encryption_marker_is_refused_in_what_clients_store(app, env):
    cluster = env.create()
    answer = app.patch_json("/api/v1/clusters/{0}/attributes".format(cluster["id"]),
                            {"editable": {"common": {"note": {"$fernet": "gAAAAAB"}}}}, expect_errors=True)
    assert answer.status_code == 400
    assert answer.json["message"] == "The key $fernet is reserved: it marks an encrypted value"


def test_reencryption_seals_cluster_secrets_an_older_version_stored_in_clear(own_keys, app, env, session, db_url):
    cluster = env.create()
    generated, editable = stored_attributes(session, cluster["id"])
    session.execute(sa.update(Cluster).where(Cluster.id == cluster["id"]).values(
        generated_attributes=sa.type_coerce({"legacy": {"password": "LeGaCyPaSsWoRd"}}, RAW_JSON)))
    session.commit()
    assert "\n1 stored value(s) not yet under the primary key" in nailgun_secrets(db_url, "status").stdout
    assert nailgun_secrets(db_url, "reencrypt").returncode == 0
    raw = session.execute(sa.select(sa.type_coerce(Cluster.generated_attributes, RAW_JSON)).where(
        Cluster.id == cluster["id"])).scalar()
    session.rollback()
    assert sealing.is_sealed(raw["legacy"]["password"])
    assert stored_attributes(session, cluster["id"])[0] == {"legacy": {"password": "LeGaCyPaSsWoRd"}}
    assert nailgun_secrets(db_url, "status").stdout.strip().endswith("\n0 stored value(s) not yet under the "
                                                                     "primary key")


def test_health_answers_503_once_the_keys_stop_fitting_the_database(own_keys, app, env, db_url, tmp_path):
    """A load balancer stops sending traffic to a server whose secrets it cannot read: a wrong repository
    restored under it, and ``nailgun-secrets retire --force`` of the key that the data still needs."""
    cluster = env.create()
    copy = str(tmp_path / "served-keys")
    shutil.copytree(own_keys, copy)
    server = LiveServer(db_url, env={"NAILGUN_KEY_REPOSITORY": copy})
    try:
        health = server.url + "/api/v1/health"
        attributes = server.url + "/api/v1/clusters/{0}/attributes".format(cluster["id"])
        assert requests.get(health, timeout=10).status_code == 200
        assert nailgun_secrets(db_url, "rotate").returncode == 0  # the test's repository: the server's is a copy
        shutil.rmtree(copy)
        shutil.copytree(own_keys, copy)  # the new primary, key 1 still there: everything still reads
        time.sleep(secrets.RECHECK_AFTER + 0.2)
        assert requests.get(health, timeout=10).status_code == 200
        assert requests.get(attributes, timeout=10).status_code == 200

        forced = subprocess.run([os.path.join(BIN, "nailgun-secrets"), "--db-url", db_url, "retire", "--force"],
                                env=dict(os.environ, NAILGUN_KEY_REPOSITORY=copy), capture_output=True, text=True,
                                timeout=60)
        assert (forced.returncode, forced.stdout.splitlines()[-1]) == (0, "retired key(s): 1"), forced.stderr
        os.utime(copy, ns=(1, 1))  # a new stamp even within the filesystem's time resolution
        time.sleep(secrets.RECHECK_AFTER + 0.2)
        assert requests.get(attributes, timeout=10).status_code == 503
        answer = requests.get(health, timeout=10)
        assert answer.status_code == 503 and answer.headers["Retry-After"]
        assert answer.json()["message"] == sealed.KEYS_UNFIT_MESSAGE
        assert copy not in answer.text  # a public route: the repository's place goes to the log only
        assert requests.head(health, timeout=10).status_code == 503

        shutil.rmtree(copy)
        shutil.copytree(own_keys, copy)  # the operator restores the repository that fits
        time.sleep(secrets.RECHECK_AFTER + 0.2)
        assert requests.get(health, timeout=10).status_code == 200
        assert requests.get(attributes, timeout=10).status_code == 200

        for name in os.listdir(copy):  # another, valid repository restored over it
            os.unlink(os.path.join(copy, name))
        keys.load(copy)
        os.utime(copy, ns=(2, 2))
        time.sleep(secrets.RECHECK_AFTER + 0.2)
        answer = requests.get(health, timeout=10)
        assert (answer.status_code, answer.json()["message"]) == (503, sealed.KEYS_UNFIT_MESSAGE)
    finally:
        server.stop()


def test_a_leaf_opened_again_is_remembered_until_its_key_is_retired(tmp_path, monkeypatch):
    """A computed read opens the environment's secret leaves again for every node: opened once per key set.
    A retirement loads a new set, which opens nothing its keys do not (the remembered ones go with the old)."""
    path = str(tmp_path / "keys")
    old = keys.load(path)
    token = sealing.seal({"password": "s3cret"}, {"/password"}, old)["password"][sealing.MARKER]
    opened = []
    real = keys.MultiFernet.decrypt
    monkeypatch.setattr(keys.MultiFernet, "decrypt", lambda self, data: opened.append(data) or real(self, data))
    assert [sealing.unseal({"a": {sealing.MARKER: token}}, old) for _ in range(3)] == [{"a": "s3cret"}] * 3
    assert len(opened) == 1
    keys.rotate(path)
    keys.rotate(path)
    keys.retire(path)
    with pytest.raises(keys.UndecryptableValue):
        sealing.unseal({"a": {sealing.MARKER: token}}, keys.load(path))
    assert sealing.unseal({"a": {sealing.MARKER: token}}, old) == {"a": "s3cret"}  # only the old set opens it
    replaced = weakref.ref(old)
    del old
    assert replaced() is None  # its keys and what they opened go with it, without waiting for a collection


def test_an_attributes_write_while_reencrypt_rewrites_the_cluster_is_kept(own_keys, env, session, db_url, request,
                                                                           monkeypatch):
    """``reencrypt`` after ``rotate`` runs beside the servers: a worker's write to a cluster's attributes between
    the command's read of that row and its rewrite is what the command reseals, not what it overwrites
    (PostgreSQL: each changed row is read again under its lock and committed alone)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL); SQLite's batch holds the write lock")
    cluster = env.create()
    server = request.getfixturevalue("gunicorn")
    url = "{0}clusters/{1}/attributes/".format(server, cluster["id"])
    assert requests.get(url, timeout=30).ok  # the worker started
    keys.rotate(own_keys)
    primary = Fernet(key_files(own_keys)[2])
    resealed = sealed._resealed
    answers, written_under_primary = [], []

    def read_then(row, keyset, classifier_of_row):  # the command has read a batch; it rewrites this row next
        if not answers and isinstance(row[-1], dict) and "access" in row[-1]:
            answers.append(requests.patch(url, timeout=30, json={
                "editable": {"access": {"password": {"value": "Written-Meanwhile-1"}}}}).status_code)
            # the worker may have loaded the new keys already (it looks once a second): then its write sealed
            # the whole column under the new primary, and the command finds nothing left to reseal there
            written_under_primary.append(all(opens(primary, token) for token in raw_tokens(
                session, cluster["id"], (Cluster.editable_attributes,))))
        return resealed(row, keyset, classifier_of_row)
    monkeypatch.setattr(sealed, "_resealed", read_then)
    renewed = sealed.reencrypt_all()
    assert answers == [200]
    assert renewed["clusters.editable_attributes"] >= 1 or written_under_primary == [True]
    editable = stored_attributes(session, cluster["id"])[1]
    assert editable["access"]["password"]["value"] == "Written-Meanwhile-1"
    for token in raw_tokens(session, cluster["id"]):
        primary.decrypt(token.encode())  # every token under the new primary, the written one included
