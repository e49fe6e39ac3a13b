"""Helpers for ConfigDB API tests.

The suite runs once per storage driver: ``run_tests.sh`` runs it again with
``NAILGUN_CONFIGDB_STORAGE=git`` (and ``NAILGUN_CONFIGDB_GIT_ROOT``), which the host's settings read,
so the test process and every server it starts use the git driver.
"""
import os
import subprocess

import pytest
import sqlalchemy as sa

API = "/api/v1/config"
#: the storage driver this run tests
STORAGE = os.environ.get("NAILGUN_CONFIGDB_STORAGE") or "sql"


def stored_texts(session, history=True):
    """The content of every stored document (and of every version, with ``history``) as it is kept at rest:
    the database's JSON text, or the git blob as the real ``git`` reads it; none is opened."""
    from nailgun_host.settings import settings

    texts = []
    tables = ("configdb_documents", "configdb_document_versions") if history else ("configdb_documents",)
    for table in tables:
        environment = "environment_id" if table == "configdb_documents" else (
            "(SELECT environment_id FROM configdb_documents d WHERE d.id = document_id)")
        rows = session.execute(sa.text("SELECT CAST(data AS TEXT), storage_ref, {0} FROM {1}".format(
            environment, table))).all()
        assert rows, table
        for data, ref, environment_id in rows:
            if ref is None:
                texts.append(data)
                continue
            git_dir = os.path.join(settings["CONFIGDB"]["git_root"], "{0}.git".format(environment_id))
            texts.append(subprocess.run(["git", "--git-dir", git_dir, "cat-file", "blob", ref], check=True,
                                        capture_output=True, text=True).stdout)
    session.rollback()
    return texts


class ConfigAPI:
    """Thin helpers over the WebTest app for the /config endpoints."""

    def __init__(self, app):
        self.app = app

    def component(self, name="comp1", resources=("resource1",), **extra):
        body = {"name": name, "resource_definitions": [
            r if isinstance(r, dict) else {"name": r, "content": {}} for r in resources]}
        body.update(extra)
        return self.app.post_json(API + "/components", body, status=201).json

    def environment(self, components, levels=("nodes",), **extra):
        body = {"components": list(components), "hierarchy_levels": list(levels)}
        body.update(extra)
        return self.app.post_json(API + "/environments", body, status=201).json

    @staticmethod
    def url(env_id, resource, levels="", kind="values"):
        return "{0}/environments/{1}/{2}resources/{3}/{4}".format(API, env_id, levels, resource, kind)

    def put(self, env_id, resource, data, levels="", kind="values", **kwargs):
        return self.app.put_json(self.url(env_id, resource, levels, kind), data, **dict({"status": 204}, **kwargs))

    def get(self, env_id, resource, levels="", kind="values", query="", **kwargs):
        url = self.url(env_id, resource, levels, kind) + (("?" + query) if query else "")
        return self.app.get(url, **kwargs)


def read_cache_of(testapp):
    """The ``nailgun_platform.read_cache.ReadCache`` among the middlewares of a ``build_wsgi`` WebTest app."""
    from nailgun_platform.read_cache import ReadCache

    layer = testapp.app
    for _ in range(10):
        if isinstance(layer, ReadCache):
            return layer
        closure = getattr(layer, "__closure__", None) or ()
        layer = getattr(layer, "app", None) or next(
            (c.cell_contents for c in closure if callable(c.cell_contents)), None)
    raise LookupError("no read cache in front of this application")


@pytest.fixture
def cdb(app):
    return ConfigAPI(app)


@pytest.fixture
def demo(cdb):
    """tuning-box's demo setup: comp1 with resource1 and slashed/resource, env 1 over nodes."""
    component = cdb.component("comp1", ["resource1", "slashed/resource"])
    environment = cdb.environment(["comp1"])
    return component, environment
