"""Toy extension B: one more URL and a callback."""
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
