"""Wake waiting readers when something they wait for is written, across workers and hosts.

``publish(topic)`` is called inside the writing transaction: on PostgreSQL it is
``pg_notify``, delivered at commit and dropped on rollback; on SQLite a counter row per topic
that listeners poll. A process has one ``Listener`` (one dedicated LISTEN connection on
PostgreSQL); waiters re-read their data after a wake-up, so a lost notification costs a re-check,
never a missed change.

A waiter takes a ``mark(topic)`` *before* it reads, and waits for the mark to move: a write that
commits between the read and the wait has already moved it, so no wake-up falls in that gap. A
reconnection (or the listener's start) moves every mark, since notifications may have been missed.
"""
import logging
import threading

import sqlalchemy as sa

from nailgun_platform import errors, hosting

LOG = logging.getLogger(__name__)

#: the one PostgreSQL channel; the topic is the payload
CHANNEL = "nailgun"
#: how the listener's connection shows in pg_stat_activity
APPLICATION_NAME = "nailgun-notify"
#: how often the SQLite listener reads the counters, in seconds (a development database on one host: a wake
#: up to this late is not felt by a person following the feed, and each read opens the file)
POLL_INTERVAL = 0.2
#: PostgreSQL: how long the listener waits for a notification before it checks that its connection lives, in
#: seconds (each notification is delivered as it arrives, whatever this is)
ALIVE_CHECK = 1.0
#: the longest pause between two reconnection attempts, in seconds
MAX_BACKOFF = 5.0

#: how a parking server (``nailgun_platform.feed_server``) and a waiting handler talk: the environ key the
#: server sets (may park) and the answer header a handler sets, with nothing new to answer, to be parked,
#: ``<topic>;deadline=<unix time>;mark=<generation>.<seq>`` (never sent to clients). The server keeps the
#: deadline of a request's first park, runs it again when the topic moves past the mark, and at that
#: deadline answers the body of its last run: a parking answer's body is what the request answers then.
CAN_PARK, PARK_HEADER = "nailgun.can_park", "X-Nailgun-Park"

#: SQLite only: a signalling table, not data (never migrated; made by the first publish or poll that finds
#: none: a publish does not ask for it on every write)
COUNTERS_DDL = "CREATE TABLE IF NOT EXISTS notify_counters (topic VARCHAR(255) PRIMARY KEY, seq INTEGER NOT NULL)"
COUNTERS_UPSERT = ("INSERT INTO notify_counters (topic, seq) VALUES (:topic, 1) "
                   "ON CONFLICT (topic) DO UPDATE SET seq = notify_counters.seq + 1")


def publish(topic):
    """Tell every listener, once the current transaction commits, that ``topic`` changed."""
    db = hosting.session
    if db.get_bind().dialect.name == "postgresql":
        db.execute(sa.text("SELECT pg_notify(:channel, :topic)"), {"channel": CHANNEL, "topic": topic})
        return
    try:
        db.execute(sa.text(COUNTERS_UPSERT), {"topic": topic})
    except sa.exc.OperationalError as error:  # the first write of a new database: made in its transaction
        if "no such table" not in str(error.orig):
            raise
        db.execute(sa.text(COUNTERS_DDL))
        db.execute(sa.text(COUNTERS_UPSERT), {"topic": topic})


