"""Request statistics: ``GET /stats`` (seed 001's General Request Statistics) and Prometheus' ``/metrics``.

Every answer is counted twice in its process, both cheaply (no I/O on the request's path). The request leaves
only a tuple (``record``); its process folds the tuples into both counts (``fold``) by the thousand, and before
anything reads them: a scrape, a flush. In multiprocess mode another worker may answer the scrape, so each answer
is folded at once there.

- for ``/stats``, in memory by tenant and user, and added to the database now and then
  (``STATS.flush_seconds``) by a thread of each server process, one statement per table, so every
  worker of every host adds to its host's rows; ``/stats`` reads them: one entry per host;
- for ``/metrics``, in prometheus_client's metrics, which in multiprocess mode
  (``STATS.metrics_dir``, or ``PROMETHEUS_MULTIPROC_DIR``) are files every worker of the host
  writes and the scraping one reads: the host's figures, whichever worker answers the scrape.
  Prometheus scrapes each host; it adds hosts up itself.

Both need the ``nailgun:read_stats`` policy rule (admins and the ``monitoring`` role).
"""
import atexit
import bisect
import collections
import itertools
import json
import logging
import os
import socket
import sys
import threading
import time

import psutil
import sqlalchemy as sa
import sqlalchemy.exc
from sqlalchemy.dialects import postgresql, sqlite

from nailgun_host import auth, errors, policy
from nailgun_host.db import get_engine
from nailgun_host.db.models import RequestStatsCount, RequestStatsHost
from nailgun_platform import clock

LOG = logging.getLogger(__name__)
HOST = socket.gethostname()
METRICS_PATH = "/metrics"
#: method labels: anything else is ``other`` (a label per invented method would grow without bound)
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
#: response-time buckets, in seconds: replayed reads (well under 5 ms) to long feed waits
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Tally:
    """This process's counts not yet in the database: ``{(tenant, user): [requests, errors, seconds]}``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def add(self, key, requests, errors, seconds):
        with self.lock:
            entry = self.counts.get(key)
            if entry is None:
                entry = self.counts[key] = [0, 0, 0.0]
            entry[0] += requests
            entry[1] += errors
            entry[2] += seconds

    def take(self):
        with self.lock:
            taken, self.counts = self.counts, {}
        return taken

    def give_back(self, counts):
        """Counts a flush could not write: they wait for the next one."""
        with self.lock:
            for key, (requests, failed, seconds) in counts.items():
                entry = self.counts.setdefault(key, [0, 0, 0.0])
                entry[0] += requests
                entry[1] += failed
                entry[2] += seconds


class Metrics:
    """This process's Prometheus metrics; the label children of each answer kept, not looked up again."""

    def __init__(self):
        import prometheus_client

        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        self.requests = prometheus_client.Counter(
            "nailgun_requests", "Requests answered, by method and status code", ["method", "code"],
            registry=self.registry)
        self.errors = prometheus_client.Counter(
            "nailgun_request_errors", "Requests answered with a 5xx status", registry=self.registry)
        self.users = prometheus_client.Counter(
            "nailgun_user_requests", "Requests by the tenant (project) and user that sent them",
            ["tenant", "user"], registry=self.registry)
        self.duration = prometheus_client.Histogram(
            "nailgun_request_duration_seconds", "Response time, from the request's arrival to its answer",
            buckets=BUCKETS, registry=self.registry)
        self.registry.register(HostCollector())
        #: multiprocess mode: every worker's figures are files any worker's scrape reads
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self._by_status = {}
        self._by_user = {}

    def count(self, by_status, by_user, errors, durations):
        """Add ``{(method, code): answers}``, ``{(tenant, user): answers}``, the 5xx and each answer's seconds."""
        for (method, code), answers in by_status.items():
            key = (method if method in METHODS else "other", code)
            child = self._by_status.get(key)
            if child is None:
                child = self._by_status[key] = self.requests.labels(key[0], str(code))
            child.inc(answers)
        for user_key, answers in by_user.items():
            child = self._by_user.get(user_key)
            if child is None:
                child = self._by_user[user_key] = self.users.labels(*user_key)
            child.inc(answers)
        if errors:
            self.errors.inc(errors)
        observe_all(self.duration, durations)

    def scrape_registry(self):
        """What ``/metrics`` shows: every live and past worker of the host in multiprocess mode, else this one."""
        from prometheus_client import CollectorRegistry, multiprocess

        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not directory:
            return self.registry
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
        registry.register(HostCollector())
        return registry


