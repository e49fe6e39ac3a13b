"""The secrets' keys in a real Barbican through castellan (``SECRETS.key_manager: castellan``, issue 28): no key on
any disk nor in the database, every server of the database on the same keys, ``nailgun-secrets`` rotating,
re-encrypting and retiring them there, a key manager out of reach making secret reads 503 until it is back, and
keys moved from a key repository into Barbican and back, proved on the database's canary."""
import base64
import concurrent.futures
import contextlib
import json
import os
import re
import subprocess
import sys
import time

import pytest
import requests
import sqlalchemy as sa

from nailgun_host.db import managed_keys, sealed
from tests.barbican import FaultyBarbican
from tests.conftest import LiveServer

BIN = os.path.dirname(sys.executable)
CONFIG = "/api/v1/config"
SECRET = "s3cret-kept-by-barbican"
#: for the tests in which nothing depends on the database: they run on the SQLite pass only (CI runs both at once,
#: the PostgreSQL pass the longer)
on_sqlite_pass = pytest.mark.skipif(bool(os.environ.get("NAILGUN_TEST_DB_URL")),
                                    reason="nothing in it depends on the database: run on the SQLite pass")
#: what the test run sets for every process, and the settings files here say themselves
ONLY_THE_FILE = {"NAILGUN_DB_URL": "", "NAILGUN_KEY_REPOSITORY": ""}


@pytest.fixture
def castellan_config(barbican, tmp_path, db_url, migrated_db):
    """A settings file keeping the keys in the test Barbican (a process reads it through ``NAILGUN_CONFIG``)."""
    def write(name="castellan.yaml", castellan=None, **secrets_section):
        chosen = barbican.settings(**(castellan or {}))
        chosen["SECRETS"].update(secrets_section)
        path = tmp_path / name
        path.write_text(json.dumps(dict(chosen, DATABASE_URL=db_url)))
        return str(path)
    return write


def serve(config):
    """A ``nailgun-api`` reading ``config`` (which names the test database)."""
    return LiveServer(json.load(open(config))["DATABASE_URL"], env=dict(NAILGUN_CONFIG=config, **ONLY_THE_FILE))


@contextlib.contextmanager
def serving(config):
    """``serve`` for a block."""
    server = serve(config)
    try:
        yield server
    finally:
        server.stop()


def nailgun_secrets(config, *args):
    return subprocess.run([os.path.join(BIN, "nailgun-secrets"), "--config", config] + list(args),
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, **ONLY_THE_FILE))


