"""An original environment on an older release, ready to be upgraded."""
import pytest

CLONE = "/api/v1/clusters/{0}/upgrade/clone/"
ASSIGN = "/api/v1/clusters/{0}/upgrade/assign/"
VIPS = "/api/v1/clusters/{0}/upgrade/vips/"
CLONE_RELEASE = "/api/v1/clusters/{0}/upgrade/clone_release/{1}/"
MODEL = "/api/v1/clusters/{0}/model/"


class UpgradeEnv:
    """orig (Liberty 8.0) with two controllers and a compute, and a Mitaka 9.0 release."""

    def __init__(self, env):
        self.env, self.app = env, env.app
        self.orig_release = env.create_release(name="Liberty on Ubuntu 14.04", version="liberty-8.0")
        self.new_release = env.create_release(name="Mitaka on Ubuntu 14.04", version="mitaka-9.0")
        self.orig = env.create_cluster(release_id=self.orig_release["id"], name="orig")
        self.controllers = [env.create_node(cluster_id=self.orig["id"], roles=["controller"], status="ready")
                            for _ in range(2)]
        self.compute = env.create_node(cluster_id=self.orig["id"], roles=["compute"], status="ready")

    def clone(self, name="seed", release_id=None, status=200, **extra):
        body = dict({"name": name, "release_id": release_id or self.new_release["id"]}, **extra)
        return self.app.post_json(CLONE.format(self.orig["id"]), body, status=status).json

    def assign(self, seed_id, body, status=202):
        return self.app.post_json(ASSIGN.format(seed_id), body, status=status).json

    def addresses(self, node_id):
        return sorted((d["name"], d["ip"]) for d in self.env.get_node(node_id)["network_data"])


@pytest.fixture
def upgrade_env(env):
    return UpgradeEnv(env)


def error(response_json):
    """The message of a JSON error body (and a check that it is one)."""
    assert set(response_json) == {"message", "errors"}
    return response_json["message"]


@pytest.fixture(scope="session")
def reflected_schema(migrated_db):
    """Every table of the test database, reflected once (about 40 ms): tests change rows, not tables."""
    import sqlalchemy as sa

    meta = sa.MetaData()
    meta.reflect(migrated_db[0])
    return meta


@pytest.fixture
def db_dump(migrated_db, reflected_schema):
    """A function returning every row of every table, to compare before and after a request."""
    engine, _tables = migrated_db

    def dump():
        with engine.connect() as connection:
            return {name: sorted(tuple(str(v) for v in row) for row in connection.execute(table.select()))
                    for name, table in sorted(reflected_schema.tables.items())}
    return dump
