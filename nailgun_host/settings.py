"""Settings: built-in defaults, overridden by a YAML file and the environment.

The file is the one given by ``--config`` or ``NAILGUN_CONFIG``; the database URL
may also come from ``NAILGUN_DB_URL``. Extensions read their own sections
(``CLUSTER_UPGRADE``, ``CONFIGDB``) from the same object.

Importing this module reads no file: ``settings`` holds the defaults until an entry
point (``nailgun-api``, ``nailgun-syncdb``, ``nailgun_host.wsgi``) calls ``reload``,
so ``--config`` is read instead of ``NAILGUN_CONFIG``, not after it.
"""
import copy
import os

import yaml

DEFAULTS = {
    "DATABASE_URL": None,  # None: the embedded SQLite file below
    "SQLITE_PATH": os.path.join(os.path.expanduser("~"), ".nailgun", "nailgun.db"),
    "MAX_REQUEST_BODY": 10 * 1024 * 1024,
    "DNS_DOMAIN": "domain.tld",
    "MASTER_IP": "10.20.0.2",
    "ADMIN_NETWORK": {
        "cidr": "10.20.0.0/24",
        "gateway": "10.20.0.1",
        "ip_ranges": [["10.20.0.3", "10.20.0.254"]],
    },
    "FEATURE_GROUPS": [],
    "CLUSTER_UPGRADE": {"transformations": {}},
    "CONFIGDB": {"max_versions": 100},  # versions kept per document; 0 keeps all
    "AUTH": {"enabled": False},
}


class Settings(dict):
    """A dict of settings with a ``reload`` that starts again from the defaults."""

    def reload(self, path=None, overrides=None):
        self.clear()
        self.update(copy.deepcopy(DEFAULTS))
        path = path or os.environ.get("NAILGUN_CONFIG")
        if path:
            with open(path) as stream:
                loaded = yaml.safe_load(stream) or {}
            if not isinstance(loaded, dict):
                raise ValueError("{0} is not a YAML mapping of setting names".format(path))
            self.update(loaded)
        if os.environ.get("NAILGUN_DB_URL"):
            self["DATABASE_URL"] = os.environ["NAILGUN_DB_URL"]
        self.update(overrides or {})
        return self

    @property
    def database_url(self):
        if self.get("DATABASE_URL"):
            return self["DATABASE_URL"]
        return "sqlite:///" + self["SQLITE_PATH"]


settings = Settings(copy.deepcopy(DEFAULTS))
