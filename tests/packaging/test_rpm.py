"""The RPM: built with the literal steps of the spec's header, installed into a scratch root.

This is what an operator gets on a Fuel master, so the checks are on the package
(``rpm -qpR``, ``rpm -qpl``, rpmlint) and on the installed payload: the packages with
their data files, the egg-info whose entry points stevedore reads, the console
scripts, and the unit's command serving the API with the packaged settings file.
"""
import ast
import configparser
import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "fuel-nailgun-extensions.spec"
RPMLINTRC = ROOT / "specs" / "fuel-nailgun-extensions.rpmlintrc"
UNIT = "/usr/lib/systemd/system/nailgun-api.service"
SETTINGS = "/etc/fuel-nailgun-extensions/settings.yaml"
#: the package's log and state directories (not fuel-nailgun's /var/log/nailgun and /var/lib/nailgun)
LOG_DIR = "/var/log/fuel-nailgun-extensions"
STATE_DIR = "/var/lib/fuel-nailgun-extensions"
#: what fuel-nailgun, Nailgun's own package, owns on a Fuel master: an RPM file conflict if packaged here too
NAILGUNS_OWN = ("/etc/nailgun/settings.yaml", "/var/log/nailgun", "/var/lib/nailgun")
#: the extras whose packages the RPM requires: the database driver and the unit's WSGI server
REQUIRED_EXTRAS = ("postgresql", "server")
#: imported, but brought by the process that imports them: fuel2's (nailgun_platform.client.fuel2)
IMPORTED_FROM_THE_CALLER = {"fuelclient"}
PACKAGES = ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade", "nailgun_ext_configdb")
# Not copied from the work tree into the scratch source tree.
TOP_LEVEL_JUNK = {".git", ".venv", "venv", "build", "dist", ".pytest_cache"}

pytestmark = pytest.mark.skipif(
    shutil.which("rpmbuild") is None,
    reason="rpmbuild is not installed (run_tests.sh installs the Debian package rpm when run as root)")


def _metadata():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


def _run(cmd, **kwargs):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        pytest.fail("{0} exited with {1}\n--- stdout\n{2}\n--- stderr\n{3}".format(
            " ".join(str(c) for c in cmd), result.returncode, result.stdout[-4000:], result.stderr[-4000:]))
    return result.stdout


def _ignore(directory, names):
    ignored = {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".egg-info", ".db", ".db-wal", ".db-shm"))}
    if Path(directory) == ROOT:
        ignored |= (TOP_LEVEL_JUNK & set(names)) | {n for n in names if n.startswith((".venv", ".pytest"))}
    return ignored


def _header_steps():
    """The shell lines under "Build from the sdist" in the spec's header, as an operator copies them."""
    steps, inside = [], False
    for line in SPEC.read_text().splitlines():
        if not line.startswith("#"):
            break
        if "Build from the sdist" in line:
            inside = True
        elif inside and line.startswith("#   "):
            steps.append(line[len("#   "):])
        elif inside:
            break
    return steps


def _build_dependencies_are_rpms():
    return subprocess.run(["rpm", "-q", "python3-devel"], capture_output=True).returncode == 0


#: ``python3`` as with setuptools < 69.3: ``setup.py sdist`` makes fuel-nailgun-extensions-VERSION.tar.gz
#: (dashes, in the file's name and its directory's), the name EL's older setuptools gives
OLD_SDIST_PYTHON3 = """#!{python}
import os, subprocess, sys, tarfile
status = subprocess.call([{python!r}] + sys.argv[1:])
if status == 0 and sys.argv[1:] == ["setup.py", "sdist"]:
    for name in os.listdir("dist"):
        if name.startswith("fuel_nailgun_extensions-") and name.endswith(".tar.gz"):
            dashed = name.replace("fuel_nailgun_extensions-", "fuel-nailgun-extensions-", 1)
            with tarfile.open(os.path.join("dist", name)) as old, \\
                    tarfile.open(os.path.join("dist", dashed), "w:gz") as new:
                for member in old.getmembers():
                    content = old.extractfile(member) if member.isfile() else None
                    member.name = member.name.replace("fuel_nailgun_extensions-", "fuel-nailgun-extensions-", 1)
                    member.pax_headers = dict()  # a long name is in "path" there, which would win
                    new.addfile(member, content)
            os.remove(os.path.join("dist", name))
sys.exit(status)
"""


