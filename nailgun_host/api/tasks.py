"""/tasks: what was sent to the orchestrator, and how it went."""
from nailgun_host.api.base import BaseHandler, flag_param, id_param, set_status
from nailgun_host.objects import task as task_obj


class TaskCollectionHandler(BaseHandler):
    def GET(self):
        return [task_obj.to_dict(t) for t in task_obj.list_all(id_param("cluster_id"))]


class TaskHandler(BaseHandler):
    def GET(self, task_id):
        return task_obj.to_dict(task_obj.get(task_id))

    def DELETE(self, task_id):
        task_obj.delete(task_obj.get(task_id), force=flag_param("force"))
        set_status(204)
