"""Helpers for ConfigDB API tests."""
import pytest

API = "/api/v1/config"


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


@pytest.fixture
def cdb(app):
    return ConfigAPI(app)


@pytest.fixture
def demo(cdb):
    """tuning-box's demo setup: comp1 with resource1 and slashed/resource, env 1 over nodes."""
    component = cdb.component("comp1", ["resource1", "slashed/resource"])
    environment = cdb.environment(["comp1"])
    return component, environment
