"""An environment whose id is a cluster's: nodes by id or FQDN, host callbacks, the spec's use cases."""
import pytest

from nailgun_ext_configdb.models import Document
from tests.configdb.conftest import API

ASTUTE = {"deployment_id": 1, "uid": "1", "nova": {"debug": False, "workers": 4},
          "nodes": [{"fqdn": "node-1.domain.tld", "role": "controller"}]}


@pytest.fixture
def linked(cdb, env):
    """Cluster with two nodes, a third node elsewhere, and the Fuel data sources in a linked environment."""
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    other = env.create_cluster(name="other")
    stranger = env.create_node(cluster_id=other["id"], roles=["compute"])
    names = ["astute", "globals", "override/plugins", "override/configuration/node",
             "override/configuration/role", "override/configuration/cluster", "override/node"]
    comp = cdb.component("fuel", names)
    cdb.environment(["fuel"], id=cluster["id"])
    resources = {r["name"]: r["id"] for r in comp["resource_definitions"]}
    return cluster, env.nodes[0], env.nodes[1], stranger, resources


def node_level(node):
    return "nodes/{0}/".format(node["id"])


def test_use_cases_1_to_3(cdb, linked):
    cluster, node, _, _, resources = linked
    fqdn_level = "nodes/{0}/".format(node["fqdn"])
    # 1: upload a node's astute data (by name: follow the 308), get the whole resource by FQDN
    resp = cdb.app.put_json(cdb.url(cluster["id"], "astute", fqdn_level), ASTUTE, status=308)
    assert resp.headers["Location"].endswith(cdb.url(cluster["id"], resources["astute"], fqdn_level))
    cdb.app.put_json(resp.headers["Location"], ASTUTE, status=204)
    assert cdb.get(cluster["id"], "astute", fqdn_level, query="effective").json == ASTUTE
    # 2: one key
    assert cdb.get(cluster["id"], "astute", fqdn_level, query="effective&key=deployment_id").json == 1
    # 3: override it at node level; the effective value changes, the uploaded value stays
    cdb.app.patch_json(cdb.url(cluster["id"], "astute", fqdn_level, "overrides") + "/keys/set",
                       [["deployment_id", 2]], status=204)
    assert cdb.get(cluster["id"], "astute", fqdn_level, query="effective&key=deployment_id").json == 2
    assert cdb.get(cluster["id"], "astute", node_level(node), query="key=deployment_id").json == 1
    assert cdb.get(cluster["id"], "astute", fqdn_level, query="effective").json == dict(ASTUTE, deployment_id=2)


def test_node_level_values_are_stored_under_the_node_id(cdb, linked, session):
    cluster, node, _, _, resources = linked
    cdb.put(cluster["id"], resources["globals"], {"k": 1}, levels="nodes/{0}/".format(node["fqdn"]))
    assert [d.level_path for d in session.query(Document)] == ["nodes/{0}".format(node["id"])]
    assert cdb.get(cluster["id"], "globals", node_level(node)).json == {"k": 1}
    lookup = cdb.get(cluster["id"], "globals", "nodes/{0}/".format(node["fqdn"]), query="effective&show_lookup")
    assert lookup.json == {"k": [1, "/nodes/{0}/".format(node["id"]), "values"]}


def test_unknown_node_and_node_of_another_cluster_are_404(cdb, linked, session):
    cluster, _, _, stranger, resources = linked
    for value in ("999", "node-999.domain.tld"):
        for method in ("get", "put_json"):
            args = (cdb.url(cluster["id"], "astute", "nodes/{0}/".format(value)),) + (({},) if method == "put_json" else ())
            resp = getattr(cdb.app, method)(*args, status=404)
            assert resp.json["message"] == "Cannot find a node with the given identifier {0}".format(value)
    for value in (stranger["id"], stranger["fqdn"]):
        resp = cdb.get(cluster["id"], resources["astute"], "nodes/{0}/".format(value), query="effective", status=404)
        assert resp.json["message"] == "Node {0} not assigned to cluster {1}".format(value, cluster["id"])
    assert session.query(Document).count() == 0


def test_deleting_the_cluster_deletes_its_environment(cdb, linked, env):
    cluster, node, _, _, resources = linked
    cdb.put(cluster["id"], resources["astute"], ASTUTE, levels=node_level(node))
    env.app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    cdb.app.get(API + "/environments/{0}".format(cluster["id"]), status=404)
    assert cdb.app.get(API + "/environments").json == []


def _stored_levels(session):
    session.expire_all()
    return sorted({d.level_path for d in session.query(Document)})


def _fill(cdb, cluster, nodes, resources):
    cdb.put(cluster["id"], resources["astute"], {"root": 1})
    for node in nodes:
        cdb.put(cluster["id"], resources["astute"], {"n": node["id"]}, levels=node_level(node))
        cdb.put(cluster["id"], resources["override/node"], {"o": 1}, levels=node_level(node), kind="overrides")