class Listener:
    """The process's ear on the database: per-topic marks that move when a topic is published.

    ``watch(callback)`` adds a callable run on the listener's thread with the topic published (None:
    every topic), for servers that wait without threads (``nailgun_platform.feed_server``).
    """

    def __init__(self, url):
        self.url = sa.make_url(url)
        self._condition = threading.Condition()
        self._seqs = {}
        self._generation = 0
        self._watchers = []
        self._stopped = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nailgun-notify", daemon=True)
        self._thread.start()

    # -- waiters ------------------------------------------------------------------------------

    def mark(self, topic):
        with self._condition:
            return self._generation, self._seqs.get(topic, 0)

    def wait(self, topic, timeout, mark):
        """Block until ``topic``'s mark differs from ``mark``, ``timeout`` passes or the server stops
        (``end_waits``); True when it moved."""
        with self._condition:
            return self._condition.wait_for(lambda: self.mark(topic) != mark or _ending.is_set(), timeout)

    def wake_all(self):
        with self._condition:
            self._condition.notify_all()

    def watch(self, callback):
        with self._condition:
            self._watchers.append(callback)

    def unwatch(self, callback):
        with self._condition:
            self._watchers.remove(callback)

    def _woken(self, topics):
        """``topics`` were published (None: anything may have been, after a (re)connection)."""
        with self._condition:
            if topics is None:
                self._generation += 1
            else:
                for topic in topics:
                    self._seqs[topic] = self._seqs.get(topic, 0) + 1
            self._condition.notify_all()
            watchers = list(self._watchers)
        for callback in watchers:
            for topic in (topics if topics is not None else [None]):
                try:
                    callback(topic)
                except Exception:  # a watcher's fault must not stop the listener
                    LOG.exception("A notify watcher failed")

    # -- the connection -----------------------------------------------------------------------

    def stop(self):
        self._stopped.set()
        self._thread.join(5)

    def _run(self):
        backoff = 0.1
        while not self._stopped.is_set():
            try:
                if self.url.get_backend_name() == "postgresql":
                    self._listen_postgresql()
                else:
                    self._poll_sqlite()
            except Exception as exc:  # the database went away: wait, reconnect, wake everyone
                self.connected.clear()
                LOG.warning("Notification listener lost its database (%s); reconnecting in %.1f s",
                            errors.first_line(exc), backoff)
                self._stopped.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
            else:
                backoff = 0.1

    def _listen_postgresql(self):
        import psycopg

        conninfo = self.url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True, application_name=APPLICATION_NAME) as connection:
            connection.execute("LISTEN " + CHANNEL)
            self._woken(None)
            self.connected.set()
            while not self._stopped.is_set():
                if not self._hear(connection.notifies(timeout=ALIVE_CHECK)):
                    connection.execute("SELECT 1")  # notifies() ends quietly on a dead connection: find out

    def _hear(self, notifications):
        """Wake the waiters of each notification as it arrives, not once a window of them ends (a wake
        must follow its commit by milliseconds); how many came."""
        heard = 0
        for notification in notifications:
            self._woken([notification.payload])
            heard += 1
        return heard

    def _poll_sqlite(self):
        """Read the counters every POLL_INTERVAL, each time on a new connection (a development
        database's file may be replaced or checkpointed under a long-lived one)."""
        seen = self._counters()
        self._woken(None)
        self.connected.set()
        while not self._stopped.wait(POLL_INTERVAL):
            now = self._counters()
            moved = [topic for topic, seq in now.items() if seen.get(topic) != seq]
            seen = now
            if moved:
                self._woken(moved)

    def _counters(self):
        import sqlite3

        connection = sqlite3.connect(self.url.database or ":memory:", isolation_level=None, timeout=30)
        try:
            connection.execute(COUNTERS_DDL)
            return dict(connection.execute("SELECT topic, seq FROM notify_counters").fetchall())
        finally:
            connection.close()


_listener = None
_listener_lock = threading.Lock()
_ending = threading.Event()


def end_waits():
    """The server is stopping: every waiting request answers now, so it does not hold the stop up."""
    _ending.set()
    if _listener is not None:
        _listener.wake_all()


def ending():
    return _ending.is_set()


def listener():
    """This process's listener for the configured database, started at its first use."""
    global _listener
    url = hosting.engine().url
    with _listener_lock:
        if _listener is None or _listener.url != url:
            if _listener is not None:
                _listener.stop()
            _listener = Listener(url)
        return _listener


def park_header(topic, deadline, mark):
    """The value of PARK_HEADER: park the client on ``topic`` from ``mark`` until ``deadline``."""
    return "{0};deadline={1!r};mark={2}.{3}".format(topic, deadline, *mark)


def parse_park_header(value):
    """``(topic, deadline, mark)`` of a PARK_HEADER value."""
    topic, deadline, mark = value.rsplit(";", 2)
    generation, seq = mark[len("mark="):].split(".")
    return topic, float(deadline[len("deadline="):]), (int(generation), int(seq))


def mark(topic):
    """Where ``topic`` stands now: take it before reading, then ``wait`` for it to move."""
    return listener().mark(topic)


def wait(topic, timeout, mark=None):
    """Block the calling thread until ``topic`` is published or ``timeout`` seconds pass; True when woken.

    ``mark`` (from ``mark(topic)`` before the caller read its data) closes the gap between reading
    and waiting; without it only a publication after this call wakes it.
    """
    found = listener()
    return found.wait(topic, timeout, found.mark(topic) if mark is None else mark)


# -- waiting threads -------------------------------------------------------------------------------

#: FEED.thread_waiters when the settings handed in have no FEED section
THREAD_WAITERS = 2
_holding = 0
_holding_lock = threading.Lock()


def hold_thread():
    """Whether this thread may wait (then ``release_thread`` after): at most ``FEED.thread_waiters`` at once.

    A thread-per-request server must keep threads for other requests; beyond the cap a
    waiting request answers at once instead.
    """
    global _holding
    cap = (hosting.settings.get("FEED") or {}).get("thread_waiters", THREAD_WAITERS)
    with _holding_lock:
        if _holding >= cap:
            return False
        _holding += 1
        return True


def release_thread():
    global _holding
    with _holding_lock:
        _holding -= 1
