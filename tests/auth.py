"""A ``nailgun-api`` process with authentication on: keystone or local mode, over HTTP or HTTPS.

The local users file holds the same users, passwords and roles as the test Keystone
(tests/keystone.py), so one test body runs against either mode.
"""
import base64
import os
import tempfile
import time

import bcrypt
import yaml
from cryptography.fernet import Fernet

from tests.conftest import LiveServer
from tests.keystone import USERS

#: roles in project admin of the users both modes know (the nailgun service user is Keystone's only)
ROLES = {"admin": ["admin"], "member": ["member"], "reader": ["reader"], "puppet": ["reader", "service"],
         "hiera": ["reader", "hiera"]}
LOCAL_USERS = {name: USERS[name] for name in ROLES}


def basic(user, password=None):
    """The ``Authorization`` header of HTTP Basic for ``user`` (its test password by default)."""
    password = USERS[user] if password is None else password
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


def write_users_file(path, users=None):
    """A local-mode users file (mode 0600, bcrypt at its lowest cost) with ``users`` {name: (password, roles)}."""
    users = users or {name: (LOCAL_USERS[name], ROLES[name]) for name in ROLES}
    content = {"token_secret": Fernet.generate_key().decode(), "users": {
        name: {"password": bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode(), "roles": list(roles)}
        for name, (password, roles) in users.items()}}
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        yaml.safe_dump(content, f)
    return path


def edit_users_file(path, text):
    """Rewrite the users file in place, as an operator's editor does, and wait ``local.LOOK_SECONDS``: a server
    looks at the file that often, so an edit by other means than ``nailgun-users`` counts within that time."""
    from nailgun_host.auth import local

    with open(path, "wb" if isinstance(text, bytes) else "w") as stream:
        stream.write(text)
    time.sleep(local.LOOK_SECONDS)


def local_settings(**extra):
    """The ``AUTH`` settings of local mode; ``auth_server`` writes the users file unless one is named."""
    return dict({"method": "local", "realm": "nailgun"}, **extra)


def auth_server(db_url, auth_settings, tls=None, directory=None, sections=None):
    """A started ``LiveServer`` whose settings file holds ``AUTH: auth_settings`` (and the other ``sections``).

    ``tls``: the ``tls`` fixture's material, served over HTTPS. The server's files (settings,
    users file, log) are in ``directory`` (a new temporary one by default): ``server.config_file``,
    ``server.users_file`` (local mode), ``server.log_path``.
    """
    directory = directory or tempfile.mkdtemp(prefix="nailgun-auth-")
    auth = dict(auth_settings)
    if auth.get("method") == "local" and not auth.get("users_file"):
        auth["users_file"] = write_users_file(os.path.join(directory, "users.yaml"))
    config_file = os.path.join(directory, "nailgun.yaml")
    with open(config_file, "w") as f:
        yaml.safe_dump(dict(sections or {}, AUTH=auth), f)
    extra_args = ["--cert-file", tls.cert_file, "--key-file", tls.key_file] if tls else []
    server = LiveServer(db_url, env={"NAILGUN_CONFIG": config_file}, extra_args=extra_args,
                        log=os.path.join(directory, "nailgun-api.log"))
    server.config_file, server.users_file = config_file, auth.get("users_file")
    if auth.get("method") == "local":
        LiveServer.keeping_token_keys.append(server)
    return server
