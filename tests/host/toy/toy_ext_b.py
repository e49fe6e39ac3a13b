"""Toy extension B: one more URL and callbacks, node ones the way Nailgun's contract has them (one node each)."""
from nailgun_host.api.base import BaseHandler
from nailgun_host.extensions import BaseExtension

from toy_ext import EVENTS


class ToyBHandler(BaseHandler):
    def GET(self):
        return {"pong": "toy_b"}


class ToyB(BaseExtension):
    name = "toy_b"
    version = "0.2.0"
    description = "Toy extension B"
    urls = [{"uri": r"/toy/b/?", "handler": ToyBHandler}]

    @classmethod
    def on_cluster_delete(cls, cluster):
        EVENTS.append(("toy_b", "cluster_delete", cluster.id))

    @classmethod
    def on_remove_node_from_cluster(cls, node):
        EVENTS.append(("toy_b", "remove_node_from_cluster", (node.id, node.cluster_id)))

    @classmethod
    def on_node_update(cls, node):
        EVENTS.append(("toy_b", "node_update", (node.id, node.cluster_id)))
