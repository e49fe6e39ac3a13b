"""``nailgun_platform.notify`` on the suite's database (SQLite, or PostgreSQL with NAILGUN_TEST_DB_URL).

Publications made by another process reach this one's listener; a rolled-back one never does.
"""
import subprocess
import sys
import textwrap
import types

import pytest
import sqlalchemy as sa

from nailgun_host.db import db
from nailgun_platform import notify

#: generous: a wake-up comes within ~200 ms; only a missing one would use it up
WITHIN = 30

PUBLISHER = textwrap.dedent("""
    import sys
    from nailgun_host import db
    from nailgun_platform import notify
    db.configure(sys.argv[1])
    for topic in sys.argv[2:]:
        notify.publish(topic)
        db.db.commit()
""")


def publish_elsewhere(db_url, *topics):
    """Publish and commit ``topics`` from another process, one transaction each."""
    subprocess.run([sys.executable, "-c", PUBLISHER, db_url] + list(topics), check=True, timeout=60)


@pytest.fixture
def listener(migrated_db, db_url):
    found = notify.listener()
    assert found.url == sa.make_url(db_url) and found._thread.is_alive()
    assert found.connected.wait(WITHIN), "the listener connected"
    started = found.mark("t:started")
    publish_elsewhere(db_url, "t:started")
    assert found.wait("t:started", WITHIN, started), "the listener hears publications ({0})".format(found.url)
    return found


def test_a_publication_in_another_process_wakes_a_waiter_after_its_commit(listener, db_url):
    mark = listener.mark("t:1")
    publish_elsewhere(db_url, "t:1")
    assert notify.wait("t:1", WITHIN, mark) is True
    assert listener.mark("t:1") != mark


def test_a_wait_for_one_topic_is_not_woken_by_another(listener, db_url):
    mark = listener.mark("t:quiet")
    other = listener.mark("t:noisy")
    publish_elsewhere(db_url, "t:noisy")
    assert notify.wait("t:noisy", WITHIN, other) is True
    assert listener.mark("t:quiet") == mark
    assert notify.wait("t:quiet", 0.3, mark) is False


def test_a_mark_taken_before_a_publication_closes_the_gap_before_wait(listener, db_url):
    mark = listener.mark("t:gap")
    publish_elsewhere(db_url, "t:gap")
    notify.wait("t:gap", WITHIN, mark)
    # the publication came before this wait started: with the old mark it returns at once
    assert notify.wait("t:gap", WITHIN, mark) is True


def test_a_rolled_back_publication_wakes_no_one(listener, db_url):
    rolled, committed = listener.mark("t:rolled"), listener.mark("t:committed")
    notify.publish("t:rolled")
    db.rollback()
    notify.publish("t:committed")
    db.commit()
    db.remove()
    # notifications arrive in commit order (PostgreSQL) or in one read of the counters (SQLite):
    # once the later one is heard, the rolled-back one would have been too
    assert notify.wait("t:committed", WITHIN, committed) is True
    assert listener.mark("t:rolled") == rolled


def test_one_listener_per_process_and_database(listener):
    assert notify.listener() is listener


def test_a_lost_connection_reconnects_and_wakes_every_waiter(listener, db_url):
    if sa.make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("SQLite's listener reads a file; there is no connection to lose")
    mark = listener.mark("t:any")
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        killed = connection.execute(sa.text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name "
            "AND datname = current_database()"), {"name": notify.APPLICATION_NAME}).all()
    engine.dispose()
    assert killed
    assert notify.wait("t:any", WITHIN, mark) is True  # the reconnection moved every mark
    new_mark = listener.mark("t:any")
    publish_elsewhere(db_url, "t:any")  # and it listens again
    assert notify.wait("t:any", WITHIN, new_mark) is True


def test_thread_waiters_are_capped_by_the_settings(migrated_db):
    from nailgun_host.settings import settings

    settings.reload(overrides={"DATABASE_URL": settings.database_url, "FEED": {"thread_waiters": 2}})
    held = [notify.hold_thread() for _ in range(3)]
    try:
        assert held == [True, True, False]
    finally:
        for _ in range(held.count(True)):
            notify.release_thread()
    assert notify.hold_thread() is True
    notify.release_thread()


def test_park_headers_round_trip():
    value = notify.park_header("configdb:7", 1700000000.125, (3, 41))
    assert notify.parse_park_header(value) == ("configdb:7", 1700000000.125, (3, 41))


def test_each_notification_wakes_its_waiters_as_it_arrives_not_when_the_listening_window_ends(listener):
    """PostgreSQL's notifications come from a generator that runs for ``ALIVE_CHECK`` seconds: the waiters of
    the first must be woken before the generator is asked for the next (the wake follows its commit)."""
    marks = {topic: listener.mark(topic) for topic in ("t:first", "t:second")}
    seen_moved = []

    def notifications():
        yield types.SimpleNamespace(payload="t:first")
        seen_moved.append(listener.mark("t:first") != marks["t:first"])
        yield types.SimpleNamespace(payload="t:second")
        seen_moved.append(listener.mark("t:second") != marks["t:second"])

    assert listener._hear(notifications()) == 2
    assert seen_moved == [True, True]
