"""The real Keystone the auth tests run against: its users, roles and token lifetimes are what they claim."""
import time

import pytest
import requests

from tests import keystone as keystone_module
from tests.keystone import ASSIGNMENTS, SHORT_TOKEN_SECONDS, USERS, Keystone


def roles(answer):
    assert answer.status_code == 200, answer.text
    return {role["name"] for role in answer.json()["token"]["roles"]}


@pytest.mark.parametrize("user, project, expected, absent", [
    ("reader", "admin", {"reader"}, {"member", "admin", "service"}),
    ("member", "admin", {"member", "reader"}, {"admin", "service"}),
    ("admin", "admin", {"admin", "member", "reader"}, {"service"}),
    ("puppet", "admin", {"reader", "service"}, {"member", "admin"}),
    ("nailgun", "services", {"service", "admin"}, set()),
    ("hiera", "admin", {"reader", "hiera"}, {"member", "admin", "service"}),
])
def test_token_validates_with_the_users_roles(keystone, user, project, expected, absent):
    """Validated with the nailgun service user's token, as keystonemiddleware does."""
    answer = keystone.validate(keystone.token(user, project))
    assert expected <= roles(answer)
    assert not absent & roles(answer)
    assert answer.json()["token"]["project"]["name"] == project


def test_wrong_password_is_refused(keystone):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "reader", "domain": {"name": "Default"}, "password": keystone.users["member"]}}}}}
    assert requests.post(keystone.auth_url + "/auth/tokens", json=body, timeout=30).status_code == 401


def test_short_lived_token_expires(keystone):
    token = keystone.short_lived_token("reader")
    assert roles(keystone.validate(token)) == {"reader"}
    time.sleep(SHORT_TOKEN_SECONDS + 1)
    assert keystone.validate(token).status_code == 404


def test_revoked_token_is_refused(keystone):
    token, other = keystone.token("member"), keystone.token("member")
    keystone.revoke(token)
    assert keystone.validate(token).status_code == 404
    assert keystone.validate(other).status_code == 200


def test_stopped_keystone_refuses_connections_then_comes_back(keystone):
    token = keystone.token("reader")
    with keystone.stopped():
        with pytest.raises(requests.ConnectionError):
            requests.get(keystone.auth_url, timeout=5)
    assert roles(keystone.validate(token)) == {"reader"}


def test_settings_name_the_service_user_and_disable_the_token_cache(keystone):
    auth = keystone.settings(realm="fuel", keystone={"cafile": "/ca.pem"})
    assert auth["method"] == "keystone" and auth["realm"] == "fuel"
    service = auth["keystone"]
    assert service["cafile"] == "/ca.pem" and service["token_cache_time"] == -1
    assert service["auth_url"] == keystone.auth_url
    assert roles(keystone.validate(keystone.token(service["username"], service["project_name"])))
    assert keystone.users[service["username"]] == service["password"]


def test_every_assignment_holds_even_in_a_saved_state(keystone):
    """Whether this run bootstrapped Keystone or copied a saved state, each user has the roles given to it."""
    for user, project, user_roles in ASSIGNMENTS:
        assert set(user_roles) <= roles(keystone.validate(keystone.token(user, project))), user


def _add_assignment():
    keystone_module.ASSIGNMENTS.append(("reader", "admin", ["hiera"]))


def _add_user():
    keystone_module.USERS.update(newcomer="newcomer-pw")


@pytest.mark.parametrize("change", [_add_assignment, _add_user])
def test_a_new_user_or_assignment_makes_a_new_saved_state(monkeypatch, tmp_path, change):
    """The saved state is keyed by the users and assignments: a cached bootstrap never lacks a new one."""
    monkeypatch.setattr(keystone_module, "ASSIGNMENTS", list(ASSIGNMENTS))
    monkeypatch.setattr(keystone_module, "USERS", dict(USERS))
    fixture = Keystone.__new__(Keystone)
    fixture.venv = str(tmp_path)
    before = fixture._state_key()
    change()
    assert fixture._state_key() != before
