"""Where ConfigDB's definitions and documents are kept: the store's drivers.

A driver is a stevedore plugin of the group ``nailgun_configdb.storage`` chosen by
``CONFIGDB.storage`` (``sql``, the default, or ``git``); only the stores call ``driver()``.
"""
import threading

from stevedore import driver as stevedore_driver
from stevedore import exception

from nailgun_host.public import errors
from nailgun_ext_configdb import settings_section

NAMESPACE = "nailgun_configdb.storage"
DEFAULT = "sql"

_loaded = {}
_loading = threading.Lock()


def chosen():
    """The name of the driver the settings choose."""
    return settings_section.value("storage") or DEFAULT


def driver():
    """The chosen driver, loaded once per process; 503 when the settings name no installed one."""
    name = chosen()
    found = _loaded.get(name)
    if found is None:
        with _loading:
            try:
                found = _loaded.setdefault(name, stevedore_driver.DriverManager(
                    NAMESPACE, name, invoke_on_load=True).driver)
            except exception.NoMatches:
                raise errors.ServiceUnavailable("CONFIGDB.storage names no installed storage driver: {0}".format(
                    name))
    return found
