"""Password guessing cannot starve logged-in users: check slots, slow-down and lockout.

``nailgun_host.auth.check_slots`` and ``.lockout``, in process with real bcrypt checks, a real Keystone
and one that never answers. The latencies under 40 guessing clients are measured by
benchmarks/login_starvation.py, never here.
"""
import base64
import re
import threading
import time

import bcrypt
import pytest
import webtest
import yaml
from hypothesis import given
from hypothesis import settings as settings_profile
from hypothesis import strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.auth import AuthenticationFailed, ENVIRON_KEY, lockout
from nailgun_host.auth import middleware as auth_middleware
from tests.host.test_auth import (auth_settings, basic, login, silent_keystone,  # noqa: F401 (fixtures)
                                  write_users_file)

CLUSTERS = "/api/v1/clusters/"
ADDRESS = {"REMOTE_ADDR": "192.0.2.1"}


@pytest.fixture
def limited_app(migrated_db, tmp_path, auth_settings):
    """The application in local mode with the given AUTH settings, clients at 192.0.2.1 by default."""
    users_file = write_users_file(tmp_path / "users.yaml")

    def build(**limits):
        auth_settings.reload(overrides={"AUTH": dict({"method": "local", "users_file": str(users_file)}, **limits)})
        return webtest.TestApp(build_wsgi(), extra_environ=ADDRESS)
    return build


def as_from(address):
    return {"extra_environ": {"REMOTE_ADDR": address}}


def assert_try_later(answer, status):
    assert answer.status_int == status, answer
    assert answer.content_type == "application/json" and answer.json["errors"] == []
    assert int(answer.headers["Retry-After"]) >= 1
    return answer.json["message"]


def test_a_name_that_keeps_failing_is_locked_for_a_while_even_for_its_right_password(limited_app):
    app = limited_app(lockout_failure_attempts=3, lockout_duration=1)
    token = {"X-Auth-Token": login(app, "member").json["access"]["token"]["id"]}
    app.get(CLUSTERS, headers=basic("member"))  # found right: remembered
    for _ in range(3):
        app.get(CLUSTERS, headers=basic("member", "guess"), status=401)
    message = assert_try_later(app.get(CLUSTERS, headers=basic("member"), expect_errors=True), 429)
    assert "locked" in message and "user name" in message
    assert_try_later(login(app, "member"), 429)
    app.get(CLUSTERS, headers=basic("member", "guess"), status=429)  # refused unchecked, not counted
    app.get(CLUSTERS, headers=token, status=200)  # a token issued before still works
    app.get(CLUSTERS, headers=basic("reader"), status=200)  # other names are not touched
    time.sleep(1.2)  # the lock's duration: refused attempts did not extend it
    app.get(CLUSTERS, headers=basic("member"), status=200)
    for _ in range(2):  # the right password forgot the failures
        app.get(CLUSTERS, headers=basic("member", "guess"), status=401)
    app.get(CLUSTERS, headers=basic("member"), status=200)


def basic_of(user, password):
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


def test_an_address_that_keeps_failing_is_locked_whatever_names_it_tries(limited_app):
    app = limited_app(lockout_address_failure_attempts=4)
    for number in range(4):  # a new name each time: no name's count reaches its lock
        app.get(CLUSTERS, headers=basic_of("random-{0}".format(number), "pw"), status=401)
    assert "address" in assert_try_later(app.get(CLUSTERS, headers=basic("admin"), expect_errors=True), 429)
    app.get(CLUSTERS, headers=basic("admin"), status=200, **as_from("192.0.2.2"))


def test_settings_without_lockout_never_lock(limited_app):
    app = limited_app(lockout_failure_attempts=0, lockout_address_failure_attempts=0)
    for _ in range(8):
        app.get(CLUSTERS, headers=basic("member", "guess"), status=401)
    app.get(CLUSTERS, headers=basic("member"), status=200)


# -- the failure counts as pure logic, on a clock the test moves -------------------------------

class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def check(failures, name, address, right):
    """One password check through ``failures``: "refused", "right" or "wrong"."""
    try:
        with failures.attempt(name, address):
            if not right:
                raise AuthenticationFailed("wrong")
    except lockout.LockedOut:
        return "refused"
    except AuthenticationFailed:
        return "wrong"
    return "right"


ATTEMPTS = st.lists(st.tuples(st.sampled_from(["ann", "bob", "cyd"]), st.sampled_from(["10.0.0.1", "10.0.0.2"]),
                              st.booleans(), st.integers(0, 7)), max_size=120)


@settings_profile(max_examples=200, deadline=None)
@given(attempts=st.integers(1, 4), address_attempts=st.integers(0, 6), duration=st.integers(1, 10),
       sequence=ATTEMPTS)
