"""Tasks: provisioning and deployment recorded here, carried out by the orchestrator.

Both directions of the seam to the orchestrator meet here: ``provision``/``deploy``
hand it a message (``orchestrator.get_orchestrator().cast``), and ``receive`` takes its
answer (Astute's ``provision_resp``/``deploy_resp``) and moves the task, its nodes and
the cluster on.
"""
import sqlalchemy as sa

from nailgun_host import errors
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import ACTIVE_TASK_STATUSES, CLUSTER_TASK_NAMES, Cluster, Node, Task
from nailgun_host.objects import network, serializers
from nailgun_host.orchestrator import get_orchestrator
from nailgun_platform import clock

ACTIVE = ACTIVE_TASK_STATUSES
FINISHED = ("ready", "error")
STATUSES = ACTIVE + FINISHED
CLUSTER_TASKS = CLUSTER_TASK_NAMES
#: what a node becomes when its task finishes well
NODE_DONE = {"provision": "provisioned", "deployment": "ready"}
#: what the cluster becomes when the task finishes well (Nailgun leaves a provisioned-only one partially deployed)
CLUSTER_DONE = {"provision": "partially_deployed", "deployment": "operational"}
#: the node error type when its task fails
NODE_ERROR_TYPE = {"provision": "provision", "deployment": "deploy"}


def get(task_id, lock=False):
    return get_or_404(Task, task_id, lock=lock)


def list_all(cluster_id=None, statuses=(), names=()):
    """The tasks in id order; each filter given narrows them (``statuses``, ``names``: any of)."""
    tasks = db.query(Task).order_by(Task.id)
    if cluster_id is not None:
        tasks = tasks.filter(Task.cluster_id == cluster_id)
    if statuses:
        tasks = tasks.filter(Task.status.in_(statuses))
    if names:
        tasks = tasks.filter(Task.name.in_(names))
    return tasks.all()


def check_no_running_task(cluster):
    """409 when a provision or deployment task is pending or running for the cluster.

    Callers hold the cluster's row lock, which orders them; the partial unique index
    ``tasks_one_active_per_cluster`` holds the rule for any path that does not.
    """
    running = (db.query(Task.id, Task.name).filter(
        Task.cluster_id == cluster.id, Task.name.in_(CLUSTER_TASKS), Task.status.in_(ACTIVE))
        .first())
    if running is not None:
        raise errors.RunningTaskExists(
            "Task '{0}' (id {1}) is already running for environment {2}".format(
                running.name, running.id, cluster.id))


def _add_active(task, cluster):
    """Insert the task; the index's refusal (a concurrent task won) is the 409 of the check."""
    try:
        with db.begin_nested():
            db.add(task)
    except sa.exc.IntegrityError:
        check_no_running_task(cluster)
        raise errors.RunningTaskExists("Another task is already running for environment {0}".format(cluster.id))


def _run(name, cluster, nodes, method, respond_to, node_status, build_args):
    """Record a task, hand its message to the orchestrator, mark nodes and cluster busy."""
    check_no_running_task(cluster)
    network.assign_vips(cluster)
    task = Task(name=name, cluster_id=cluster.id, status="pending", time_start=clock.now())
    _add_active(task, cluster)
    message = {"method": method, "respond_to": respond_to,
               "args": dict(build_args(), task_uuid=task.uuid)}
    for node in nodes:
        node.status = node_status
        node.progress = 0
    cluster.status = "deployment"
    get_orchestrator().cast(task, message)
    db.flush()
    return task


def provision(cluster, nodes):
    """One provisioning task for all the nodes; they become ``provisioning``."""
    return _run("provision", cluster, nodes, "native_provision", "provision_resp", "provisioning",
                lambda: {"provisioning_info": serializers.provisioning_info(cluster, nodes)})


def deploy(cluster, nodes):
    """One deployment task for the nodes, with the deployment info extensions shaped."""
    return _run("deployment", cluster, nodes, "task_deploy", "deploy_resp", "deploying",
                lambda: {"deployment_info": serializers.deployment_info(cluster, nodes)})


def receive(response):
    """The orchestrator's answer about a task: ``{"task_uuid", "status", "progress"?, "message"?}``.

    A ``running`` answer only records progress. A finished one (``ready`` or ``error``)
    ends the task: the nodes it was working on become ``provisioned`` or ``ready`` (or
    ``error`` with the task's error type), deployed roles stop being pending, and the
    cluster becomes ``partially_deployed`` or ``operational`` (or ``error``). Returns the task.
    """
    cluster_id = db.execute(sa.select(Task.cluster_id).where(Task.uuid == response["task_uuid"])).first()
    if cluster_id is not None and cluster_id[0] is not None:  # the lock order: the cluster row, then the task's
        db.get(Cluster, cluster_id[0], with_for_update={"of": Cluster}, populate_existing=True)
    task = db.query(Task).filter_by(uuid=response["task_uuid"]).with_for_update().populate_existing().first()
    if task is None:
        raise errors.ObjectNotFound("Task with uuid {0} was not found".format(response["task_uuid"]))
    status = response["status"]
    if status not in STATUSES:
        raise errors.InvalidData("Unknown task status '{0}'".format(status))
    task.status = status
    task.progress = 100 if status == "ready" else response.get("progress", task.progress)
    task.message = response.get("message", task.message)
    if status in FINISHED:
        task.time_end = clock.now()
        _finish_nodes(task, status == "ready")
    db.flush()
    return task


def _finish_nodes(task, succeeded):
    working = {"provision": "provisioning", "deployment": "deploying"}.get(task.name)
    nodes = db.query(Node).filter_by(cluster_id=task.cluster_id, status=working).all()
    for node in nodes:
        node.progress = 100 if succeeded else node.progress
        if succeeded:
            node.status, node.error_type = NODE_DONE[task.name], None
            if task.name == "deployment":
                node.roles = list(dict.fromkeys(node.roles + node.pending_roles))
                node.pending_roles, node.pending_addition = [], False
        else:
            node.status, node.error_type = "error", NODE_ERROR_TYPE[task.name]
    cluster = db.get(Cluster, task.cluster_id) if task.cluster_id is not None else None
    if cluster is not None:
        cluster.status = CLUSTER_DONE[task.name] if succeeded else "error"


def delete(task, force=False):
    """Remove a task's record; one the orchestrator may still be working on only when forced."""
    if task.status in ACTIVE and not force:
        raise errors.InvalidData("Task {0} is still {1}; use ?force=1".format(task.id, task.status))
    db.delete(task)
    db.flush()


def to_dict(task):
    return {
        "id": task.id, "uuid": task.uuid, "name": task.name, "cluster": task.cluster_id,
        "status": task.status, "progress": task.progress, "message": task.message,
        "result": task.result, "parent_id": task.parent_id, "dry_run": task.dry_run,
        "graph_type": task.graph_type,
        "time_start": task.time_start.isoformat() if task.time_start else None,
        "time_end": task.time_end.isoformat() if task.time_end else None,
    }
