"""Wake waiting readers when something they wait for is written, across workers and hosts.

``publish(topic)`` is called inside the writing transaction: on PostgreSQL it is
``pg_notify``, delivered at commit and dropped on rollback; on SQLite a counter row per topic
that listeners poll. A process has one ``Listener`` (one dedicated LISTEN connection on
PostgreSQL); waiters re-read their data after a wake-up, so a lost notification costs a re-check,
never a missed change.
"""


def publish(topic):
    """Tell every listener, once the current transaction commits, that ``topic`` changed."""
    raise NotImplementedError


def wait(topic, timeout):
    """Block the calling thread until ``topic`` is published or ``timeout`` seconds pass; True when woken."""
    raise NotImplementedError
