"""``fuel2 config session open|list|show|diff|deploy|abandon --env E`` and ``config deployments --env E``.

The platform's session commands (``nailgun_platform.client``) on a ConfigDB environment's URL. An
environment linked to a cluster shares that cluster's sessions, so ``env session`` and ``config
session`` then show the same ones.
"""
from nailgun_platform import client
from nailgun_ext_configdb.cli.paths import ROOT


class ConfigEnvironment:
    env_help = "ID of the ConfigDB environment"

    def prefix(self, env):
        return "{0}environments/{1}".format(ROOT, env)


class ConfigSessionOpen(ConfigEnvironment, client.SessionOpen):
    """Open a configuration session on a ConfigDB environment (``-f value -c id`` prints just its id)."""


class ConfigSessionList(ConfigEnvironment, client.SessionList):
    """List the open configuration sessions of a ConfigDB environment."""


class ConfigSessionShow(ConfigEnvironment, client.SessionShow):
    """Show a configuration session of a ConfigDB environment and the documents it stages."""


class ConfigSessionDiff(ConfigEnvironment, client.SessionDiff):
    """Show what a session stages: an RFC 6902 operation per row, current -> staged, for each document."""


class ConfigSessionDeploy(ConfigEnvironment, client.SessionDeploy):
    """Deploy a session: all its staged documents at once, or nothing (409 names what changed meanwhile)."""


class ConfigSessionAbandon(ConfigEnvironment, client.SessionAbandon):
    """Abandon a session of a ConfigDB environment: its staged changes are dropped."""


class ConfigDeployments(ConfigEnvironment, client.Deployments):
    """List the deployed sessions of a ConfigDB environment, newest first: who, when, which documents."""

    env_positional = False


def document_label(descriptor):
    """How the commands name a ConfigDB document staged in a session (``nailgun_platform.client.documents``):
    ``values of astute at /nodes/5/``."""
    resource = descriptor.get("resource_name") or descriptor.get("resource")
    return "{0} of {1} at {2}".format(descriptor.get("kind"), resource, descriptor.get("level") or "/")
