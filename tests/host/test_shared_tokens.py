"""Local mode's tokens on several hosts of one database: signed with keys in the database, revoked there.

Two applications built here are two hosts: each its own copy of the users file and its own process copy of
the keys. The end-to-end check with real servers and fuel2 is tests/host/test_shared_tokens_live.py.
"""
import copy
import io
import json
import shutil
import threading

import pytest
import webtest
from cryptography.fernet import Fernet

from nailgun_host import settings
from nailgun_host.app import build_wsgi
from nailgun_host.auth import middleware, token_keys
from nailgun_host.cmd import users
from nailgun_platform import secrets
from tests.host.test_auth import Clock, auth_settings, basic, login, write_users_file  # noqa: F401 (fixture)


@pytest.fixture
def clock(monkeypatch):
    """``time`` for ``token_keys``: its monotonic clock moves only when a test says so."""
    fake = Clock()
    monkeypatch.setattr(token_keys, "time", fake)
    return fake


@pytest.fixture
def hosts(migrated_db, tmp_path, auth_settings):
    """Two hosts of the test database, each with its own copy of one users file: (app, users file) twice."""
    first = write_users_file(tmp_path / "a.yaml")
    second = tmp_path / "b.yaml"
    shutil.copy(first, second)
    return [(host(auth_settings, users_file), users_file) for users_file in (first, second)]


def host(auth_settings, users_file):
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file)}})
    return webtest.TestApp(build_wsgi())


def token_of(app, user, password=None):
    return login(app, user, password).json["access"]["token"]["id"]


def clusters(app, token, status):
    return app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=status)


def users_command(db_url, users_file, *args, stdin=""):
    import sys

    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        return users.users(["--db-url", db_url, "--users-file", str(users_file), *args])
    finally:
        sys.stdin = saved


def test_a_token_of_one_host_works_on_the_other(hosts):
    (first, _), (second, _) = hosts
    token = token_of(first, "member")
    clusters(second, token, 200)
    again = second.post_json("/keystone/v2.0/tokens", {"auth": {"token": {"id": token}}}).json["access"]["token"]
    clusters(first, again["id"], 200)


def test_deleting_a_user_revokes_its_tokens_on_a_host_whose_users_file_is_stale(hosts, db_url, clock):
    (first, first_file), (second, _) = hosts
    token = token_of(first, "member")
    clusters(second, token, 200)
    assert users_command(db_url, first_file, "delete", "member") == 0
    clusters(first, token, 401)
    clusters(second, token, 200)  # within the bound: the second host's copy is not older than REFRESH
    clock.now += token_keys.REFRESH
    clusters(second, token, 401)
    # the stale host still knows the password, but the tokens it gives now are refused too, by both
    fresh = token_of(second, "member")
    clusters(second, fresh, 401)
    clusters(first, fresh, 401)
    assert second.get("/api/v1/clusters/", headers=basic("member"), status=200)  # Basic follows the file


def test_a_new_password_revokes_the_old_tokens_everywhere_and_a_user_added_again_logs_in(hosts, db_url, clock):
    (first, first_file), (second, _) = hosts
    old = token_of(second, "reader")
    assert users_command(db_url, first_file, "set", "reader", "--role", "reader", stdin="new-pw\n") == 0
    clock.now += token_keys.REFRESH
    clusters(second, old, 401)
    clusters(first, token_of(first, "reader", "new-pw"), 200)
    assert users_command(db_url, first_file, "delete", "reader") == 0
    assert users_command(db_url, first_file, "set", "reader", "--role", "reader", stdin="new-pw\n") == 0
    clusters(first, token_of(first, "reader", "new-pw"), 200)  # a new hash: not the revoked one


def test_roles_changed_without_a_password_revoke_nothing(hosts, db_url):
    (first, first_file), _ = hosts
    token = token_of(first, "member")
    assert users_command(db_url, first_file, "set", "member", "--role", "reader", "--keep-password") == 0
    clusters(first, token, 200)


def test_a_rotated_key_keeps_its_tokens_until_revoke(hosts, db_url, clock, capsys, auth_settings):
    (first, first_file), (second, second_file) = hosts
    before = token_of(first, "member")
    clusters(second, before, 200)  # both hosts hold key 1 now
    assert users_command(db_url, first_file, "rotate-token-key") == 0
    assert "token key 2 signs new tokens" in capsys.readouterr().out
    clock.now += token_keys.FORCED_REFRESH  # both copies are younger than REFRESH still
    third = host(auth_settings, second_file)
    after = token_of(third, "member")  # signed with key 2, which the others do not hold yet
    for app in (first, second):
        clusters(app, after, 200)  # a key it did not know: it reloaded at once
        clusters(app, before, 200)
    clock.now += token_keys.REFRESH
    assert users_command(db_url, first_file, "rotate-token-key", "--revoke") == 0
    assert "keys that still open tokens: 3\n" in capsys.readouterr().out
    clock.now += token_keys.REFRESH
    for app in (first, second, third):
        clusters(app, before, 401)
        clusters(app, after, 401)
        clusters(app, token_of(app, "member"), 200)


