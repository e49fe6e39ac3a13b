"""gunicorn's server hooks for ``/metrics`` across workers: ``gunicorn -c python:nailgun_host.gunicorn_hooks``.

In multiprocess mode every worker writes its metrics to files in ``STATS.metrics_dir`` (or
``PROMETHEUS_MULTIPROC_DIR``), and a dead worker's files stay: its counts are part of the host's
totals, which must never go down while the server runs. They must not outlive the server, though,
or a restarted one would start from the last one's counts: the master empties the directory as it
starts, before any worker writes.
"""
import glob
import os

from nailgun_host.settings import settings


def on_starting(server):
    settings.reload()
    directory = settings["STATS"]["metrics_dir"] or os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return
    os.makedirs(directory, mode=0o700, exist_ok=True)
    for path in glob.glob(os.path.join(directory, "*.db")):
        os.remove(path)
    server.log.info("Emptied the metrics directory %s", directory)
