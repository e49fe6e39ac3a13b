"""The change feed: ``GET /config/environments/<id>/changes?since=N[&wait=S][&limit=L]``.

With nothing after ``since`` and ``wait`` > 0 the request waits for a write (``nailgun_platform.notify``,
topic ``configdb:<id>``) until the deadline. It first ends its transaction and gives its connection
back, so a waiting client holds no SQLite read lock and no pool slot, and reads again when woken.

Two ways to wait:
- under ``nailgun-feed`` (the WSGI environ has ``nailgun.can_park``) the handler answers at once
  with ``X-Nailgun-Park`` and the empty answer; the server parks the client with no thread and no
  connection, runs the request again when the topic moves, and answers the empty answer at the deadline
  (the deadline is the server's business, so that waiters run together share one answer);
- under a thread-per-request server it waits in its thread, at most ``FEED.thread_waiters`` such
  requests per process; beyond that it answers at once, with ``X-Feed-Waited: 0``.
"""
import time

import web

from nailgun_host.public import DEFAULTS, db, errors, query, settings
from nailgun_platform.public import notify
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.objects import changes, environment

WAITED_HEADER = "X-Feed-Waited"
MAX_SINCE = 2 ** 63 - 1


def _whole_number(name, low, high, default=None):
    """``?name=`` as a whole number in ``low..high``; ``default`` when absent (400 when None)."""
    value = query().get(name)
    if value is None:
        if default is None:
            raise errors.InvalidData("The query parameter {0} is required".format(name))
        return default
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        raise errors.InvalidData("The query parameter {0} must be a whole number from {1} to {2}".format(
            name, low, high))
    return int(value)


class ConfigChangesHandler(ConfigHandler):
    def GET(self, environment_id):
        environment_id = environment.get(environment_id).id
        since = _whole_number("since", 0, MAX_SINCE)
        max_wait = (settings.get("FEED") or {}).get("max_wait", DEFAULTS["FEED"]["max_wait"])
        wait = _whole_number("wait", 0, max_wait, default=0)
        limit = _whole_number("limit", 1, changes.MAX_LIMIT, default=changes.DEFAULT_LIMIT)
        deadline = time.time() + wait
        topic = changes.topic(environment_id)
        mark = notify.mark(topic) if wait else None  # before reading: see notify
        answer = changes.feed(environment_id, since, limit)
        if answer["changes"] or not wait:
            return self.respond(answer)
        if web.ctx.env.get(notify.CAN_PARK):
            web.header(notify.PARK_HEADER, notify.park_header(topic, deadline, mark))
            return self.respond(answer)
        if not notify.hold_thread():
            web.header(WAITED_HEADER, "0")
            return self.respond(answer)
        try:
            answer = self._wait(environment_id, since, limit, topic, deadline, mark) or answer
        finally:
            notify.release_thread()
        return self.respond(answer)

    @staticmethod
    def _wait(environment_id, since, limit, topic, deadline, mark):
        """Wait in this thread, holding no transaction or connection, until a change or the deadline."""
        answer = None
        while time.time() < deadline and not notify.ending():
            db.commit()  # nothing was written: end the read transaction
            db.close()  # and give the connection back to the pool while waiting
            notify.wait(topic, deadline - time.time(), mark)
            mark = notify.mark(topic)
            answer = changes.feed(environment_id, since, limit)
            if answer is None:
                raise errors.ObjectNotFound(
                    "Cannot find an environment with the given identifier {0}".format(environment_id))
            if answer["changes"]:
                break
        return answer