def store_secret(url, value=SECRET):
    """An environment whose document holds ``value`` under a password key; the document's URL."""
    for path, body in ((CONFIG + "/components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]}),
                       (CONFIG + "/environments", {"components": ["fuel"], "hierarchy_levels": ["nodes"]})):
        assert requests.post(url + path, json=body, timeout=30).status_code == 201
    document = url + CONFIG + "/environments/1/resources/astute/values"
    answer = requests.put(document, json={"mysql": {"root_password": value, "port": 3306}}, timeout=30)
    assert answer.status_code == 204, answer.text
    return CONFIG + "/environments/1/resources/astute/values"


def read_secret(url, document):
    answer = requests.get(url + document, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["mysql"]["root_password"]


def key_objects(engine):
    with engine.connect() as connection:
        return dict(connection.execute(sa.select(managed_keys.TABLE.c.number, managed_keys.TABLE.c.object_id)).all())


def files_under(*directories):
    for directory in directories:
        for root, _dirs, names in os.walk(directory):
            for name in names:
                with open(os.path.join(root, name), "rb") as stream:
                    yield os.path.join(root, name), stream.read()


def test_two_servers_without_a_key_repository_share_the_keys_barbican_holds(castellan_config, barbican, db_url,
                                                                             migrated_db, tmp_path):
    config = castellan_config()
    first, second = serve(config), serve(config)
    try:
        document = store_secret(first.url)
        assert read_secret(second.url, document) == SECRET
    finally:
        first.stop()
        second.stop()
    named = key_objects(migrated_db[0])
    assert sorted(named) == [0, 1]
    held = barbican.secrets()
    assert set(named.values()) <= set(held)
    key_texts = [base64.urlsafe_b64encode(held[object_id]) for object_id in named.values()]
    assert all(len(held[object_id]) == 32 for object_id in named.values())
    # nothing on this test's disk nor in the database holds a key (raw or as text) or the secret in clear
    places = [str(tmp_path)]
    database = sa.make_url(db_url).database if db_url.startswith("sqlite") else None
    if database:
        places.append(os.path.dirname(database))
    for name, content in files_under(*places):
        for key in key_texts:
            assert key not in content and base64.urlsafe_b64decode(key) not in content, name
        if database and name.startswith(database):
            assert SECRET.encode() not in content, name
    assert not [name for name in os.listdir(tmp_path) if "fernet" in name]


def test_rotate_reencrypt_retire_in_barbican_keep_every_secret_readable(castellan_config, barbican, migrated_db):
    config = castellan_config()
    with serving(config) as server:
        document = store_secret(server.url)
        status = nailgun_secrets(config, "status")
        assert status.returncode == 0, status.stderr
        assert "key manager: castellan (barbican at {0})".format(barbican.url) in status.stdout
        assert "key 0: staged" in status.stdout and "key 1: primary" in status.stdout
        first = key_objects(migrated_db[0])

        rotated = nailgun_secrets(config, "rotate")
        assert rotated.returncode == 0 and "key 2 is the primary" in rotated.stdout, rotated.stderr
        after = key_objects(migrated_db[0])
        assert after[2] == first[0] and after[1] == first[1] and after[0] not in first.values()
        assert nailgun_secrets(config, "retire").returncode == 1  # values still under key 1
        reencrypted = nailgun_secrets(config, "reencrypt")
        assert reencrypted.returncode == 0, reencrypted.stderr
        assert "0 stored value(s) not yet under the primary key" in nailgun_secrets(config, "status").stdout
        retired = nailgun_secrets(config, "retire")
        assert retired.returncode == 0 and "retired key(s): 1" in retired.stdout, retired.stderr
        assert sorted(key_objects(migrated_db[0])) == [0, 2]
        assert first[1] not in barbican.secrets()  # the retired key's object is deleted
        time.sleep(1.1)  # the server looks at the database's key objects once a second
        assert read_secret(server.url, document) == SECRET
        assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 200


@on_sqlite_pass
def test_barbican_out_of_reach_makes_secret_reads_503_and_heals_without_a_restart(castellan_config, barbican):
    with serving(castellan_config(castellan={"keys_seconds": 1})) as server:
        document = store_secret(server.url)
        assert read_secret(server.url, document) == SECRET
        assert read_secret(server.url, document) == SECRET  # replayed by the read cache
        with barbican.stopped():
            time.sleep(1.2)  # the keys fetched are kept a second
            refused = requests.get(server.url + document, timeout=30)
            assert refused.status_code == 503 and refused.headers["Retry-After"], refused.text
            assert "key manager" in refused.json()["message"] and SECRET not in refused.text
            written = requests.put(server.url + document, json={"mysql": {"root_password": "other"}}, timeout=30)
            assert written.status_code == 503
            health = requests.get(server.url + "/api/v1/health", timeout=30)
            assert health.status_code == 503 and "key manager" in health.json()["message"]
            assert requests.get(server.url + CONFIG + "/components", timeout=30).status_code == 200
            assert requests.get(server.url + CONFIG + "/environments/1", timeout=30).status_code == 200
        deadline = time.monotonic() + 10
        while requests.get(server.url + document, timeout=30).status_code != 200:
            assert time.monotonic() < deadline, "no healing within 10 s of Barbican's return"
            time.sleep(0.2)
        assert read_secret(server.url, document) == SECRET
        assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 200


def test_keys_move_into_barbican_and_back_proved_on_the_canary(castellan_config, barbican, migrated_db, tmp_path):
    engine = migrated_db[0]
    local = str(tmp_path / "fernet-keys")
    local_config = castellan_config("local.yaml", key_manager="local", key_repository=local)
    managed_config = castellan_config("managed.yaml", key_repository=local)  # the source, until it is removed
    with serving(local_config) as server:
        document = store_secret(server.url)
    original = sorted(os.listdir(local))

    early = nailgun_secrets(local_config, "move-keys", "--to", "castellan", "--remove-source")
    assert early.returncode == 1 and "set SECRETS.key_manager to castellan" in early.stderr
    moved = nailgun_secrets(local_config, "move-keys", "--to", "castellan")
    assert moved.returncode == 0, moved.stderr
    assert "moved key(s) 0, 1 to castellan" in moved.stdout
    objects = key_objects(engine)
    assert sorted(objects) == [0, 1] and os.listdir(local) == original
    with serving(managed_config) as server:
        assert read_secret(server.url, document) == SECRET
    removed = nailgun_secrets(managed_config, "move-keys", "--to", "castellan", "--remove-source")
    assert removed.returncode == 0 and not os.path.exists(local), removed.stderr
    assert "already moved key(s) 0, 1" in removed.stdout and key_objects(engine) == objects

    back = str(tmp_path / "back")
    back_config = castellan_config("back.yaml", key_manager="local", key_repository=back)
    returned = nailgun_secrets(castellan_config("managed-back.yaml", key_repository=back), "move-keys", "--to",
                               "local")
    assert returned.returncode == 0, returned.stderr
    assert sorted(os.listdir(back)) == ["0", "1"]
    with serving(back_config) as server:
        assert read_secret(server.url, document) == SECRET
    final = nailgun_secrets(back_config, "move-keys", "--to", "local", "--remove-source")
    assert final.returncode == 0, final.stderr
    assert key_objects(engine) == {} and not set(objects.values()) & set(barbican.secrets())


@on_sqlite_pass
def test_keys_that_do_not_open_the_canary_are_not_moved(castellan_config, barbican, migrated_db, tmp_path):
    engine = migrated_db[0]
    own = str(tmp_path / "own")
    with serving(castellan_config("own.yaml", key_manager="local", key_repository=own)) as server:
        store_secret(server.url)
    wrong = str(tmp_path / "wrong")
    from nailgun_platform.secrets import keys
    keys.load(wrong)  # a repository of other keys
    refused = nailgun_secrets(castellan_config("wrong.yaml", key_manager="local", key_repository=wrong),
                              "move-keys", "--to", "castellan")
    assert refused.returncode == 1 and "do not open this database's canary: nothing was moved" in refused.stderr
    assert key_objects(engine) == {}
    assert sealed.canary_opens(engine, keys.load(own, create=False))


@on_sqlite_pass
@pytest.mark.parametrize("secrets_section, message", [
    ({"key_manager": "vault"}, "SECRETS.key_manager must be local or castellan, not 'vault'"),
    ({"castellan": {"keys_seconds": 0}}, "SECRETS.castellan.keys_seconds must be a whole number of at least 1"),
    ({"castellan": {"timeout": True}}, "SECRETS.castellan.timeout must be a whole number of at least 1"),
    ({"castellan": {"auth": "nailgun"}}, "SECRETS.castellan.auth must be a mapping"),
    ({"castellan": {"auth": {"user_name": "nailgun"}}}, "unknown settings SECRETS.castellan.auth.user_name"),
    ({"castellan": {"endpoint": "x"}}, "unknown settings SECRETS.castellan.endpoint"),
])
def test_a_key_manager_setting_that_cannot_be_meant_is_refused(secrets_section, message):
    from nailgun_host.settings import Settings

    with pytest.raises(ValueError, match=re.escape(message)):
        Settings().reload(overrides={"SECRETS": secrets_section})


@on_sqlite_pass
def test_the_key_manager_needs_no_key_repository_on_postgresql_but_a_keystone_user(tmp_path):
    from nailgun_host.settings import Settings
    from nailgun_platform import hosting, secrets
    from nailgun_platform.secrets import keys

    chosen = Settings().reload(overrides={"DATABASE_URL": "postgresql+psycopg://nailgun@127.0.0.1/nailgun",
                                          "SECRETS": {"key_manager": "castellan"}})
    saved = hosting.settings
    hosting.provide(settings=chosen)
    try:
        with pytest.raises(keys.KeyRepositoryError, match="lacks auth_url, username, password, project_name"):
            secrets.manager()
    finally:
        hosting.provide(settings=saved)


@on_sqlite_pass
def test_a_first_start_with_barbican_out_of_reach_serves_and_makes_the_keys_once_it_is_back(castellan_config,
                                                                                              barbican, migrated_db):
    barbican.stop()
    try:
        server = serve(castellan_config())
    finally:
        barbican.start()
    try:
        assert key_objects(migrated_db[0]) == {}
        with barbican.stopped():
            assert requests.get(server.url + CONFIG + "/components", timeout=30).status_code == 200
            health = requests.get(server.url + "/api/v1/health", timeout=30)
            assert health.status_code == 503 and health.headers["Retry-After"]
        deadline = time.monotonic() + 10
        while requests.get(server.url + "/api/v1/health", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, "the keys were not made within 10 s of Barbican's return"
            time.sleep(0.2)
        assert sorted(key_objects(migrated_db[0])) == [0, 1]
        assert read_secret(server.url, store_secret(server.url)) == SECRET
    finally:
        server.stop()


def test_servers_starting_at_once_on_an_empty_database_make_one_key_set(castellan_config, barbican, migrated_db):
    before = set(barbican.secrets())
    config = castellan_config()
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        servers = list(pool.map(lambda _: serve(config), range(3)))
    try:
        documents = [store_secret(servers[0].url)]
        assert all(read_secret(server.url, documents[0]) == SECRET for server in servers)
    finally:
        for server in servers:
            server.stop()
    named = key_objects(migrated_db[0])
    assert sorted(named) == [0, 1]
    assert set(barbican.secrets()) - before == set(named.values())  # the losers' objects were deleted


@on_sqlite_pass
def test_a_key_object_deleted_behind_the_servers_back_is_a_503_never_garbage(castellan_config, barbican,
                                                                             migrated_db, keystone):
    with serving(castellan_config(castellan={"keys_seconds": 1})) as server:
        document = store_secret(server.url)
        primary = key_objects(migrated_db[0])[1]
        deleted = requests.delete(barbican.url + "/v1/secrets/" + primary, timeout=30,
                                  headers={"X-Auth-Token": keystone.token("nailgun", "services")})
        assert deleted.status_code == 204
        time.sleep(1.2)
        refused = requests.get(server.url + document, timeout=30)
        assert refused.status_code == 503 and SECRET not in refused.text
        assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 503
        assert requests.get(server.url + CONFIG + "/components", timeout=30).status_code == 200


@on_sqlite_pass
def test_keys_in_use_are_fetched_again_ahead_of_their_time(castellan_config, barbican):
    """A read in the last fifth of the keys' time has them fetched again in the background: Barbican going away
    just after is felt only when the renewed keys' time is up."""
    with serving(castellan_config(castellan={"keys_seconds": 3})) as server:
        document = store_secret(server.url)  # the keys were fetched during it
        fetched_by = time.monotonic()
        assert read_secret(server.url, document) == SECRET

        def at(moment):
            time.sleep(max(0.0, fetched_by + moment - time.monotonic()))
            return requests.get(server.url + document, timeout=30)

        assert at(2.5).status_code == 200  # in the last fifth: fetched again, in the background
        time.sleep(0.5)
        with barbican.stopped():
            renewed = at(3.6)
            assert renewed.status_code == 200 and renewed.json()["mysql"]["root_password"] == SECRET
            assert at(6.5).status_code == 503


@pytest.fixture
def faulty_barbican(barbican):
    proxy = FaultyBarbican(barbican)
    yield proxy
    proxy.close()


@on_sqlite_pass
def test_a_key_fetch_reset_hung_or_answered_with_garbage_is_a_503_within_the_timeout(castellan_config,
                                                                                    faulty_barbican):
    options = dict(barbican_endpoint=faulty_barbican.url, keys_seconds=1, timeout=2)
    with serving(castellan_config(castellan=options)) as server:
        document = store_secret(server.url)
        for mode in ("reset", "hang", "garbage", "trickle"):
            faulty_barbican.mode = mode
            time.sleep(1.2)  # the keys' time is up: the next read fetches them
            started = time.monotonic()
            refused = requests.get(server.url + document, timeout=30)
            assert refused.status_code == 503 and refused.headers["Retry-After"], (mode, refused.text)
            assert time.monotonic() - started < 4, mode  # the timeout, 2 s, for the whole fetch, and a margin
            assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 503, mode
            faulty_barbican.mode = "pass"
            time.sleep(1.1)  # past the failure's second: fetched again
            assert read_secret(server.url, document) == SECRET, mode


@on_sqlite_pass
def test_a_first_start_on_a_key_manager_that_resets_serves_what_needs_no_key(castellan_config, faulty_barbican):
    faulty_barbican.mode = "reset"
    with serving(castellan_config(castellan={"barbican_endpoint": faulty_barbican.url, "timeout": 2})) as server:
        started = time.monotonic()
        assert requests.get(server.url + CONFIG + "/components", timeout=30).status_code == 200
        assert time.monotonic() - started < 1  # the keys are checked in the background
        assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 503
        faulty_barbican.mode = "pass"
        deadline = time.monotonic() + 10
        while requests.get(server.url + "/api/v1/health", timeout=30).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)


@on_sqlite_pass
def test_the_debug_log_holds_no_key(castellan_config, barbican, tmp_path):
    log = tmp_path / "api.log"
    config = castellan_config()
    chosen = json.load(open(config))
    chosen["LOG"] = {"file": str(log), "level": "DEBUG"}
    open(config, "w").write(json.dumps(chosen))
    before = set(barbican.secrets())
    with serving(config) as server:
        read_secret(server.url, store_secret(server.url))
    made = {object_id: payload for object_id, payload in barbican.secrets().items() if object_id not in before}
    assert len(made) == 2
    text = log.read_bytes()
    assert b"DEBUG" in text
    for payload in made.values():
        for form in (payload, base64.b64encode(payload), base64.urlsafe_b64encode(payload)):
            assert form not in text


@on_sqlite_pass
def test_an_old_keys_object_gone_leaves_the_others_in_use_the_primarys_is_an_error(castellan_config, barbican,
                                                                                   keystone):
    from nailgun_platform.secrets import key_manager, keys
    from cryptography.fernet import Fernet

    options = dict(barbican.settings()["SECRETS"]["castellan"], backend="barbican", interface="public", auth=None)
    manager = key_manager.KeyManager(options, barbican.settings()["AUTH"]["keystone"])
    made = {number: Fernet.generate_key() for number in range(3)}
    refs = {number: manager.store(key) for number, key in made.items()}
    manager.delete(refs[1])
    assert manager.fetch_all(refs) == {0: made[0], 2: made[2]}
    with pytest.raises(keys.KeyMissing):
        manager.fetch_all(refs, complete=True)
    manager.delete(refs[2])
    with pytest.raises(keys.KeyMissing, match=refs[2]):
        manager.fetch_all(refs)
    manager.delete(refs[0])


def moved_into_barbican(castellan_config, tmp_path):
    """A secret stored with the keys in a repository, then the keys copied into Barbican (the move's first step):
    the repository, the settings files using it and using Barbican (still naming it), the secret's URL."""
    local = str(tmp_path / "fernet-keys")
    local_config = castellan_config("local.yaml", key_manager="local", key_repository=local)
    managed_config = castellan_config("managed.yaml", key_repository=local)
    with serving(local_config) as server:
        document = store_secret(server.url)
    assert nailgun_secrets(local_config, "move-keys", "--to", "castellan").returncode == 0
    return local, local_config, managed_config, document


@on_sqlite_pass
def test_a_move_run_again_does_what_is_left_after_rotations_and_across_a_key_gone(castellan_config, barbican,
                                                                                  migrated_db, tmp_path, keystone):
    engine = migrated_db[0]
    local, local_config, managed_config, document = moved_into_barbican(castellan_config, tmp_path)
    for _ in range(2):  # rotations in Barbican before the source is removed
        assert nailgun_secrets(managed_config, "rotate").returncode == 0
    with serving(managed_config) as server:
        answer = requests.put(server.url + document, json={"mysql": {"root_password": "newer"}}, timeout=30)
        assert answer.status_code == 204
    removed = nailgun_secrets(managed_config, "move-keys", "--to", "castellan", "--remove-source")
    assert removed.returncode == 0 and "already moved key(s) 0, 1" in removed.stdout, removed.stderr
    assert sorted(key_objects(engine)) == [0, 1, 2, 3] and not os.path.exists(local)
    again = nailgun_secrets(managed_config, "move-keys", "--to", "castellan", "--remove-source")
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stderr
    with serving(managed_config) as server:
        assert read_secret(server.url, document) == "newer"

    # a key object gone behind the database's back: only --replace puts the repository's keys in place
    back = str(tmp_path / "back")
    assert nailgun_secrets(castellan_config("to-local.yaml", key_repository=back), "move-keys", "--to",
                           "local").returncode == 0
    gone = key_objects(engine)[2]
    assert requests.delete(barbican.url + "/v1/secrets/" + gone, timeout=30,
                           headers={"X-Auth-Token": keystone.token("nailgun", "services")}).status_code == 204
    from_back = castellan_config("from-back.yaml", key_manager="local", key_repository=back)
    refused = nailgun_secrets(from_back, "move-keys", "--to", "castellan")
    assert refused.returncode == 1 and "broken keys" in refused.stderr and gone in refused.stderr
    replaced = nailgun_secrets(from_back, "move-keys", "--to", "castellan", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert gone not in key_objects(engine).values()
    with serving(castellan_config("after.yaml")) as server:
        assert read_secret(server.url, document) == "newer"


@on_sqlite_pass
def test_after_a_retirement_in_barbican_removing_the_source_is_the_move_done(castellan_config, barbican,
                                                                            migrated_db, tmp_path):
    """The source's old primary, retired in Barbican since the move, is not a reason to refuse: every value is
    under Barbican's primary (``reencrypt``), which opens the canary."""
    local, local_config, managed_config, document = moved_into_barbican(castellan_config, tmp_path)
    for command in ("rotate", "reencrypt", "retire"):
        done = nailgun_secrets(managed_config, command)
        assert done.returncode == 0, (command, done.stderr)
    removed = nailgun_secrets(managed_config, "move-keys", "--to", "castellan", "--remove-source")
    assert removed.returncode == 0 and "already moved" in removed.stdout, removed.stderr
    assert not os.path.exists(local) and sorted(key_objects(migrated_db[0])) == [0, 2]
    with serving(managed_config) as server:
        assert read_secret(server.url, document) == SECRET


@on_sqlite_pass
def test_the_staged_keys_object_gone_leaves_secrets_readable_and_rotate_stages_a_new_one(castellan_config, barbican,
                                                                                         migrated_db, keystone):
    config = castellan_config(castellan={"keys_seconds": 1})
    with serving(config) as server:
        document = store_secret(server.url)
        staged = key_objects(migrated_db[0])[0]
        assert requests.delete(barbican.url + "/v1/secrets/" + staged, timeout=30,
                               headers={"X-Auth-Token": keystone.token("nailgun", "services")}).status_code == 204
        time.sleep(1.2)
        assert read_secret(server.url, document) == SECRET
        assert requests.get(server.url + "/api/v1/health", timeout=30).status_code == 200
        restaged = nailgun_secrets(config, "rotate")
        assert restaged.returncode == 1 and "a new key is staged in its place" in restaged.stderr
        assert sorted(key_objects(migrated_db[0])) == [0, 1] and key_objects(migrated_db[0])[0] != staged
        rotated = nailgun_secrets(config, "rotate")
        assert rotated.returncode == 0 and "key 2 is the primary" in rotated.stdout, rotated.stderr
        assert nailgun_secrets(config, "reencrypt").returncode == 0
        time.sleep(1.2)
        assert read_secret(server.url, document) == SECRET