def test_deleting_a_node_deletes_its_level_values(cdb, linked, env, session):
    cluster, first, second, _, resources = linked
    _fill(cdb, cluster, [first, second], resources)
    env.app.delete("/api/v1/nodes/{0}/".format(first["id"]), status=204)
    assert _stored_levels(session) == ["", "nodes/{0}".format(second["id"])]


def test_deleting_nodes_in_bulk_deletes_their_level_values(cdb, linked, env, session):
    cluster, first, second, _, resources = linked
    _fill(cdb, cluster, [first, second], resources)
    env.app.delete("/api/v1/nodes/?ids={0},{1}".format(first["id"], second["id"]), status=204)
    assert _stored_levels(session) == [""]


def test_removing_a_node_from_its_cluster_deletes_its_level_values(cdb, linked, env, session):
    cluster, first, second, _, resources = linked
    _fill(cdb, cluster, [first, second], resources)
    env.app.post_json("/api/v1/clusters/{0}/unassignment/".format(cluster["id"]), [{"id": second["id"]}])
    assert _stored_levels(session) == ["", "nodes/{0}".format(first["id"])]


def test_a_node_id_under_another_level_name_is_kept(cdb, env, session):
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}])
    node = env.nodes[0]
    cdb.component("c", ["r"])
    cdb.environment(["c"], id=cluster["id"], levels=["rack", "nodes"])
    cdb.put(cluster["id"], "1", {"rack": 1}, levels="rack/{0}/".format(node["id"]))
    cdb.put(cluster["id"], "1", {"node": 1}, levels="rack/{0}/nodes/{0}/".format(node["id"]))
    env.app.delete("/api/v1/nodes/{0}/".format(node["id"]), status=204)
    assert _stored_levels(session) == ["rack/{0}".format(node["id"])]


def test_unlinked_environment_keeps_free_form_node_values(cdb, env):
    env.create(nodes_kwargs=[{"roles": ["compute"]}])
    cdb.component("c", ["r"])
    free = cdb.environment(["c"], id=50)
    cdb.put(free["id"], "1", {"free": True}, levels="nodes/node-77.example/")
    assert cdb.get(free["id"], "r", "nodes/node-77.example/").json == {"free": True}


# -- linked only when asked (issue 9, item 6) ---------------------------------------------------

def test_fuel2_upload_flow_links_the_environment(cdb, linked):
    cluster = linked[0]
    assert cdb.app.get(API + "/environments/{0}".format(cluster["id"])).json["linked"] is True


def test_a_cluster_of_the_same_id_does_not_link_an_environment_by_coincidence(cdb, env):
    cdb.component("c", ["r"])
    free = cdb.environment(["c"])
    assert free["linked"] is False
    cdb.put(free["id"], "1", {"free": True}, levels="nodes/node-77.example/")
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}])
    assert cluster["id"] == free["id"]  # the coincidence
    assert cdb.get(free["id"], "r", "nodes/node-77.example/").json == {"free": True}
    env.app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    assert cdb.app.get(API + "/environments/{0}".format(free["id"])).json == dict(free, revision=1)
    assert cdb.get(free["id"], "r", "nodes/node-77.example/").json == {"free": True}


def test_linked_false_keeps_an_environment_of_a_cluster_id_free(cdb, env):
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}])
    cdb.component("c", ["r"])
    free = cdb.environment(["c"], id=cluster["id"], linked=False)
    cdb.put(free["id"], "1", {"n": 1}, levels="nodes/{0}/".format(env.nodes[0]["fqdn"]))
    env.app.delete("/api/v1/nodes/{0}/".format(env.nodes[0]["id"]), status=204)
    env.app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    assert cdb.get(free["id"], "r", "nodes/{0}/".format(env.nodes[0]["fqdn"])).json == {"n": 1}


@pytest.mark.parametrize("body", [{"linked": True}, {"id": 40, "linked": True}])
def test_only_an_existing_clusters_id_can_be_linked(cdb, env, body, session):
    cdb.component("c", ["r"])
    resp = cdb.app.post_json(API + "/environments", dict(body, components=["c"], hierarchy_levels=["nodes"]),
                             status=400)
    assert resp.json["message"] == "Only an environment created with an existing cluster's id can be linked to it"
    assert cdb.app.get(API + "/environments").json == []


def test_whether_linked_cannot_change(cdb, linked):
    cluster = linked[0]
    url = API + "/environments/{0}".format(cluster["id"])
    cdb.app.put_json(url, {"linked": False}, status=400)
    cdb.app.put_json(url, {"linked": True}, status=200)
    assert cdb.app.get(url).json["linked"] is True
