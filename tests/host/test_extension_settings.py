"""Extensions declare their own settings sections through the contract (issue 25, item 2): the host holds none
of them, merges what each declares, reads its environment variables and refuses what its check refuses; the
documentation's settings table is tested against the declared defaults, wherever the table lives (README.md or a
page of docs/). The session document types the extensions declare decide a deployment's ``sections``.
"""
import pathlib
import re

import pytest
import yaml

from nailgun_host import extensions, settings as settings_module
from nailgun_host.api import config_sessions
from nailgun_host.settings import DEFAULTS, Settings, settings

ROOT = pathlib.Path(__file__).resolve().parents[2]
SETTINGS_TABLE_HEADER = ("setting", "meaning", "default")


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def documented_settings():
    """``{name: (file, default cell)}`` of every settings table (``| Setting | Meaning | Default |``) in README.md
    and docs/**/*.md."""
    documented = {}
    for path in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("**/*.md")):
        if not path.is_file():
            continue
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if not (line.startswith("|") and tuple(c.lower() for c in _cells(line)) == SETTINGS_TABLE_HEADER):
                continue
            for row in lines[index + 2:]:
                if not row.startswith("|"):
                    break
                name, _, default = _cells(row)
                documented[name.strip("`")] = (path.relative_to(ROOT), default)
    return documented


def declared_settings():
    """``{SECTION.key: default}`` of every section a loaded extension declares (one level of keys: its sections
    are flat, as the documentation's rows are)."""
    return {"{0}.{1}".format(section, key): value
            for declared in extensions.fire("settings_sections")
            for section, defaults in declared.items() for key, value in defaults.items()}


def test_the_host_holds_no_extension_section_and_each_extension_declares_its_own():
    by_extension = {e.name: set(e.settings_sections()) for e in extensions.get_all_extensions()}
    assert by_extension == {"cluster_upgrade": {"CLUSTER_UPGRADE"}, "configdb": {"CONFIGDB"}}
    assert not set(DEFAULTS) & {"CLUSTER_UPGRADE", "CONFIGDB"}
    assert set(settings_module.all_defaults()) == set(DEFAULTS) | {"CLUSTER_UPGRADE", "CONFIGDB"}


def test_every_declared_setting_is_documented_with_its_default():
    documented = documented_settings()
    declared = declared_settings()
    assert declared, "no extension declares a setting"
    for name, default in sorted(declared.items()):
        assert name in documented, "the setting {0} an extension declares is in no settings table".format(name)
        where, cell = documented[name]
        spans = re.findall(r"`([^`]+)`", cell)
        assert spans and cell.startswith("`"), "{0}: the default of {1} must start with a `YAML value`".format(
            where, name)
        assert yaml.safe_load(spans[0]) == default, "{0} documents {1} = {2!r}; the extension declares {3!r}".format(
            where, name, spans[0], default)


def test_a_settings_file_sets_a_declared_section_and_its_check_refuses_what_cannot_work(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text("CONFIGDB: {max_versions: 7}\nCLUSTER_UPGRADE: {transformations: {cluster: {'9.0': []}}}\n")
    loaded = Settings().reload(str(path))
    assert loaded["CONFIGDB"]["max_versions"] == 7
    assert loaded["CONFIGDB"]["storage"] == "sql"  # the declared default of a key the file does not name
    assert loaded["CLUSTER_UPGRADE"] == {"transformations": {"cluster": {"9.0": []}}}
    path.write_text("CONFIGDB: {storage: ''}\n")
    with pytest.raises(ValueError, match="CONFIGDB.storage must be a non-empty string"):
        Settings().reload(str(path))
    path.write_text("CONFIGDBB: {storage: git}\n")
    with pytest.raises(ValueError, match="unknown settings CONFIGDBB"):
        Settings().reload(str(path))


@pytest.mark.parametrize("text, misspelt", [
    ("CONFIGDB: {max_version: 7}\n", "CONFIGDB.max_version"),
    ("CLUSTER_UPGRADE: {transformation: {}}\n", "CLUSTER_UPGRADE.transformation"),
])
def test_a_key_an_extension_does_not_declare_is_refused_rather_than_leaving_the_default(tmp_path, text, misspelt):
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="unknown settings {0}: ".format(misspelt)):
        Settings().reload(str(path))
    with pytest.raises(ValueError, match="unknown settings {0}: ".format(misspelt)):
        Settings().reload(overrides=yaml.safe_load(text))


@pytest.mark.parametrize("section", sorted(name for name, keys in settings_module.all_defaults().items()
                                            if isinstance(keys, dict) and keys))
def test_every_sections_misspelt_key_is_refused(tmp_path, section):
    """The host's sections and those the extensions declare alike (PATCH.max_operation, ADMIN_NETWORK.cidrr)."""
    key = sorted(settings_module.all_defaults()[section])[0]
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump({section: {key + "x": 1}}))
    with pytest.raises(ValueError, match="unknown settings {0}.{1}x: ".format(section, key)):
        Settings().reload(str(path))


def test_a_patch_limit_that_is_no_whole_number_is_refused_at_start(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text("PATCH: {max_operations: many}\n")
    with pytest.raises(ValueError, match="PATCH.max_operations must be a whole number"):
        Settings().reload(str(path))


def test_the_declared_environment_variables_override_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("NAILGUN_CONFIGDB_GIT_ROOT", str(tmp_path / "repositories"))
    monkeypatch.setenv("NAILGUN_CONFIG", "")
    assert Settings().reload()["CONFIGDB"]["git_root"] == str(tmp_path / "repositories")


def test_a_declared_section_read_before_any_reload_holds_its_defaults():
    fresh = Settings(DEFAULTS)
    assert fresh["CONFIGDB"] == {"max_versions": 100, "max_changes": 10000, "storage": "sql",
                                 "git_root": "/var/lib/fuel-nailgun-extensions/configdb-git"}
    with pytest.raises(KeyError):
        fresh["NO_SUCH_SECTION"]


def test_an_extension_may_not_declare_a_section_of_the_host():
    class Greedy(extensions.BaseExtension):
        name = "greedy"
        version = "1"
        description = "declares AUTH"

        @classmethod
        def settings_sections(cls):
            return {"AUTH": {"method": "none"}}

    extensions.set_extensions(list(extensions.get_all_extensions()) + [Greedy()])
    try:
        with pytest.raises(ValueError, match="an extension declares the host's settings AUTH"):
            settings.reload(overrides={"DATABASE_URL": settings.database_url})
    finally:
        extensions.set_extensions(None)


def test_the_document_types_whose_keys_are_a_deployments_sections_are_the_extensions_declaration():
    declared = {e.name: e.session_document_types() for e in extensions.get_all_extensions()}
    assert declared == {"cluster_upgrade": {"model": {"sections": True}}, "configdb": {"configdb": {"sections": False}}}
    assert config_sessions.section_types() == {"model"}


def test_every_declared_document_type_has_its_extensions_client_label():
    from nailgun_platform.client import documents

    declared = {name for e in extensions.get_all_extensions() for name in e.session_document_types()}
    labels = documents.labellers()
    assert set(labels) == declared
    assert {name: entry.value.split(".")[0] for name, entry in labels.items()} == {
        "model": "nailgun_ext_upgrade", "configdb": "nailgun_ext_configdb"}
    assert documents.label({"type": "unknown", "a": 1}) == '{"a": 1, "type": "unknown"}'
