"""/tasks: what was sent to the orchestrator, and how it went."""
from nailgun_host.api.base import BaseHandler, filter_by_cluster, get_object_or_404, query, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Task
from nailgun_host.objects import task as task_obj


class TaskCollectionHandler(BaseHandler):
    def GET(self):
        tasks = filter_by_cluster(db.query(Task).order_by(Task.id), Task.cluster_id)
        return [task_obj.to_dict(t) for t in tasks]


class TaskHandler(BaseHandler):
    def GET(self, task_id):
        return task_obj.to_dict(get_object_or_404(Task, task_id))

    def DELETE(self, task_id):
        task_obj.delete(get_object_or_404(Task, task_id), force=query().get("force", "0") in ("1", "true"))
        set_status(204)
