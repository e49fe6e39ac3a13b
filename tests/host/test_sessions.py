"""Configuration sessions (issue 12): the host's mechanism, through HTTP with the toy extension's documents.

The toy stages whole JSON documents held by a cluster (scope ``cluster``) or by a release standing in
for an extension's own environment (scope ``config``); see ``tests/host/toy/toy_sessions.py``.
"""
import pytest

from nailgun_host.settings import settings
from tests.factories import EnvironmentManager

API = "/api/v1"
HEADER = "X-Configuration-Session"


class Toy:
    """A client of one cluster's sessions and toy documents."""

    def __init__(self, app, cluster_id=None):
        self.app = app
        self.cluster_id = cluster_id or EnvironmentManager(app).create_cluster()["id"]
        self.prefix = "{0}/clusters/{1}".format(API, self.cluster_id)

    def open(self, status=200, **kwargs):
        return self.app.post_json(self.prefix + "/configure", kwargs, status=status).json if kwargs else \
            self.app.post(self.prefix + "/configure", status=status).json

    def put(self, name, data, session=None, status=200):
        headers = {HEADER: session} if session else {}
        return self.app.put_json("{0}/toy/docs/{1}/{2}".format(API, self.cluster_id, name), data,
                                 headers=headers, status=status)

    def get(self, name, session=None, status=200):
        headers = {HEADER: session} if session else {}
        return self.app.get("{0}/toy/docs/{1}/{2}".format(API, self.cluster_id, name), headers=headers,
                            status=status)

    def show(self, session, status=200):
        return self.app.get("{0}/sessions/{1}".format(self.prefix, session), status=status)

    def deploy(self, session, status=200):
        return self.app.post("{0}/sessions/{1}/deploy".format(self.prefix, session), status=status)

    def abandon(self, session, status=200):
        return self.app.delete("{0}/sessions/{1}".format(self.prefix, session), status=status)

    def diff(self, session, status=200):
        return self.app.get("{0}/sessions/{1}/diff".format(self.prefix, session), status=status)

    def deployments(self, query="", status=200):
        return self.app.get("{0}/deployments{1}".format(self.prefix, query), status=status)


@pytest.fixture
def toy(toy_app):
    return Toy(toy_app)


def test_seed_001_sequence_first_deploy_wins(toy):
    toy.put("nova", {"debug": False})
    a, b = toy.open(), toy.open()
    assert a["state"] == "open" and a["version"] == 1 and a["environment_type"] == "cluster"
    toy.put("nova", {"debug": True}, a["id"])
    toy.put("nova", {"debug": "maybe"}, b["id"])
    assert toy.get("nova").json == {"debug": False}
    assert toy.get("nova", a["id"]).json == {"debug": True}
    deployed = toy.deploy(a["id"]).json
    assert deployed["state"] == "deployed" and deployed["revision"] == 2
    assert deployed["documents"] == [{"document": {"type": "toy", "name": "nova"}, "changed_keys": ["debug"]}]
    refused = toy.deploy(b["id"], status=409).json
    assert refused["errors"] == [{"document": {"type": "toy", "name": "nova"}, "revision": 2, "author": "anonymous"}]
    assert "cannot deploy" in refused["message"]
    shown = toy.show(b["id"], status=403).json
    assert shown["errors"][0]["state"] == "invalid" and shown["errors"][0]["conflicts"] == refused["errors"]
    assert toy.get("nova").json == {"debug": True}
