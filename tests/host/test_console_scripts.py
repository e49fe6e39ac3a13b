"""``nailgun-api`` and ``nailgun-syncdb`` as an operator runs them."""
import os
import subprocess
import sys
import time

import requests

from tests.conftest import free_port


def test_nailgun_api_serves_on_the_embedded_sqlite_default(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k not in ("NAILGUN_DB_URL", "NAILGUN_CONFIG")}
    environ["HOME"] = str(tmp_path)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", "from nailgun_host.server import serve; serve()",
                               "--port", str(port)], env=environ,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, answer = time.monotonic() + 30, None
        while time.monotonic() < deadline and answer is None:
            try:
                answer = requests.get("http://127.0.0.1:{0}/api/v1/version".format(port), timeout=1)
            except requests.ConnectionError:
                time.sleep(0.2)
        assert answer is not None and answer.headers["Content-Type"] == "application/json"
        assert answer.json()["auth_required"] is False
        assert (tmp_path / ".nailgun" / "nailgun.db").exists()
    finally:
        server.terminate()
        server.wait(10)


def test_syncdb_is_idempotent(tmp_path):
    url = "sqlite:///" + str(tmp_path / "n.db")
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", "from nailgun_host.server import syncdb; syncdb()",
                                 "--db-url", url], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as connection:
        admin = connection.execute(sa.text("SELECT count(*) FROM network_groups WHERE name='fuelweb_admin'"))
        assert admin.scalar() == 1
    engine.dispose()