@pytest.fixture(scope="module")
def rpm(tmp_path_factory):
    """The RPM, built by the header's steps in a copy of the work tree (committed or not), with a
    fresh HOME; ``python3`` is this test's interpreter (setuptools >= 69.3, as run_tests.sh installs)."""
    return _build_by_the_header(tmp_path_factory.mktemp("rpm"), Path(sys.executable).parent)


def _build_by_the_header(workdir, python_bin):
    """Run the header's steps in a copy of the work tree, ``python_bin`` first on the PATH."""
    source = workdir / "src"
    shutil.copytree(ROOT, source, ignore=_ignore)
    home = workdir / "home"
    home.mkdir()
    assert (python_bin / "python3").is_file()
    environ = dict(os.environ, HOME=str(home), PATH="{0}:{1}".format(python_bin, os.environ["PATH"]))
    steps = _header_steps()
    assert steps and steps[-1].startswith("rpmbuild "), steps
    if not _build_dependencies_are_rpms():
        steps[-1] = steps[-1].replace("rpmbuild ", "rpmbuild --nodeps ", 1)  # as the header says
    for step in steps:
        _run(["bash", "-euc", step], cwd=source, env=environ)
    topdir = home / "rpmbuild"
    (package,) = (topdir / "RPMS" / "noarch").glob("fuel-nailgun-extensions-*.noarch.rpm")
    (srpm,) = (topdir / "SRPMS").glob("fuel-nailgun-extensions-*.src.rpm")
    return {"rpm": package, "srpm": srpm, "source": source, "version": _metadata()["metadata"]["version"]}


def test_the_header_steps_build_with_an_older_setuptools_too(tmp_path):
    """setuptools < 69.3 names the sdist fuel-nailgun-extensions-1.0.0.tar.gz: the header's steps still build."""
    python_bin = tmp_path / "bin"
    python_bin.mkdir()
    (python_bin / "python3").write_text(OLD_SDIST_PYTHON3.format(python=sys.executable))
    (python_bin / "python3").chmod(0o755)
    built = _build_by_the_header(tmp_path, python_bin)
    assert [p.name for p in (built["source"] / "dist").iterdir()] == [
        "fuel-nailgun-extensions-{0}.tar.gz".format(built["version"])]
    assert _query(built["rpm"], "%{NAME} %{VERSION}") == "fuel-nailgun-extensions " + built["version"]


@pytest.fixture(scope="module")
def installed(rpm, tmp_path_factory):
    """The RPM installed into an empty root; returns (root, site-packages dir)."""
    root = tmp_path_factory.mktemp("root")
    _run(["rpm", "--root", root, "--initdb"])
    # --noscripts: the scratch root has no shell to run %post in (and works unprivileged).
    _run(["rpm", "--root", root, "-ivh", "--nodeps", "--noscripts", rpm["rpm"]])
    assert _run(["rpm", "--root", root, "-q", "fuel-nailgun-extensions"]).startswith(
        "fuel-nailgun-extensions-{0}-".format(rpm["version"]))
    (sitelib,) = root.glob("usr/lib/python3*/site-packages")
    return root, sitelib


def _query(package, fmt):
    return _run(["rpm", "-qp", "--qf", fmt, package])


def _required_python_distributions():
    """``{python3dist(NAME): minimum}`` of setup.cfg: install_requires and the REQUIRED_EXTRAS."""
    options = _metadata()
    lines = options["options"]["install_requires"].splitlines()
    for extra in REQUIRED_EXTRAS:
        lines += options["options.extras_require"][extra].splitlines()
    return _python3dist(lines)


