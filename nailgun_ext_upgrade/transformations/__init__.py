"""Pluggable transformations that carry data of one Fuel version over to the next.

Each object type (``cluster``, ``vip``, ``volumes``) has a ``Manager`` whose default
configuration names, per Fuel version, the transformers to run. A transformer is a
function ``data -> data`` registered in the stevedore namespace
``nailgun.cluster_upgrade.transformations.<object>.<version>``, so another package can add
its own; ``settings["CLUSTER_UPGRADE"]["transformations"][<object>][<version>]`` replaces
the default list of a version. ``Manager().apply(from, to, data)`` runs every version ``v``
with ``from < v <= to`` in real version order (10.0 after 9.0), each output feeding the next.
"""
import copy

import stevedore

from nailgun_host.public import parse_version, settings

NAMESPACE = "nailgun.cluster_upgrade.transformations.{0}.{1}"


def _reraise(_manager, entry_point, exc):
    raise exc


def get_config(name, default_config):
    """The default {version: [transformer names]} with the settings' lists put in their place."""
    config = copy.deepcopy(default_config)
    overrides = (settings.get("CLUSTER_UPGRADE") or {}).get("transformations") or {}
    config.update(copy.deepcopy(overrides.get(name) or {}))
    return config


def load_transformers(name, config):
    """[(version, [functions])] in version order; an unknown name raises KeyError."""
    result = []
    for version, names in config.items():
        manager = stevedore.ExtensionManager(NAMESPACE.format(name, version),
                                             on_load_failure_callback=_reraise)
        plugins = {ext.name: ext.plugin for ext in manager}
        missing = [n for n in names if n not in plugins]
        if missing:
            raise KeyError("Unknown {0} transformations for version {1}: {2}".format(
                name, version, ", ".join(missing)))
        result.append((version, [plugins[n] for n in names]))
    result.sort(key=lambda item: parse_version(item[0]))
    return result


class Manager:
    """The transformations of one object type; subclasses set ``name`` and ``default_config``."""

    name = None
    default_config = {}

    def __init__(self):
        self.transformers = load_transformers(self.name, get_config(self.name, self.default_config))

    def apply(self, from_version, to_version, data):
        """``data`` carried from ``from_version`` to ``to_version``; the input is left untouched."""
        low, high = parse_version(from_version), parse_version(to_version)
        data = copy.deepcopy(data)
        for version, functions in self.transformers:
            if low < parse_version(version) <= high:
                for function in functions:
                    data = function(data)
        return data
