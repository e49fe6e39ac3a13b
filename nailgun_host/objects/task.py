"""Tasks: provisioning and deployment recorded here, carried out by the orchestrator."""
import datetime

from nailgun_host import errors
from nailgun_host.db import db
from nailgun_host.db.models import Task
from nailgun_host.objects import network, serializers
from nailgun_host.orchestrator import get_orchestrator

ACTIVE = ("pending", "running")
CLUSTER_TASKS = ("provision", "deployment", "deploy")


def check_no_running_task(cluster):
    running = (db.query(Task.id, Task.name).filter(
        Task.cluster_id == cluster.id, Task.name.in_(CLUSTER_TASKS), Task.status.in_(ACTIVE))
        .first())
    if running is not None:
        raise errors.RunningTaskExists(
            "Task '{0}' (id {1}) is already running for environment {2}".format(
                running.name, running.id, cluster.id))


def _start(name, cluster):
    task = Task(name=name, cluster_id=cluster.id, status="pending",
                time_start=datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))
    db.add(task)
    db.flush()
    return task


def _run(name, cluster, nodes, method, respond_to, node_status, build_args):
    """Record a task, hand its message to the orchestrator, mark nodes and cluster busy."""
    check_no_running_task(cluster)
    network.assign_vips(cluster)
    task = _start(name, cluster)
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


def to_dict(task):
    return {
        "id": task.id, "uuid": task.uuid, "name": task.name, "cluster": task.cluster_id,
        "status": task.status, "progress": task.progress, "message": task.message,
        "result": task.result, "parent_id": task.parent_id, "dry_run": task.dry_run,
        "graph_type": task.graph_type,
        "time_start": task.time_start.isoformat() if task.time_start else None,
        "time_end": task.time_end.isoformat() if task.time_end else None,
    }
