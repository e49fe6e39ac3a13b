"""tuning-box's recorded demos (reference/configdb.md §10) replayed against us."""
import requests

DEMO_COMPONENT = {"name": "comp1", "resource_definitions": [
    {"name": "resource1", "content": {}}, {"name": "slashed/resource", "content": {}}]}
DEMO_ENVIRONMENT = {"name": "env1", "components": ["comp1"], "hierarchy_levels": ["nodes"]}


def test_api_demo(app):
    base = "/api/config/"
    app.post_json(base + "components", DEMO_COMPONENT, status=201)
    assert app.post_json(base + "environments", DEMO_ENVIRONMENT, status=201).json["id"] == 1
    for path in ("resource1", "slashed/resource", "1"):
        assert app.get(base + "environments/1/resources/{0}/values".format(path)).json == {}
    assert app.get(base + "environments/1/nodes/node-1.domain.tld/resources/1/values").json == {}
    app.put_json(base + "environments/1/resources/1/values", {"global_key": "global_value"}, status=204)
    app.put_json(base + "environments/1/nodes/node-1.domain.tld/resources/1/values", {"node_key": "node_value"},
                 status=204)
    root, node1 = base + "environments/1/resources/1/", base + "environments/1/nodes/node-1.domain.tld/resources/1/"
    node2 = base + "environments/1/nodes/node-2.domain.tld/resources/1/"
    assert app.get(root + "values").json == {"global_key": "global_value"}
    assert app.get(root + "values?effective").json == {"global_key": "global_value"}
    assert app.get(node1 + "values").json == {"node_key": "node_value"}
    assert app.get(node1 + "values?effective").json == {"global_key": "global_value", "node_key": "node_value"}
    app.put_json(root + "overrides", {"global_key": "global_override"}, status=204)
    assert app.get(node1 + "values?effective").json == {"global_key": "global_override", "node_key": "node_value"}
    app.put_json(root + "values", {"global_key": "global_value_new"}, status=204)
    assert app.get(root + "values?effective").json == {"global_key": "global_override"}
    assert app.get(root + "values").json == {"global_key": "global_value_new"}
    app.put_json(node1 + "overrides", {"global_key": "node_override"}, status=204)
    assert app.get(node1 + "values?effective").json == {"global_key": "node_override", "node_key": "node_value"}
    assert app.get(node2 + "values?effective").json == {"global_key": "global_override"}


def test_cli_demo_data_flow_over_real_http(live_server):
    """The fuel2 config demo's requests, by resource name, through a real server (requests follows the 308s)."""
    api = live_server.url + "/api/config/"
    assert requests.post(api + "components", json=DEMO_COMPONENT).status_code == 201
    assert requests.post(api + "environments", json=DEMO_ENVIRONMENT).status_code == 201
    root = api + "environments/1/resources/resource1/"
    node = api + "environments/1/nodes/1/resources/resource1/"

    def effective(prefix):
        resp = requests.get(prefix + "values?effective")
        assert resp.status_code == 200
        return resp.json()

    assert effective(root) == {}
    resp = requests.put(root + "values", json={"a": 1, "b": None})
    assert resp.status_code == 204 and [r.status_code for r in resp.history] == [308]
    assert effective(node) == {"a": 1, "b": None}
    assert requests.put(node + "values", json={"a": 2}).status_code == 204
    assert effective(node) == {"a": 2, "b": None}
    assert requests.patch(root + "overrides/keys/set", json=[["b", "s"]]).status_code == 204
    assert effective(root) == {"a": 1, "b": "s"}
    assert requests.put(root + "values", json={"a": 1, "b": "s3"}).status_code == 204
    assert effective(root) == {"a": 1, "b": "s"}
    assert requests.get(root + "values").json() == {"a": 1, "b": "s3"}
