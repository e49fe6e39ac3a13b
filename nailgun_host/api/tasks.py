"""/tasks: what was sent to the orchestrator, and how it went."""

from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, filter_by_cluster, query_param, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Task
from nailgun_host.objects import task as task_obj


class TaskCollectionHandler(BaseHandler):
    def GET(self):
        query = db.query(Task).order_by(Task.id)
        query = filter_by_cluster(query, Task.cluster_id)
        return [task_obj.to_dict(t) for t in query]


class TaskHandler(BaseHandler):
    def GET(self, task_id):
        return task_obj.to_dict(self.get_object_or_404(Task, task_id))

    def DELETE(self, task_id):
        task = self.get_object_or_404(Task, task_id)
        if task.status in task_obj.ACTIVE and query_param("force", "0") not in ("1", "true"):
            raise errors.InvalidData("Task {0} is still {1}; use ?force=1".format(task.id, task.status))
        db.delete(task)
        set_status(204)
