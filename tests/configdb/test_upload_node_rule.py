"""``config upload`` refuses, before any PUT, exactly the node names the server's rule (``objects.levels``) refuses
in a linked environment, and names that reach one node twice (the later upload would replace the other's): the
client's check and the server's resolution agree on any names (issue 26: one rule for every client)."""
import itertools

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_ext_configdb.cli.paths import ConfigDBError
from nailgun_ext_configdb.cli.upload import Uploader

API = "/api/v1/"
_writes = itertools.count()


class _Client:
    """The Uploader's client over the in-process app."""

    def __init__(self, app):
        self.app = app

    def get(self, path, params=None):
        return self.app.get(API + path, params=params or {}).json


def _stored_under(app, cdb, cluster_id, resource, name):
    """The level path the server stores a write at node ``name`` under, or None when it refuses the name."""
    since = app.get("{0}config/environments/{1}".format(API, cluster_id)).json["revision"]
    answer = cdb.put(cluster_id, resource, {"write": next(_writes)}, levels="nodes/{0}/".format(name), status="*")
    if answer.status_int == 404:
        return None
    assert answer.status_int == 204, answer
    [change] = app.get("{0}config/environments/{1}/changes?since={2}".format(API, cluster_id, since)).json["changes"]
    return change["level"]


def _names(nodes):
    ids = [str(node["id"]) for node in nodes]
    fqdns = [node["fqdn"] for node in nodes]
    return st.lists(st.sampled_from(ids + ["0" + i for i in ids] + fqdns + [f.upper() for f in fqdns] + [
        "999", "0", "node-999.domain.tld", "x"]), min_size=1, max_size=4, unique=True)


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_upload_refuses_what_the_server_refuses_or_what_names_one_node_twice(app, cdb, env, data):
    if not env.clusters:
        env.create(nodes_kwargs=[{}, {}])
        env.create_node()  # in no cluster: the linked environment refuses it
        cdb.component("fuel", ["astute"])
        cdb.environment(["fuel"], id=env.clusters[0]["id"])
    cluster_id = env.clusters[0]["id"]
    resource = app.get(API + "config/components").json[0]["resource_definitions"][0]["id"]
    names = data.draw(_names(env.nodes))
    stored = [_stored_under(app, cdb, cluster_id, resource, name) for name in names]
    uploader = Uploader(_Client(app), cluster_id)
    uploader.linked = True
    try:
        uploader.check_nodes(names)
        refused = None
    except ConfigDBError as exc:
        refused = str(exc)
    if None in stored:
        assert refused is not None and "has no node" in refused, (names, stored)
        assert set(refused.split("has no node ")[1].split(" (")[0].split(", ")) == {
            name for name, level in zip(names, stored) if level is None}
    elif len(set(stored)) < len(stored):
        assert refused is not None and "name the same node" in refused, (names, stored)
    else:
        assert refused is None, (names, stored)
