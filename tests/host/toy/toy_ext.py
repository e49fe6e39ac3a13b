"""Toy extension A: URLs, a pipeline, callbacks, a provided method and session hooks, for host tests."""
from nailgun_host import errors
from nailgun_host.api.base import BaseHandler
from nailgun_host.db import db
from nailgun_host.db.models import Release
from nailgun_host.extensions import BaseExtension, BasePipeline

import toy_sessions

EVENTS = []


class ToyPingHandler(BaseHandler):
    def GET(self):
        return {"pong": "toy_a"}

    def PATCH(self):
        return {"patched": True}


class ToyFailHandler(BaseHandler):
    """Writes a row, then fails: the row must not survive the request."""

    def POST(self, how):
        db.add(Release(name="half-written", version="1-1.0", operating_system="Ubuntu"))
        db.flush()
        if how == "invalid":
            raise errors.InvalidData("refused after a write")
        raise RuntimeError("a bug in an extension")


class ToyPipeline(BasePipeline):
    @classmethod
    def process_deployment_for_cluster(cls, cluster, data):
        data["toy_a"] = {"cluster": cluster.id}


def _recorder(event):
    def callback(cls, obj, *args):
        EVENTS.append(("toy_a", event, getattr(obj, "id", obj)))
    return classmethod(callback)


def _batch_recorder(event):
    def callback(cls, nodes):
        EVENTS.append(("toy_a", event, [(n.id, n.cluster_id) for n in nodes]))
    return classmethod(callback)


class ToyA(toy_sessions.ToySessions, BaseExtension):
    name = "toy_a"
    version = "0.1.0"
    description = "Toy extension A"
    provides = ["toy_answer"]
    urls = [{"uri": r"/toy/ping/?", "handler": ToyPingHandler},
            {"uri": r"/toy/fail/(invalid|crash)/?", "handler": ToyFailHandler}] + toy_sessions.URLS
    data_pipelines = [ToyPipeline]

    on_cluster_create = _recorder("cluster_create")
    on_cluster_delete = _recorder("cluster_delete")
    on_node_create = _recorder("node_create")
    on_node_update = _recorder("node_update")
    on_node_delete = _recorder("node_delete")
    on_remove_node_from_cluster = _recorder("remove_node_from_cluster")
    on_node_collection_delete = _recorder("node_collection_delete")
    on_remove_nodes_from_cluster = _batch_recorder("remove_nodes_from_cluster")
    on_nodes_update = _batch_recorder("nodes_update")

    @classmethod
    def toy_answer(cls, value):
        return value * 2