def test_no_name_or_address_gets_more_checked_guesses_than_its_count_per_lock_duration(
        attempts, address_attempts, duration, sequence):
    """Whatever the order of guesses, right passwords and pauses: within any ``duration`` seconds a name
    (an address) has at most ``attempts`` (``address_attempts``) wrong passwords checked since its last
    right one, and a lock ends ``duration`` after the failure that set it, however often it is tried."""
    clock = Clock()
    failures = lockout.FailedLogins(attempts, duration, address_attempts, clock)
    checked = {}  # (kind, value) -> times of checked wrong passwords
    for name, address, right, pause in sequence:
        clock.now += pause
        try:
            failures.refuse_if_locked(name, address)
            outcome = check(failures, name, address, right)
        except lockout.LockedOut as exc:
            kind, value = ("user name", name) if "user name" in str(exc) else ("address", address)
            assert clock.now + exc.retry_after - duration in checked[kind, value], "a lock outlived its duration"
            continue
        if outcome == "right":  # a right password forgets its name's failures (not its address's)
            checked.pop(("user name", name), None)
        if outcome == "wrong":
            for key, limit in ((("user name", name), attempts), (("address", address), address_attempts)):
                checked.setdefault(key, []).append(clock.now)
                if limit:
                    window = [moment for moment in checked[key] if moment > clock.now - duration]
                    assert len(window) <= limit, (key, checked[key])


@settings_profile(max_examples=50, deadline=None)
@given(names=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=60))
def test_random_names_hold_a_bounded_memory(names):
    saved, lockout.MAX_ENTRIES = lockout.MAX_ENTRIES, 8
    try:
        failures = lockout.FailedLogins(3, 300, 0, Clock())
        for name in names:
            check(failures, name, "10.0.0.1", False)
            assert len(failures) <= 8
    finally:
        lockout.MAX_ENTRIES = saved


def test_a_guess_sent_while_another_of_the_same_name_is_checked_is_refused():
    failures = lockout.FailedLogins(5, 300, 20, Clock())
    assert check(failures, "ann", "10.0.0.1", False) == "wrong"
    with failures.attempt("ann", "10.0.0.1"):
        with pytest.raises(lockout.LockedOut) as refused:
            with failures.attempt("ann", "10.0.0.2"):
                pass
        assert refused.value.retry_after == 1 and refused.value.status.startswith("429")
        assert check(failures, "bob", "10.0.0.2", True) == "right"  # others are not held
    # before any failure, a name's checks may run side by side (clients logging in at once)
    with failures.attempt("bob", "10.0.0.2"), failures.attempt("bob", "10.0.0.3"):
        pass


# -- check slots: a password check waits briefly for one, tokens and remembered passwords never -----------

def who(environ, start_response):
    """What the authentication lets through: an answer naming the identity."""
    body = environ[ENVIRON_KEY].name.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def slow_users_file(path, slow_rounds):
    """The test users at bcrypt's lowest cost, and ``slow`` (last: unknown names cost the first's) at
    ``slow_rounds``, whose wrong passwords hold a check slot for a second or more."""
    write_users_file(path)
    content = yaml.safe_load(path.read_text())
    content["users"]["slow"] = {"password": bcrypt.hashpw(b"slow-pw", bcrypt.gensalt(slow_rounds)).decode(),
                                "roles": ["reader"]}
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def in_background(app, *args, **kwargs):
    """``app.get(*args, **kwargs)`` in a thread; the thread, whose ``answers`` holds the answer once done."""
    thread = threading.Thread(target=lambda: thread.answers.append(app.get(*args, expect_errors=True, **kwargs)))
    thread.answers = []
    thread.start()
    return thread


def until_checking(middleware, thread):
    """Returns once ``thread``'s password check holds the (only) slot."""
    while middleware.slots.in_use < 1:
        assert thread.is_alive(), thread.answers
        time.sleep(0.01)


def test_with_every_slot_checking_a_password_others_wait_briefly_and_logged_in_users_not_at_all(
        tmp_path, auth_settings):
    users_file = slow_users_file(tmp_path / "users.yaml", 14)
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file),
                                             "password_checks": 1, "password_check_wait_ms": 0}})
    middleware = auth_middleware.build(who, auth_settings["AUTH"])
    app = webtest.TestApp(middleware, extra_environ=ADDRESS)
    app.get("/", headers=basic("reader"))  # checked: remembered from now on
    token = {"X-Auth-Token": login(app, "member").json["access"]["token"]["id"]}
    guess = in_background(app, "/", headers=basic_of("slow", "guess"))
    until_checking(middleware, guess)
    message = assert_try_later(app.get("/", headers=basic("admin"), expect_errors=True), 503)
    assert "Too many passwords are being checked" in message
    assert_try_later(login(app, "admin"), 503)
    assert app.get("/", headers=basic("reader")).text == "reader"
    assert app.get("/", headers=token).text == "member"
    assert middleware.slots.in_use == 1, "the guess was checked before the others were answered"
    guess.join()
    assert guess.answers[0].status_int == 401
    assert app.get("/", headers=basic("admin")).text == "admin"  # a slot is free again; 503s were no failures


