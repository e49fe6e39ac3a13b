"""The packaged settings file is read when nothing names another: a service whose environment
lost ``NAILGUN_CONFIG`` still uses its PostgreSQL, not a SQLite file in ``$HOME``."""
from pathlib import Path

import pytest

from nailgun_host import settings as settings_module
from nailgun_host.settings import Settings


@pytest.fixture
def packaged_file(tmp_path, monkeypatch):
    path = tmp_path / "settings.yaml"
    path.write_text("DATABASE_URL: postgresql+psycopg://nailgun:pw@db.example/nailgun\n")
    monkeypatch.setattr(settings_module, "DEFAULT_FILE", str(path))
    monkeypatch.delenv("NAILGUN_CONFIG", raising=False)
    monkeypatch.delenv("NAILGUN_DB_URL", raising=False)
    return path


def test_the_packaged_file_is_read_when_nothing_names_another(packaged_file):
    assert Settings().reload().database_url == "postgresql+psycopg://nailgun:pw@db.example/nailgun"


def test_a_file_named_by_the_environment_or_the_command_wins(packaged_file, tmp_path, monkeypatch):
    other = tmp_path / "other.yaml"
    other.write_text("DATABASE_URL: sqlite:///other.db\n")
    assert Settings().reload(str(other)).database_url == "sqlite:///other.db"
    monkeypatch.setenv("NAILGUN_CONFIG", str(other))
    assert Settings().reload().database_url == "sqlite:///other.db"


def test_an_empty_nailgun_config_reads_no_file(packaged_file, monkeypatch):
    monkeypatch.setenv("NAILGUN_CONFIG", "")
    assert Settings().reload().database_url.startswith("sqlite:///")


def test_without_the_packaged_file_the_defaults_hold(packaged_file):
    packaged_file.unlink()
    assert Settings().reload().database_url == "sqlite:///" + settings_module.DEFAULTS["SQLITE_PATH"]


def test_an_unreadable_packaged_file_is_an_error_not_sqlite(packaged_file):
    """e.g. nailgun-syncdb run by a user who may not read /etc/fuel-nailgun-extensions/settings.yaml (0640)."""
    packaged_file.write_text("- not a mapping\n")
    with pytest.raises(ValueError, match="is not a YAML mapping"):
        Settings().reload()


def test_the_default_file_is_the_packages_own_not_nailguns():
    """fuel-nailgun owns /etc/nailgun/settings.yaml on a Fuel master (DATABASE:, API_LOG: ...): never read it."""
    assert settings_module.DEFAULT_FILE == "/etc/fuel-nailgun-extensions/settings.yaml"
    spec = (Path(__file__).resolve().parents[2] / "specs" / "fuel-nailgun-extensions.spec").read_text()
    assert "%{buildroot}%{_sysconfdir}/%{name}/settings.yaml" in spec  # the file the RPM installs