def _python3dist(lines):
    required = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (minimum,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            required["python3dist({0})".format(canonicalize_name(requirement.name))] = minimum
    return required


def _dependencies(package, kind):
    """``{name: "OP VERSION" or ""}`` of ``rpm -qp --KIND`` (requires, recommends, obsoletes, conflicts)."""
    found = {}
    for line in _run(["rpm", "-qp", "--" + kind, package]).splitlines():
        name, _, version = line.partition(" ")
        found[name] = version
    return found


def test_rpm_header(rpm):
    metadata = _metadata()["metadata"]
    assert _query(rpm["rpm"], "%{NAME} %{VERSION} %{ARCH} %{LICENSE} %{URL}") == \
        "fuel-nailgun-extensions {0} noarch {1} {2}".format(rpm["version"], metadata["license"], metadata["url"])


def test_requires_are_setup_cfgs_with_their_minimums(rpm):
    """rpm -qpR against setup.cfg: every Python distribution the code needs, at the same minimum, and no other."""
    requires = _dependencies(rpm["rpm"], "requires")
    packaged = {name: version for name, version in requires.items() if name.startswith("python3dist(")}
    assert packaged == {name: ">= " + minimum for name, minimum in _required_python_distributions().items()}
    feed = _python3dist(_metadata()["options.extras_require"]["feed"].splitlines())
    assert _dependencies(rpm["rpm"], "recommends") == {name: ">= " + minimum for name, minimum in feed.items()}
    # Nothing of the build machine leaks in (e.g. a virtualenv's python in a #! line).
    assert not [r for r in requires if r.startswith("/") and r not in ("/bin/sh", "/usr/bin/python3")]
    assert "shadow-utils" in requires  # %pre makes the service user


def test_every_distribution_the_code_imports_is_required(rpm):
    """Each top-level import of the packages is the standard library's, ours, or a required distribution's."""
    imported = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    imported.add(node.module.split(".")[0])
    required = {name[len("python3dist("):-1] for name in _dependencies(rpm["rpm"], "requires")
                if name.startswith("python3dist(")}
    optional = {name[len("python3dist("):-1] for name in _dependencies(rpm["rpm"], "recommends")}
    providers = importlib.metadata.packages_distributions()
    missing = sorted(
        module for module in imported - set(sys.stdlib_module_names) - set(PACKAGES) - IMPORTED_FROM_THE_CALLER
        - {"argparse_manpage"}  # nailgun_host.cmd.man_pages, run by the build (extra "man"), not by the package
        if not {canonicalize_name(d) for d in providers.get(module, [module])} & (required | optional))
    assert not missing, "imported but not required by the RPM (declare them in setup.cfg): " + ", ".join(missing)


def test_it_replaces_the_old_cluster_upgrade_package(rpm):
    """The old package registers the same cluster_upgrade entry point: the two cannot be installed together."""
    assert "fuel-nailgun-extension-cluster-upgrade" in _dependencies(rpm["rpm"], "obsoletes")
    assert _dependencies(rpm["rpm"], "conflicts") == {"fuel-nailgun-extension-cluster-upgrade": ""}


def _file_modes(package):
    """``{path: (permissions, user, group)}`` of every file and directory of the package."""
    lines = _run(["rpm", "-qp", "--qf", "[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME}\\n]",
                  package]).splitlines()
    return {path: tuple(rest) for path, *rest in (line.split() for line in lines)}


def test_the_service_files_are_packaged(rpm):
    files = _run(["rpm", "-qpl", rpm["rpm"]]).split()
    assert UNIT in files
    assert "/usr/share/licenses/fuel-nailgun-extensions-{0}/LICENSE".format(rpm["version"]) in files
    assert "/usr/share/doc/fuel-nailgun-extensions-{0}/README.md".format(rpm["version"]) in files
    assert "/usr/share/doc/fuel-nailgun-extensions-{0}/docs/operator/configuration.md".format(rpm["version"]) in files
    assert set(_run(["rpm", "-qp", "--configfiles", rpm["rpm"]]).split()) == {
        SETTINGS, "/etc/logrotate.d/fuel-nailgun-extensions"}
    modes = _file_modes(rpm["rpm"])
    assert modes[SETTINGS] == ("-rw-r-----", "root", "nailgun")  # it holds the database password
    assert modes[LOG_DIR] == ("drwxr-x---", "nailgun", "nailgun")
    assert modes[STATE_DIR] == ("drwxr-x---", "nailgun", "nailgun")
    scripts = _run(["rpm", "-qp", "--scripts", rpm["rpm"]])
    assert re.search(r"useradd -r -g nailgun .*nailgun$", scripts, re.M), scripts


def test_no_file_of_nailguns_own_package_is_packaged(rpm):
    """On a Fuel master fuel-nailgun owns /etc/nailgun/settings.yaml (DATABASE:, API_LOG: ...): packaging it too
    is a file conflict, and the API would read Nailgun's settings. The package's own names instead."""
    files = _run(["rpm", "-qpl", rpm["rpm"]]).split()
    assert not [f for f in files if f.startswith(NAILGUNS_OWN)], files
    assert {SETTINGS, LOG_DIR, STATE_DIR, "/etc/logrotate.d/fuel-nailgun-extensions"} <= set(files)
    packaged = yaml.safe_load((ROOT / "packaging" / "settings.yaml").read_text())
    assert packaged["LOG"]["file"] == LOG_DIR + "/api.log"
    assert [packaged["AUTH"]["users_file"], packaged["SECRETS"]["key_repository"], packaged["CONFIGDB"]["git_root"]] \
        == [STATE_DIR + "/users.yaml", STATE_DIR + "/fernet-keys", STATE_DIR + "/configdb-git"]
    assert (ROOT / "packaging" / "nailgun-api.logrotate").read_text().count(LOG_DIR + "/*.log {") == 1
    scripts = _run(["rpm", "-qp", "--scripts", rpm["rpm"]])
    assert "-d {0} ".format(STATE_DIR) in scripts, scripts


def test_rpmlint_finds_no_error(rpm):
    if shutil.which("rpmlint") is None:
        pytest.skip("rpmlint is not installed (run_tests.sh installs the Debian package rpmlint when run as root)")
    result = subprocess.run(["rpmlint", "-r", RPMLINTRC, rpm["rpm"], rpm["srpm"], SPEC],
                            capture_output=True, text=True)
    errors = [line for line in result.stdout.splitlines() if ": E: " in line]
    assert not errors, result.stdout
    assert re.search(r"\b0 errors\b", result.stdout), result.stdout + result.stderr


def test_packages_and_migrations_are_installed(installed):
    _root, sitelib = installed
    for package in PACKAGES:
        assert (sitelib / package / "__init__.py").is_file(), package
    assert (sitelib / "nailgun_host" / "db" / "migrations" / "versions" / "001_core_tables.py").is_file()
    assert (sitelib / "nailgun_host" / "db" / "migrations" / "env.py").is_file()


def test_every_file_of_the_packages_is_installed(rpm, installed):
    """Data files (migrations, YAML fixtures, templates, Ruby) ship too, not only modules."""
    _root, sitelib = installed
    source = rpm["source"]
    expected = {
        path.relative_to(source)
        for package in PACKAGES
        for path in (source / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")}
    missing = sorted(str(p) for p in expected if not (sitelib / p).is_file())
    assert not missing, "in the source tree but not in the RPM (see packages/package_data in setup.cfg): " + \
        ", ".join(missing)


def test_entry_points_are_in_the_egg_info(rpm, installed):
    _root, sitelib = installed
    (egg_info,) = sitelib.glob("fuel_nailgun_extensions-{0}*.egg-info".format(rpm["version"]))
    entry_points = configparser.ConfigParser()
    entry_points.read(egg_info / "entry_points.txt")
    extensions = dict(entry_points["nailgun.extensions"])
    assert extensions["cluster_upgrade"] == "nailgun_ext_upgrade.extension:ClusterUpgradeExtension"
    assert extensions["configdb"] == "nailgun_ext_configdb.extension:ConfigDBExtension"
    # What stevedore sees when this site-packages is on the path.
    (dist,) = [d for d in importlib.metadata.distributions(path=[str(sitelib)])
               if d.metadata["Name"] == "fuel-nailgun-extensions"]
    names = {ep.name for ep in dist.entry_points if ep.group == "nailgun.extensions"}
    assert {"cluster_upgrade", "configdb"} <= names


def test_console_scripts_are_installed(installed):
    root, _sitelib = installed
    for script in ("nailgun-api", "nailgun-syncdb", "nailgun-feed"):
        path = root / "usr" / "bin" / script
        assert path.is_file() and os.access(path, os.X_OK), script
        assert path.read_text().splitlines()[0] == "#!/usr/bin/python3", script


def test_srpm_carries_the_spec_and_the_sdist(rpm):
    files = _run(["rpm", "-qpl", rpm["srpm"]]).split()
    assert "fuel-nailgun-extensions.spec" in files
    assert any(f.endswith("-{0}.tar.gz".format(rpm["version"])) for f in files)


@pytest.fixture
def postgresql_database(db_url, request):
    """A fresh PostgreSQL database (the unit serves PostgreSQL); its URL with the password."""
    if sa.make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("the packaged service runs on PostgreSQL: set NAILGUN_TEST_DB_URL (run_tests.sh does)")
    return request.getfixturevalue("empty_db_url")


def _in_root(root, settings_text):
    """The packaged settings as they read inside ``root``: each absolute path under /var moved there."""
    return re.sub(r"(?<=[ :])/var/", str(root) + "/var/", settings_text)


def _unit_command(root, line):
    """A command line of the unit, run from the scratch root: its own scripts with this Python (the
    root has none), the WSGI server from this environment (a Requires of the RPM)."""
    command = shlex.split(line)
    executable = Path(command[0])
    packaged = root / executable.relative_to("/")
    if packaged.is_file():
        return [sys.executable, str(packaged)] + command[1:]
    return [str(Path(sys.executable).parent / executable.name)] + command[1:]


def test_the_units_command_serves_the_api_with_the_packaged_settings(installed, postgresql_database, tmp_path):
    """As an operator: fill in the settings file's database, migrate as the service, add a user, start the unit."""
    root, sitelib = installed
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(root / UNIT.lstrip("/"))
    service = unit["Service"]
    assert (service["User"], service["Group"]) == ("nailgun", "nailgun")
    packaged = (root / SETTINGS.lstrip("/")).read_text()
    assert yaml.safe_load(packaged)["LOG"]["file"] == LOG_DIR + "/api.log"
    placeholder = yaml.safe_load(packaged)["DATABASE_URL"]
    assert sa.make_url(placeholder).get_backend_name() == "postgresql"
    # what the operator edits: the database URL, and nothing else
    settings = tmp_path / "settings.yaml"
    settings.write_text(_in_root(root, packaged.replace(placeholder, postgresql_database)))
    for directory in (LOG_DIR.lstrip("/"), STATE_DIR.lstrip("/")):
        assert (root / directory).is_dir(), directory
    # NAILGUN_CONFIG stands in for the path the code reads by default (the root is not /).
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NAILGUN_")}
    environ.update(PYTHONPATH=str(sitelib), NAILGUN_CONFIG=str(settings), HOME=str(tmp_path))
    syncdb = [sys.executable, str(root / "usr/bin/nailgun-syncdb")]
    migrated = subprocess.run(syncdb, env=environ, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines()[0] == "database: " + sa.make_url(postgresql_database).render_as_string()
    users = subprocess.run([sys.executable, str(root / "usr/bin/nailgun-users"), "set", "admin", "--role", "admin"],
                           env=environ, input="s3cret-pass\n", capture_output=True, text=True)
    assert users.returncode == 0, users.stderr
    check = subprocess.run(_unit_command(root, service["ExecStartPre"]), env=environ, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    port = free_port()
    command = [re.sub(r"^--listen=\S+$", "--listen=127.0.0.1:{0}".format(port), arg)
               for arg in _unit_command(root, service["ExecStart"])]
    with open(tmp_path / "server.out", "w") as output:
        server = subprocess.Popen(command, env=environ, stdout=output, stderr=subprocess.STDOUT, cwd=tmp_path)
    base = "http://127.0.0.1:{0}/api/v1".format(port)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = requests.get(base + "/health", timeout=5)
                break
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.out").read_text()
                time.sleep(0.2)
        assert health.status_code == 200, health.text
        assert health.json()["database"] == "postgresql"
        assert requests.get(base + "/clusters/", timeout=5).status_code == 401
        clusters = requests.get(base + "/clusters/", auth=("admin", "s3cret-pass"), timeout=5)
        assert (clusters.status_code, clusters.json()) == (200, []), clusters.text
        # the modules served are the RPM's, not the work tree's
        assert str(sitelib) in subprocess.run(
            [sys.executable, "-c", "import nailgun_host; print(nailgun_host.__file__)"],
            env=environ, capture_output=True, text=True, cwd=tmp_path).stdout
    finally:
        server.terminate()
        server.wait(20)
    log = root / yaml.safe_load(packaged)["LOG"]["file"].lstrip("/")
    assert "/api/v1/clusters/" in log.read_text()