def test_keys_whose_tokens_expired_are_dropped_at_the_next_rotation(hosts, db_url, capsys, auth_settings):
    (first, first_file), _ = hosts
    token_of(first, "member")  # makes key 1
    assert users_command(db_url, first_file, "rotate-token-key") == 0
    config = first_file.parent / "ttl.yaml"
    config.write_text("AUTH: {token_ttl: 0}\n")
    assert users.users(["--config", str(config), "--db-url", db_url, "--users-file", str(first_file),
                        "rotate-token-key"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("keys that still open tokens: 3, 2")


def test_a_token_check_asks_the_database_nothing_until_its_copy_is_older_than_refresh(
        migrated_db, tmp_path, query_counter, clock):
    def nothing(environ, start_response):
        start_response("200 OK", [])
        return [b""]

    checked = middleware.build(nothing, dict(
        copy.deepcopy(settings.DEFAULTS["AUTH"]), method="local",
        users_file=str(write_users_file(tmp_path / "users.yaml"))))
    app = webtest.TestApp(checked)
    token = token_of(app, "member")
    with query_counter.counting() as steady:
        for _ in range(20):
            app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=200)
        for _ in range(20):  # made-up tokens reload the keys at most every FORCED_REFRESH
            app.get("/api/v1/clusters/", headers={"X-Auth-Token": token[:-4] + "AAA="}, status=401)
    assert steady.count == 0, steady.statements
    clock.now += token_keys.REFRESH
    with query_counter.counting() as reloaded:
        for _ in range(5):
            app.get("/api/v1/clusters/", headers={"X-Auth-Token": token}, status=200)
    selects = [statement for statement in reloaded.statements if statement != "BEGIN"]  # SQLite's own
    assert len(selects) == 2, reloaded.statements  # the keys and the revocations, once


def test_hosts_starting_at_once_make_one_first_key(migrated_db):
    copies = [token_keys.TokenKeys() for _ in range(8)]
    start, tokens = threading.Barrier(len(copies)), {}

    def first_token(index):
        start.wait()
        tokens[index] = copies[index].sign(b'{"user": "u", "password": "p"}')

    threads = [threading.Thread(target=first_token, args=(index,)) for index in range(len(copies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for copy in copies:
        for token in tokens.values():
            assert copy.open(token) == b'{"user": "u", "password": "p"}'
    with migrated_db[0].connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM auth_token_keys").scalar() == 1


def test_the_database_holds_the_token_keys_sealed(hosts, migrated_db):
    """A dump of the database forges no token: the stored key is a Fernet token of the secrets' keys, and what it
    seals is the key that signed the token."""
    first, _ = hosts[0]
    token = token_of(first, "member")
    with migrated_db[0].connect() as connection:
        (raw,) = connection.exec_driver_sql("SELECT key FROM auth_token_keys").scalars().all()
    stored = json.loads(raw) if isinstance(raw, str) else raw
    assert set(stored) == {token_keys.FERNET_KEY} and set(stored[token_keys.FERNET_KEY]) == {"$fernet"}
    key = json.loads(secrets.keyset().decrypt(stored[token_keys.FERNET_KEY]["$fernet"].encode()))
    assert json.loads(Fernet(key).decrypt(token.encode()))["user"] == "member"


def test_users_files_of_earlier_versions_still_load_and_lose_their_token_secret(hosts, db_url):
    (first, first_file), _ = hosts
    assert "token_secret" in first_file.read_text()
    clusters(first, token_of(first, "member"), 200)
    assert users_command(db_url, first_file, "set", "ops", "--role", "reader", stdin="ops-pw\n") == 0
    assert "token_secret" not in first_file.read_text()


def test_deleting_needs_the_database_and_leaves_the_file_when_it_cannot_revoke(tmp_path, capsys):
    users_file = write_users_file(tmp_path / "users.yaml")
    before = users_file.read_text()
    with pytest.raises(SystemExit):
        users.users(["--db-url", "sqlite:///" + str(tmp_path / "none.db"), "--users-file", str(users_file),
                     "delete", "member"])
    assert "no database at" in capsys.readouterr().err
    assert users_file.read_text() == before
