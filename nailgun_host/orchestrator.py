"""The seam to the orchestrator (Astute in Fuel) that really provisions and deploys.

The orchestrator lives outside this package. The host hands it each task's message
through ``get_orchestrator().cast(task, message)``, and it answers, when a task makes
progress or finishes, through ``nailgun_host.objects.task.receive(response)`` (Astute's
``provision_resp``/``deploy_resp``), inside a transaction of its own. The default
implementation only records the message with the task, which is what tests assert on;
a real deployment plugs in its own object with ``set_orchestrator``.
"""


class RecordingOrchestrator:
    """Stores the message that would be sent in the task's ``cache``."""

    def cast(self, task, message):
        task.cache = message


_orchestrator = RecordingOrchestrator()


def get_orchestrator():
    return _orchestrator


def set_orchestrator(orchestrator):
    global _orchestrator
    _orchestrator = orchestrator or RecordingOrchestrator()
