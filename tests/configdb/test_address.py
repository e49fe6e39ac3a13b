"""A read resolves a document URL in one statement (``objects.address``), a write through the ORM under the
environment's lock (``environment.get``, ``pins.resolve``, ``levels.resolve``): for every URL both answer the same,
errors and their order included (environment, data source, levels, node)."""
import itertools
import urllib.parse

import pytest

from tests.configdb.conftest import API


@pytest.fixture
def world(cdb, env):
    """A linked environment (a cluster's, two nodes), an unlinked one, a node of another cluster; the data sources
    of a component both use, and one of a component they do not."""
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    other = env.create_cluster(name="other")
    stranger = env.create_node(cluster_id=other["id"], roles=["compute"])
    first = cdb.component("first", ["astute", "globals"])
    cdb.component("unused", ["elsewhere"])
    cdb.environment(["first"], id=cluster["id"])
    unlinked = cdb.environment(["first"], levels=["nodes", "racks"])
    nodes = env.nodes[:2]
    values = [str(node["id"]) for node in nodes] + [node["fqdn"] for node in nodes] + [
        str(stranger["id"]), stranger["fqdn"], "999", "node-999.domain.tld", "n1", "a\x00b", "x" * 1100]
    return {"environments": [str(cluster["id"]), str(unlinked["id"]), "999", "0", "0123"],
            "refs": [str(first["resource_definitions"][0]["id"]), "astute", "globals", "elsewhere", "999", "a\x00b"],
            "values": values}


def _url(environment, levels, ref, suffix=""):
    return "{0}/environments/{1}/{2}resources/{3}/values{4}".format(
        API, urllib.parse.quote(environment), urllib.parse.quote(levels), urllib.parse.quote(ref), suffix)


def test_reads_and_writes_resolve_every_url_alike(cdb, world):
    values = world["values"]
    shapes = [""] + ["nodes/{0}/".format(value) for value in values] + [
        "racks/r/", "nodes/{0}/racks/r/".format(values[0]), "nodes/{0}/racks/r/".format(values[2]),
        "nodes/{0}/nodes/{0}/".format(values[0]), "nodes/{0}/racks/r/x/y/".format(values[1])]
    seen = set()
    for environment, ref, levels in itertools.product(world["environments"], world["refs"], shapes):
        read = cdb.app.get(_url(environment, levels, ref) + "?effective", status="*")
        write = cdb.app.patch_json(_url(environment, levels, ref, "/keys/set"), [["probe", 1]], status="*")
        if read.status_int == 200:
            assert write.status_int == 204, (environment, ref, levels, write)
        else:
            assert (write.status_int, write.json["message"]) == (read.status_int, read.json["message"]), (
                environment, ref, levels)
        seen.add(read.status_int)
    assert seen == {200, 400, 404}


def test_a_read_resolves_environment_data_source_and_node_in_one_statement(cdb, world, env, query_counter):
    cluster = world["environments"][0]
    level = "nodes/{0}/".format(env.nodes[0]["fqdn"])
    with query_counter.counting():
        cdb.app.get(_url(cluster, level, "astute", "/history"))
    assert len([s for s in query_counter.statements if "configdb_environments" in s]) == 1
    assert not [s for s in query_counter.statements if s.lstrip().startswith("SELECT nodes.")]


def test_a_name_no_database_stores_names_no_data_source(cdb, world):
    """A NUL character in a data source's name: 404 as any unknown name, on PostgreSQL too (which refuses such a
    parameter: it was a 400 about invalid data there)."""
    for environment in world["environments"][:2]:
        for method in (cdb.app.get, lambda url, **kwargs: cdb.app.patch_json(url + "/keys/set", [], **kwargs)):
            answer = method(_url(environment, "", "a\x00b"), status=404)
            assert answer.json["message"].startswith("Data source a\x00b is not supported")
