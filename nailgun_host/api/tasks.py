"""/tasks and /transactions: what was sent to the orchestrator, and how it went.

``/transactions`` is the name python-fuelclient 11 reads for ``fuel2 task list|show|delete``
(Nailgun's ``TransactionCollectionHandler``): the same tasks, filtered by ``cluster_id``,
``statuses`` and ``transaction_types`` (task names), each a comma-separated list.
"""
from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, flag_param, id_param, list_param, set_status
from nailgun_host.objects import cluster as cluster_obj
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


class TransactionCollectionHandler(BaseHandler):
    def GET(self):
        cluster_id = id_param("cluster_id")
        if cluster_id is not None:
            cluster_obj.get(cluster_id)  # 404 for a cluster that does not exist, as Nailgun answers
        statuses = list_param("statuses")
        unknown = sorted(set(statuses) - set(task_obj.STATUSES))
        if unknown:
            raise errors.InvalidData("Unknown task statuses {0}; the statuses are {1}".format(
                ", ".join(unknown), ", ".join(task_obj.STATUSES)))
        tasks = task_obj.list_all(cluster_id, statuses=statuses, names=list_param("transaction_types"))
        return [task_obj.to_dict(t) for t in tasks]
