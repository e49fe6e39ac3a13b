"""Clusters with secrets, served with authentication on, for the secrets tests of the host and the upgrade.

Four identities in local mode, each with its own ``webtest.TestApp`` on one application:
``admin`` and ``hiera`` may read secrets (policy ``nailgun:read_secrets``), ``member`` may
write but not read them, ``reader`` only reads. A release holds editable password defaults
(one of type password, one only secret-named) the clusters made from it start with.
"""
import base64
import copy

import bcrypt
import sqlalchemy as sa
import webtest
import yaml
from cryptography.fernet import Fernet

from nailgun_host.app import build_wsgi
from nailgun_host.settings import settings

#: user: (password, roles)
USERS = {"admin": ("admin-pw", ["admin"]), "member": ("member-pw", ["member"]),
         "reader": ("reader-pw", ["reader"]), "hiera": ("hiera-pw", ["reader", "hiera"])}
#: editable defaults of the release: clear to whoever may read secrets, masked for the others
DEFAULT_PASSWORD = "Default-Pw-7f3a9c2e"
DEFAULT_SECRET_KEY = "Ceph-Secret-Default-5b8d1e"
EDITABLE = {
    "service": {"metadata": {"label": "Service"},
                "admin_pw": {"type": "password", "value": DEFAULT_PASSWORD, "label": "Password"},
                "ceph_secret_key": {"type": "text", "value": DEFAULT_SECRET_KEY, "label": "Key"},
                "user": {"type": "text", "value": "svc", "label": "User"}},
}


def release_body(name, version, editable=None):
    """A release whose defaults (from the host's fixture) gain the ``service`` section."""
    from nailgun_host.objects.release import release_defaults

    metadata = release_defaults()["attributes_metadata"]
    metadata["editable"].update(copy.deepcopy(EDITABLE if editable is None else editable))
    return {"name": name, "version": version, "operating_system": "Ubuntu", "attributes_metadata": metadata}


def write_users_file(path):
    content = {"token_secret": Fernet.generate_key().decode(), "users": {
        name: {"password": bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode(), "roles": roles}
        for name, (password, roles) in USERS.items()}}
    path.write_text(yaml.safe_dump(content))
    return path


def identity_apps(tmp_path):
    """{user: TestApp sending that user's Basic credentials}, on one application in local mode."""
    users_file = write_users_file(tmp_path / "users.yaml")
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": str(users_file)},
                               "DATABASE_URL": settings["DATABASE_URL"]})
    wsgi = build_wsgi()
    return {name: webtest.TestApp(wsgi, extra_environ={"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(
        "{0}:{1}".format(name, password).encode()).decode()}) for name, (password, _roles) in USERS.items()}


def database_text(engine):
    """Every row of every table as text, as a dump of the database holds it (sealed values as tokens)."""
    meta = sa.MetaData()
    meta.reflect(engine)
    with engine.connect() as connection:
        return "\n".join(str(tuple(row)) for table in meta.sorted_tables
                         for row in connection.execute(table.select()))


def generated_secrets(generated):
    """The generated credentials (passwords, tokens, uuids) of a cluster: its long opaque string leaves."""
    found = []
    stack = [generated]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and len(value) >= 16 and "/" not in value:
            found.append(value)
    return found
