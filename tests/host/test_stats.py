"""Request statistics (``nailgun_host.stats``): ``GET /stats`` in seed 001's shape, one entry per host, added up
from every process through the database; ``/metrics`` for Prometheus, added up across a host's workers."""
import base64
import concurrent.futures
import contextlib
import copy
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import hypothesis
import pytest
import requests
import webtest
import yaml
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from nailgun_host import db as host_db, stats
from nailgun_host.app import build_wsgi
from nailgun_host.db import get_engine
from nailgun_host.settings import settings
from tests.auth import write_users_file
from tests.conftest import free_port, stop_process

USERS = {"admin": ("admin-pw", ["admin"]), "reader": ("reader-pw", ["reader"]),
         "prometheus": ("prometheus-pw", ["monitoring"])}
SEED_FIELDS = {"id", "host", "created", "updated", "request_count", "error_count", "requests_per_second",
               "errors_per_second", "average_response_time", "requests_per_tenant", "cpu_percent", "cpu_count"}


def basic(user):
    credentials = "{0}:{1}".format(user, USERS[user][0]).encode()
    return {"Authorization": "Basic " + base64.b64encode(credentials).decode()}


def samples(text):
    """``{(name, labels as a sorted tuple): value}`` of a Prometheus exposition."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def total(found, name, **labels):
    return sum(value for (sample, given), value in found.items()
               if sample == name and set(labels.items()) <= set(given))


@pytest.fixture
def local_app(migrated_db, tmp_path):
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"DATABASE_URL": settings.database_url,
                               "AUTH": {"method": "local", "users_file": users_file}})
    yield webtest.TestApp(build_wsgi())
    settings.clear()
    settings.update(saved)


def this_host(answer):
    return next(entry for entry in answer if entry["host"] == stats.HOST)


def test_stats_count_requests_errors_and_users_in_seed_001_s_shape(local_app, tmp_path):
    stats.flush(get_engine())  # what earlier tests counted in this process goes first
    before = this_host(local_app.get("/api/v1/stats", headers=basic("admin")).json)
    for _ in range(3):
        local_app.get("/api/v1/clusters/", headers=basic("reader"))
    local_app.get("/api/v1/clusters/", headers={"Authorization": "Basic eDp5"}, status=401)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("- not a mapping\n")
    settings["AUTH"]["policy_file"] = str(policy_file)
    local_app.get("/api/v1/clusters/", headers=basic("admin"), status=503)  # an error: the policy cannot be read
    settings["AUTH"]["policy_file"] = None
    assert stats.flush(get_engine())
    after = this_host(local_app.get("/api/v1/stats", headers=basic("admin")).json)
    assert SEED_FIELDS <= set(after)
    # 3 readers, a 401, a 503, and the first /stats read (counted once answered)
    assert after["request_count"] - before["request_count"] == 6
    assert after["error_count"] - before["error_count"] == 1
    users_before, users_after = json.loads(before["requests_per_user"]), json.loads(after["requests_per_user"])
    assert users_after["reader"] - users_before.get("reader", 0) == 3
    assert users_after["admin"] - users_before.get("admin", 0) == 2
    # local users belong to no tenant (project): no tenant counted more (earlier tests' Keystone users may be there)
    assert json.loads(after["requests_per_tenant"]) == json.loads(before["requests_per_tenant"])
    assert after["average_response_time"] > 0 and after["requests_per_second"] >= 0
    assert after["cpu_count"] >= 1 and 0 <= after["cpu_percent"] <= 100
    assert after["updated"] >= after["created"]


def test_each_host_is_an_entry_whatever_processes_added_to_it(local_app, monkeypatch):
    stats.flush(get_engine())
    monkeypatch.setattr(stats, "HOST", "other-host")
    local_app.get("/api/v1/version")
    local_app.get("/api/v1/version")
    assert stats.flush(get_engine())
    local_app.get("/api/v1/version")
    assert stats.flush(get_engine())  # a second flush adds to the first
    answer = local_app.get("/api/v1/stats", headers=basic("admin")).json
    other = next(entry for entry in answer if entry["host"] == "other-host")
    assert (other["request_count"], other["error_count"], json.loads(other["requests_per_user"])) == (3, 0, {})
    assert [entry["host"] for entry in answer] == sorted(entry["host"] for entry in answer)


def test_counts_a_flush_cannot_write_wait_for_the_next(local_app, session, tmp_path):
    stats.flush(get_engine())
    before = this_host(stats.read(session))["request_count"]
    session.remove()
    local_app.get("/api/v1/version")
    broken = host_db.make_engine("sqlite:///" + str(tmp_path / "not-migrated.db"))
    assert not stats.flush(broken)  # no tables there
    assert stats.flush(get_engine())
    answer = local_app.get("/api/v1/stats", headers=basic("admin")).json
    assert this_host(answer)["request_count"] == before + 1


def test_stats_and_metrics_need_the_read_stats_rule(local_app):
    for user, allowed in (("admin", True), ("prometheus", True), ("reader", False)):
        status = 200 if allowed else 403
        local_app.get("/api/v1/stats", headers=basic(user), status=status)
        answer = local_app.get("/metrics", headers=basic(user), status=status)
        if not allowed:
            assert "nailgun:read_stats" in answer.json["message"]
    local_app.get("/metrics", status=401)
    local_app.get("/api/v1/clusters/", headers=basic("prometheus"), status=403)  # the scraper reads nothing else


def test_metrics_count_each_answer_by_method_status_and_user(local_app):
    before = samples(local_app.get("/metrics", headers=basic("admin")).text)
    local_app.get("/api/v1/clusters/", headers=basic("reader"))
    local_app.get("/api/v1/nowhere", headers=basic("reader"), status=404)
    local_app.request("/api/v1/clusters/", method="BREW", status=405)
    after = samples(local_app.get("/metrics", headers=basic("admin")).text)

    def grew(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    assert grew("nailgun_requests_total", method="GET", code="200") == 2  # the reader's and the first scrape
    assert grew("nailgun_requests_total", method="GET", code="404") == 1
    assert grew("nailgun_requests_total", method="other", code="405") == 1
    assert grew("nailgun_user_requests_total", user="reader", tenant="") == 2
    assert grew("nailgun_request_duration_seconds_count") == 4
    assert grew("nailgun_request_duration_seconds_sum") > 0
    assert total(after, "nailgun_host_cpu_count") >= 1


def test_every_answer_of_many_threads_is_counted_before_a_scrape_or_a_flush_reads(local_app):
    """Answers wait in their process to be folded (``stats.fold``): a scrape and a flush still see every one."""
    stats.flush(get_engine())
    before = samples(local_app.get("/metrics", headers=basic("admin")).text)
    stats_before = this_host(local_app.get("/api/v1/stats", headers=basic("admin")).json)

    def send(_):
        app = webtest.TestApp(local_app.app)
        return [app.get("/api/v1/clusters/", headers=basic("reader")).status_int for _ in range(50)]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sum(len(statuses) for statuses in pool.map(send, range(8))) == 400
    after = samples(local_app.get("/metrics", headers=basic("admin")).text)
    assert total(after, "nailgun_user_requests_total", user="reader") - \
        total(before, "nailgun_user_requests_total", user="reader") == 400
    assert total(after, "nailgun_request_duration_seconds_count") - \
        total(before, "nailgun_request_duration_seconds_count") == 400 + 2  # and the first scrape, the /stats read
    assert stats.flush(get_engine())
    stats_after = this_host(local_app.get("/api/v1/stats", headers=basic("admin")).json)
    assert stats_after["request_count"] - stats_before["request_count"] == 400 + 3  # and the two scrapes, that read
    assert json.loads(stats_after["requests_per_user"])["reader"] - \
        json.loads(stats_before["requests_per_user"]).get("reader", 0) == 400


def test_answers_are_folded_by_the_thousand_without_a_reader(local_app, monkeypatch):
    stats.fold()
    monkeypatch.setattr(stats, "FOLD_AT", 5)
    for _ in range(4):
        local_app.get("/api/v1/version")
    assert len(stats._answers) == 4  # waiting: nobody read the figures
    local_app.get("/api/v1/version")
    assert len(stats._answers) == 0


# -- two worker processes ---------------------------------------------------------------------

@pytest.fixture
def two_workers(migrated_db, db_url, tmp_path):
    """``gunicorn -w 2`` as docs/operator/logs-and-stats.md runs it for /metrics: the hooks, a multiprocess directory, flushes every
    second. Its base URL and metrics directory."""
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    if not os.path.exists(gunicorn):
        pytest.fail("gunicorn is a test dependency: pip install -e '.[test]'")
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"a previous run's")  # emptied by the master as it starts
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"STATS": {"flush_seconds": 1, "metrics_dir": str(metrics_dir)}}))
    port = free_port()
    process = subprocess.Popen(
        [gunicorn, "-c", "python:nailgun_host.gunicorn_hooks", "-w", "2", "--no-control-socket",
         "--graceful-timeout", "5", "-b", "127.0.0.1:{0}".format(port), "nailgun_host.wsgi:application"],
        env=dict(os.environ, NAILGUN_DB_URL=db_url, NAILGUN_CONFIG=str(config)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        time.sleep(0.1)
    yield "http://127.0.0.1:{0}".format(port), metrics_dir
    stop_process(process)
    shutil.rmtree(metrics_dir, ignore_errors=True)


def test_stats_and_metrics_show_the_requests_of_a_run_through_two_workers(two_workers):
    url, metrics_dir = two_workers

    def get(_):
        return requests.get(url + "/api/v1/clusters/", headers={"Connection": "close"}, timeout=10).ok

    def answered_by():  # each worker writes its own files, named by its pid
        return {os.path.basename(path) for path in glob.glob(str(metrics_dir / "counter_*.db"))}

    sent, deadline = 0, time.monotonic() + 60
    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # while a sync worker is busy, the other one accepts
        while sent < 60 or (len(answered_by()) < 2 and time.monotonic() < deadline):
            assert all(pool.map(get, range(10)))
            sent += 10
    assert len(answered_by()) == 2, answered_by()
    assert not (metrics_dir / "counter_1.db").exists()

    found = samples(requests.get(url + "/metrics", timeout=10).text)
    assert total(found, "nailgun_requests_total", method="GET", code="200") == sent
    assert total(found, "nailgun_user_requests_total", user="anonymous") == sent
    assert total(found, "nailgun_request_duration_seconds_count") == sent

    time.sleep(3)  # every worker flushes each second
    answer = requests.get(url + "/api/v1/stats", timeout=10).json()
    entry = this_host(answer)
    assert entry["request_count"] == sent + 1  # and the scrape
    assert json.loads(entry["requests_per_user"]) == {"anonymous": sent + 1}
    assert entry["error_count"] == 0 and entry["average_response_time"] > 0


def test_stats_settings_the_server_cannot_use_are_refused():
    for below in (0, -1):  # one message for every value below the least
        with pytest.raises(ValueError, match=r"^STATS.flush_seconds must be a whole number of at least 1, not {0}$"
                           .format(below)):
            settings.reload(overrides={"STATS": {"flush_seconds": below}})
    with pytest.raises(ValueError, match="unknown settings STATS.multiproc_dir"):
        settings.reload(overrides={"STATS": {"multiproc_dir": "/run/nailgun/metrics"}})


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.lists(st.one_of(st.sampled_from(stats.BUCKETS), st.floats(0, 100, allow_nan=False),
                                     st.floats(0, 0.002, allow_nan=False)), max_size=60))
def test_the_fold_observes_durations_as_one_observe_each_would(durations):
    """The response-time histogram gets the answers a fold takes by bucket (``observe_all``): every bucket's count
    as ``observe`` of each answer would make it (bounds included in their bucket), and the same sum."""
    import prometheus_client

    def histogram():
        return prometheus_client.Histogram("d", "d", buckets=stats.BUCKETS,
                                           registry=prometheus_client.CollectorRegistry())

    one_by_one, folded = histogram(), histogram()
    for seconds in durations:
        one_by_one.observe(seconds)
    stats.observe_all(folded, durations)
    expected, found = ([s for s in list(h.collect())[0].samples if s.name != "d_created"]
                       for h in (one_by_one, folded))
    assert [(s.name, s.labels) for s in found] == [(s.name, s.labels) for s in expected]
    for got, want in zip(found, expected):
        assert got.value == pytest.approx(want.value, rel=1e-9, abs=1e-12), got.name
        if got.name != "d_sum":
            assert got.value == want.value, got
