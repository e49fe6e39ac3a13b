"""ConfigDB's section of the settings file, ``CONFIGDB``: declared to the host through the contract
(``ConfigDBExtension.settings_sections``), which merges it, reads its environment variables and
refuses a settings file whose section cannot work.
"""
from nailgun_host.public import settings

NAME = "CONFIGDB"
DEFAULTS = {
    "max_versions": 100,  # versions kept per document; 0 keeps all
    "max_changes": 10000,  # change-feed entries kept per environment (whole revisions); 0 keeps all
    "storage": "sql",  # the storage driver: sql or git (docs/operator/storage-drivers.md)
    "git_root": "/var/lib/fuel-nailgun-extensions/configdb-git",  # the git driver's repositories
}
#: environment variables over the file's values
ENVIRONMENT = {"NAILGUN_CONFIGDB_STORAGE": (NAME, "storage"), "NAILGUN_CONFIGDB_GIT_ROOT": (NAME, "git_root")}


def check(section):
    """ValueError unless the storage driver and its root are named."""
    for key in ("storage", "git_root"):
        if not (isinstance(section.get(key), str) and section[key]):
            raise ValueError("CONFIGDB.{0} must be a non-empty string, not {1!r}".format(key, section.get(key)))


def value(key):
    """``CONFIGDB.<key>`` as the settings say, its default when they do not (a section replaced by a test)."""
    return (settings.get(NAME) or {}).get(key, DEFAULTS[key])