def test_a_keystone_that_never_answers_holds_one_slot_not_every_thread(silent_keystone, auth_settings):
    auth_settings.reload(overrides={"AUTH": {
        "method": "keystone", "password_checks": 1, "password_check_wait_ms": 0, "keystone": {
            "auth_url": silent_keystone, "username": "nailgun", "password": "x", "project_name": "services",
            "timeout": 2}}})
    middleware = auth_middleware.build(who, auth_settings["AUTH"])
    app = webtest.TestApp(middleware, extra_environ=ADDRESS)
    hanging = in_background(app, "/", headers=basic("member"))
    until_checking(middleware, hanging)
    message = assert_try_later(app.get("/", headers=basic("admin"), expect_errors=True), 503)
    assert "Too many passwords are being checked" in message
    assert "Too many passwords" in assert_try_later(login(app, "admin"), 503)
    assert middleware.slots.in_use == 1
    hanging.join()  # Keystone's timeout: the identity service cannot be asked, which is no failed password
    assert "cannot be checked now" in assert_try_later(hanging.answers[0], 503)
    assert len(middleware.failures) == 0


def test_against_keystone_remembered_passwords_and_tokens_never_wait_for_a_slot(keystone, auth_settings):
    auth_settings.reload(overrides={"AUTH": keystone.settings(password_checks=1, password_check_wait_ms=0)})
    middleware = auth_middleware.build(who, auth_settings["AUTH"])
    app = webtest.TestApp(middleware, extra_environ=ADDRESS)
    token = {"X-Auth-Token": keystone.token("reader")}
    assert app.get("/", headers=basic("member")).text == "member"  # checked by Keystone: remembered
    with middleware.slots.slot():  # every slot busy with another password
        assert app.get("/", headers=basic("member")).text == "member"
        assert app.get("/", headers=token).text == "reader"
        assert_try_later(app.get("/", headers=basic("admin"), expect_errors=True), 503)
    assert app.get("/", headers=basic("admin")).text == "admin"


def test_no_more_passwords_wait_for_a_slot_than_there_are_slots(tmp_path, auth_settings):
    """Guesses waiting for a slot would hold the server's threads as surely as guesses being checked."""
    users_file = write_users_file(tmp_path / "users.yaml")
    auth_settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file),
                                             "password_checks": 1, "password_check_wait_ms": 1000}})
    middleware = auth_middleware.build(who, auth_settings["AUTH"])
    app = webtest.TestApp(middleware, extra_environ=ADDRESS)
    with middleware.slots.slot():
        waiting = in_background(app, "/", headers=basic("admin"))
        while middleware.slots.waiting < 1:
            assert waiting.is_alive(), waiting.answers
            time.sleep(0.01)
        assert_try_later(app.get("/", headers=basic("member"), expect_errors=True), 503)
        assert waiting.is_alive(), "the second password waited for a slot as long as the first"
    waiting.join()
    assert waiting.answers[0].text == "admin"  # the slot freed within its wait


@pytest.mark.parametrize("limits, message", [
    ({"password_checks": 0}, "AUTH.password_checks must be a whole number of at least 1, or null"),
    ({"password_checks": True}, "AUTH.password_checks must be"), ({"password_checks": "2"}, "AUTH.password_checks"),
    ({"password_check_wait_ms": 5000}, "AUTH.password_check_wait_ms must be at most 1000"),
    ({"password_check_wait_ms": -1}, "AUTH.password_check_wait_ms must be a whole number of at least 0"),
    ({"lockout_failure_attempts": 2.5}, "AUTH.lockout_failure_attempts must be a whole number"),
    ({"lockout_address_failure_attempts": None}, "AUTH.lockout_address_failure_attempts must be a whole number"),
    ({"lockout_duration": 0}, "AUTH.lockout_duration must be a whole number of at least 1"),
    ({"lockout_duraton": 60}, "unknown settings AUTH.lockout_duraton"),
])
def test_login_limits_that_are_no_whole_numbers_stop_the_start(tmp_path, limits, message, capsys, auth_settings):
    from nailgun_host.cmd import api


    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text(yaml.safe_dump({"AUTH": limits}))
    with pytest.raises(ValueError, match=re.escape(message)):
        auth_settings.reload(str(settings_file))
    with pytest.raises(SystemExit):
        api.serve(["--config", str(settings_file), "--port", "1"])
    assert message in capsys.readouterr().err