def observe_all(histogram, durations):
    """What ``histogram.observe`` of each of ``durations`` (seconds, not NaN) would do, done by bucket: each
    bucket's count and the sum are added once for all (an answer's observe was a tenth of a replayed answer's
    cost). prometheus_client keeps them in ``_upper_bounds``, ``_buckets`` and ``_sum`` since 0.4; without them,
    one ``observe`` each."""
    try:
        bounds, buckets, total = histogram._upper_bounds, histogram._buckets, histogram._sum
    except AttributeError:
        for seconds in durations:
            histogram.observe(seconds)
        return
    if not durations:
        return
    total.inc(sum(durations))
    # observe's bucket: the first whose upper bound is at least the value (the last is +Inf)
    for index, count in collections.Counter(map(bisect.bisect_left, itertools.repeat(bounds), durations)).items():
        buckets[index].inc(count)


class HostCollector:
    """The host's CPU, read when scraped (not stored per worker)."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        yield GaugeMetricFamily("nailgun_host_cpu_percent", "CPU use of the host since the last reading, percent",
                                value=psutil.cpu_percent(interval=None))
        yield GaugeMetricFamily("nailgun_host_cpu_count", "CPUs of the host (100 percent each)",
                                value=psutil.cpu_count() or 1)


_tally = Tally()
_metrics = None
_metrics_lock = threading.Lock()
#: answers recorded and not yet folded: (method, status code, identity or None, seconds)
_answers = collections.deque()
_fold_lock = threading.Lock()
#: answers that wait at most, before the request that records the next one folds them
FOLD_AT = 1000


class MetricsDirError(ValueError):
    """``STATS.metrics_dir`` cannot be used; ``str()`` is the line a console script prints."""


def use_metrics_dir(directory):
    """Multiprocess mode in ``directory`` (created when missing): before the first metric is made.
    MetricsDirError when it cannot be made."""
    if directory:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise MetricsDirError("cannot use STATS.metrics_dir {0}: {1}".format(
                directory, exc.strerror or exc)) from exc
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    if _metrics is None and "prometheus_client.values" in sys.modules:
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # the mode prometheus_client chose at its import


def metrics():
    global _metrics
    if _metrics is None:
        with _metrics_lock:
            if _metrics is None:
                _metrics = Metrics()
    return _metrics


def record(environ, code, seconds):
    """Count an answer (``request_log.RequestLog`` calls it for every one): kept to be folded (see the module)."""
    if not _flusher.serving_here:
        _flusher.serving()
    _answers.append((environ.get("REQUEST_METHOD", ""), code, environ.get(auth.ENVIRON_KEY), seconds))
    if len(_answers) >= FOLD_AT or _metrics is None or _metrics.multiprocess:
        fold()


def fold():
    """Add the answers recorded so far to the tally (for the database) and the metrics."""
    with _fold_lock:
        taken = []
        while _answers:
            taken.append(_answers.popleft())
        if not taken:
            return
        by_status, by_identity, durations, errors = collections.Counter(), {}, [], 0
        for method, code, identity, seconds in taken:
            by_status[method, code] += 1
            entry = by_identity.get(identity)
            if entry is None:
                entry = by_identity[identity] = [0, 0, 0.0]
            entry[0] += 1
            entry[1] += code >= 500
            entry[2] += seconds
            errors += code >= 500
            durations.append(seconds)
        by_user = {}
        for identity, (requests, failed, seconds) in by_identity.items():
            key = ("", "") if identity is None else (identity.project_id or "", identity.name)
            _tally.add(key, requests, failed, seconds)
            if identity is not None:
                by_user[key] = by_user.get(key, 0) + requests
        metrics().count(by_status, by_user, errors, durations)


# -- the database: each process adds, /stats reads ------------------------------------------------

def _insert(engine, table):
    return (postgresql if engine.dialect.name == "postgresql" else sqlite).insert(table)


_flush_failed = False


def flush(engine=None):
    """Add this process's counts since the last flush to its host's rows, and the host's CPU; counts
    that cannot be written (database down, not migrated) wait for the next flush."""
    global _flush_failed
    engine = engine or get_engine()
    fold()
    counts = _tally.take()
    now = clock.now()
    hosts, totals = RequestStatsHost.__table__, RequestStatsCount.__table__
    host_row = _insert(engine, hosts).values(host=HOST, created_at=now, updated_at=now,
                                             cpu_percent=psutil.cpu_percent(interval=None),
                                             cpu_count=psutil.cpu_count() or 1)
    host_row = host_row.on_conflict_do_update(index_elements=["host"], set_={
        "updated_at": host_row.excluded.updated_at, "cpu_percent": host_row.excluded.cpu_percent,
        "cpu_count": host_row.excluded.cpu_count})
    try:
        with engine.begin() as connection:
            connection.execute(host_row)
            if counts:
                added = _insert(engine, totals).values([
                    {"host": HOST, "tenant": tenant, "user_name": user, "requests": requests, "errors": failed,
                     "seconds": seconds} for (tenant, user), (requests, failed, seconds) in counts.items()])
                connection.execute(added.on_conflict_do_update(
                    index_elements=["host", "tenant", "user_name"], set_={
                        "requests": totals.c.requests + added.excluded.requests,
                        "errors": totals.c.errors + added.excluded.errors,
                        "seconds": totals.c.seconds + added.excluded.seconds}))
    except sqlalchemy.exc.SQLAlchemyError as exc:
        _tally.give_back(counts)
        LOG.log(logging.DEBUG if _flush_failed else logging.WARNING,
                "Cannot add this process's request counts to the database; they wait: %s",
                errors.first_line(exc))
        _flush_failed = True
        return False
    _flush_failed = False
    return True


def _per_second(count, since, until):
    elapsed = (until - since).total_seconds()
    return round(count / elapsed, 6) if elapsed > 0 else 0.0


def read(session):
    """Seed 001's answer: one entry per host (all its processes' counts added up), by host name."""
    totals = {}
    for row in session.execute(sa.select(RequestStatsCount)).scalars():
        entry = totals.setdefault(row.host, {"requests": 0, "errors": 0, "seconds": 0.0, "tenants": {}, "users": {}})
        entry["requests"] += row.requests
        entry["errors"] += row.errors
        entry["seconds"] += row.seconds
        for name, by in ((row.tenant, "tenants"), (row.user_name, "users")):
            if name:
                entry[by][name] = entry[by].get(name, 0) + row.requests
    answer = []
    for host in session.execute(sa.select(RequestStatsHost).order_by(RequestStatsHost.host)).scalars():
        entry = totals.get(host.host, {"requests": 0, "errors": 0, "seconds": 0.0, "tenants": {}, "users": {}})
        answer.append({
            "id": host.id, "host": host.host,
            "created": host.created_at.isoformat(timespec="seconds"),
            "updated": host.updated_at.isoformat(timespec="seconds"),
            "request_count": entry["requests"], "error_count": entry["errors"],
            "requests_per_second": _per_second(entry["requests"], host.created_at, host.updated_at),
            "errors_per_second": _per_second(entry["errors"], host.created_at, host.updated_at),
            "average_response_time": round(entry["seconds"] / entry["requests"], 6) if entry["requests"] else 0.0,
            # JSON in a string, as seed 001 (and Murano's dashboard) has it
            "requests_per_tenant": json.dumps(entry["tenants"], sort_keys=True),
            "requests_per_user": json.dumps(entry["users"], sort_keys=True),
            "cpu_percent": host.cpu_percent, "cpu_count": host.cpu_count})
    return answer


class Flusher:
    """Flushes every ``interval`` seconds from a thread of each serving process, and once more as it exits.

    The thread starts with the process's first answer, not with ``start``: a server that loads the
    application before it forks its workers (gunicorn ``--preload``) gets one in every worker.
    """

    def __init__(self):
        self.interval = None
        self.pid = None
        #: whether this process's thread runs (a forked child's does not)
        self.serving_here = False
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        self.serving_here = False

    def start(self, interval):
        self.interval = interval

    def serving(self):
        if self.interval is None or self.pid == os.getpid():
            return
        with _metrics_lock:
            if self.pid == os.getpid():
                return
            self.pid = os.getpid()
            self.serving_here = True
            psutil.cpu_percent(interval=None)  # the first reading only starts the measure
            atexit.register(flush)
            threading.Thread(target=self._run, name="nailgun-stats", daemon=True).start()

    def _run(self):
        while True:
            time.sleep(self.interval)
            flush()


_flusher = Flusher()


def start_flushing(interval):
    """Server entry points: add this process's counts to the database every ``interval`` seconds."""
    _flusher.start(interval)


