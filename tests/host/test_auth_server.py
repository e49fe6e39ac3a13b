"""The auth test harness against the real server: ``auth_server`` in keystone and local mode, over HTTPS too.

A few requests per mode prove the harness gives what the route-family tests rely on: the same
users and roles in both modes, tokens that expire or are revoked, Keystone down, TLS.
"""
import time

import pytest
import requests

from tests.auth import auth_server, basic, local_settings
from tests.keystone import SHORT_TOKEN_SECONDS

CLUSTERS = "/api/v1/clusters/"


@pytest.fixture(scope="module")
def keystone_server(migrated_db, db_url, keystone):
    server = auth_server(db_url, keystone.settings())
    yield server
    server.stop()


def token(keystone, user):
    return {"X-Auth-Token": keystone.token(user)}


def test_keystone_mode_tokens_and_basic_carry_the_keystone_roles(keystone_server, keystone):
    url = keystone_server.url + CLUSTERS
    refused = requests.get(url, timeout=30)
    assert refused.status_code == 401
    assert 'Keystone uri="{0}"'.format(keystone.auth_url) in refused.headers["WWW-Authenticate"]
    for credentials in (token(keystone, "reader"), basic("reader"), token(keystone, "puppet")):
        assert requests.get(url, headers=credentials, timeout=30).status_code == 200
        assert requests.post(url, json={}, headers=credentials, timeout=30).status_code == 403
    assert requests.get(url, headers=basic("reader", "member-pw"), timeout=30).status_code == 401
    assert requests.post(url, json={}, headers=token(keystone, "member"), timeout=30).status_code not in (401, 403)


def test_keystone_mode_refuses_expired_and_revoked_tokens(keystone_server, keystone):
    url = keystone_server.url + CLUSTERS
    short, revoked = keystone.short_lived_token("reader"), keystone.token("reader")
    for value in (short, revoked):
        assert requests.get(url, headers={"X-Auth-Token": value}, timeout=30).status_code == 200
    keystone.revoke(revoked)
    assert requests.get(url, headers={"X-Auth-Token": revoked}, timeout=30).status_code == 401
    time.sleep(SHORT_TOKEN_SECONDS + 1)
    assert requests.get(url, headers={"X-Auth-Token": short}, timeout=30).status_code == 401


def test_keystone_down_is_503(keystone_server, keystone):
    url = keystone_server.url + CLUSTERS
    reader = token(keystone, "reader")
    with keystone.stopped():
        for credentials in (reader, basic("member")):
            answer = requests.get(url, headers=credentials, timeout=60)
            assert answer.status_code == 503, answer.text
            assert answer.json()["message"]
    assert requests.get(url, headers=reader, timeout=30).status_code == 200


def test_local_mode_over_https_with_the_same_users(migrated_db, db_url, tls):
    server = auth_server(db_url, local_settings(), tls=tls)
    try:
        url = server.url + CLUSTERS
        assert url.startswith("https://127.0.0.1:")
        assert requests.get(url, verify=tls.ca_file, timeout=30).status_code == 401
        assert requests.get(url, headers=basic("reader"), verify=tls.ca_file, timeout=30).status_code == 200
        assert requests.post(url, json={}, headers=basic("puppet"), verify=tls.ca_file, timeout=30).status_code == 403
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(url, headers=basic("reader"), verify=tls.wrong_ca_file, timeout=30)
    finally:
        server.stop()
