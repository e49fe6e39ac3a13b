"""``fuel2 config session open|list|show|diff|deploy|abandon --env E`` and ``config deployments --env E``.

The host's session commands (``nailgun_host.client.sessions``) on a ConfigDB environment's URL. An
environment linked to a cluster shares that cluster's sessions, so ``env session`` and ``config
session`` then show the same ones.
"""
from nailgun_ext_configdb.cli.paths import ROOT
from nailgun_host.client import sessions


class ConfigEnvironment:
    env_help = "ID of the ConfigDB environment"

    def prefix(self, env):
        return "{0}environments/{1}".format(ROOT, env)


class ConfigSessionOpen(ConfigEnvironment, sessions.SessionOpen):
    """Open a configuration session on a ConfigDB environment (``-f value -c id`` prints just its id)."""


class ConfigSessionList(ConfigEnvironment, sessions.SessionList):
    """List the open configuration sessions of a ConfigDB environment."""


class ConfigSessionShow(ConfigEnvironment, sessions.SessionShow):
    """Show a configuration session of a ConfigDB environment and the documents it stages."""


class ConfigSessionDiff(ConfigEnvironment, sessions.SessionDiff):
    """Show what a session stages: an RFC 6902 operation per row, current -> staged, for each document."""


class ConfigSessionDeploy(ConfigEnvironment, sessions.SessionDeploy):
    """Deploy a session: all its staged documents at once, or nothing (409 names what changed meanwhile)."""


class ConfigSessionAbandon(ConfigEnvironment, sessions.SessionAbandon):
    """Abandon a session of a ConfigDB environment: its staged changes are dropped."""


class ConfigDeployments(ConfigEnvironment, sessions.Deployments):
    """List the deployed sessions of a ConfigDB environment, newest first: who, when, which documents."""

    env_positional = False