# -- /metrics ---------------------------------------------------------------------------------

class MetricsEndpoint:
    """WSGI middleware (behind authentication) answering ``GET /metrics`` with prometheus_client's own
    exposition (text or OpenMetrics, gzip as asked); everything else goes on to ``app``."""

    def __init__(self, app):
        import prometheus_client

        self.app = app
        self._exposition = prometheus_client.make_wsgi_app

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != METRICS_PATH or environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return self.app(environ, start_response)
        identity = environ.get(auth.ENVIRON_KEY)
        try:
            if identity is None or not policy.allowed(policy.READ_STATS, identity):
                return auth.json_response(start_response, "403 Forbidden", "Policy does not allow {0} for user "
                                          "{1}".format(policy.READ_STATS, getattr(identity, "name", "-")))
        except errors.ServiceUnavailable as exc:  # the policy file cannot be used: as the application says
            return auth.json_response(start_response, "503 Service Unavailable", exc.message)
        fold()
        return self._exposition(metrics().scrape_registry())(environ, start_response)


def build(app, stats_settings):
    """``app`` with ``/metrics`` in front, metrics in the settings' multiprocess directory if any."""
    use_metrics_dir(stats_settings.get("metrics_dir"))
    metrics()
    return MetricsEndpoint(app)
