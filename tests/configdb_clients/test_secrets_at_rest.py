"""Issue 11's acceptance: after the fixtures' /etc/hiera tree is uploaded and a cluster created, no secret
value is in clear in the database's files (SQLite) or in a ``pg_dump`` (PostgreSQL)."""
import glob
import os
import shutil
import sqlite3
import subprocess

import pytest
import sqlalchemy as sa

from nailgun_host.db.models import Cluster
from nailgun_platform import secrets
from nailgun_platform.secrets import classify, pointers
from tests.configdb_clients.conftest import HIERA_TREE, tree_sources

#: shorter values ("admin", "nova", true) are also ordinary words of the data: a grep would find those
SHORTEST = 8


def secret_values(session, cluster_id):
    """Every secret string of the uploaded tree (by the default name patterns) and of the cluster's
    generated attributes and editable password fields, as the server sees them in clear."""
    found = set()
    for document in tree_sources().values():
        found.update(pointers.get(document, p) for p in classify.by_name(document, secrets.patterns()))
    cluster = session.get(Cluster, cluster_id)
    generated, editable = cluster.generated_attributes, cluster.editable_attributes
    found.update(pointers.get(generated, p) for p in classify.every_leaf(generated))
    found.update(pointers.get(editable, p) for p in classify.attribute_pointers(editable, secrets.patterns()))
    session.rollback()
    values = {value for value in found if isinstance(value, str) and len(value) >= SHORTEST}
    assert len(values) > 10, "the fixtures should hold many secrets: {0}".format(sorted(values))
    return values


def database_bytes(db_url, tmp_path):
    url = sa.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        with sqlite3.connect(url.database) as connection:  # the write-ahead log into the file
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return b"".join(open(path, "rb").read() for path in (url.database, url.database + "-wal")
                        if os.path.exists(path))
    pg_dump = shutil.which("pg_dump") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump"))), None)
    if pg_dump is None:
        pytest.fail("pg_dump is needed to check a PostgreSQL dump (apt install postgresql-client)")
    dump = tmp_path / "dump.sql"
    plain_url = url.set(drivername="postgresql").render_as_string(hide_password=False)
    subprocess.run([pg_dump, "--file", str(dump), plain_url], check=True, timeout=120)
    return dump.read_bytes()


def test_no_secret_in_clear_in_the_database_or_its_dump(fuel_ext, linked_env, live_server, session, db_url,
                                                        tmp_path):
    fuel_ext("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    stored = database_bytes(db_url, tmp_path)
    assert b"$fernet" in stored
    in_clear = sorted(value for value in secret_values(session, linked_env["id"])
                      if value.encode("utf-8") in stored)
    assert not in_clear, "secrets in clear in the database: {0}".format(in_clear)
