"""The RPM: built from the sdist with the real spec, installed into a scratch root.

This is what an operator gets on a Fuel master, so the checks are on the
installed payload: the packages with their data files (migrations, fixtures),
the egg-info whose entry points stevedore reads, and the console scripts.
"""
import configparser
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "fuel-nailgun-extensions.spec"
PACKAGES = ("nailgun_host", "nailgun_ext_upgrade", "nailgun_ext_configdb")
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
        ignored |= TOP_LEVEL_JUNK & set(names)
    return ignored


def _installed(distribution):
    # Not importlib.util.find_spec: a build/ directory in the work tree looks like a package.
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _build_sdist(workdir):
    """The sdist of the work tree as it is (committed or not), built in a copy of it."""
    source = workdir / "src"
    shutil.copytree(ROOT, source, ignore=_ignore)
    dist = workdir / "dist"
    if _installed("build"):
        cmd = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", dist, source]
    else:
        cmd = [sys.executable, "setup.py", "-q", "sdist", "--dist-dir", dist]
    _run(cmd, cwd=source)
    (tarball,) = dist.glob("*.tar.gz")
    return source, tarball


@pytest.fixture(scope="module")
def rpm(tmp_path_factory):
    """Build the RPM: sdist, then rpmbuild -ba with the real spec."""
    workdir = tmp_path_factory.mktemp("rpm")
    source, tarball = _build_sdist(workdir)
    topdir = workdir / "rpmbuild"
    (topdir / "SOURCES").mkdir(parents=True)
    shutil.copy(tarball, topdir / "SOURCES")
    version = _metadata()["metadata"]["version"]
    sdist_name = tarball.name[:-len("-{0}.tar.gz".format(version))]
    _run(["rpmbuild",
          "--define", "_topdir {0}".format(topdir),
          # The Python that builds: this one has setuptools; /usr/bin/python3 may not.
          "--define", "__python3 {0}".format(sys.executable),
          # ...but the scripts start the target's Python, as on a Fuel master.
          "--define", "python3_shebang /usr/bin/python3",
          # setuptools < 69.3 names the sdist with dashes.
          "--define", "sdist_name {0}".format(sdist_name),
          # Build dependencies are EL packages: not in this machine's rpm database.
          "--nodeps",
          "-ba", SPEC])
    (package,) = (topdir / "RPMS" / "noarch").glob("fuel-nailgun-extensions-*.noarch.rpm")
    (srpm,) = (topdir / "SRPMS").glob("fuel-nailgun-extensions-*.src.rpm")
    return {"rpm": package, "srpm": srpm, "source": source, "version": version}


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


def test_rpm_header(rpm):
    assert _query(rpm["rpm"], "%{NAME} %{VERSION} %{ARCH} %{LICENSE}") == \
        "fuel-nailgun-extensions {0} noarch Apache-2.0".format(rpm["version"])
    requires = _run(["rpm", "-qp", "--requires", rpm["rpm"]]).split("\n")
    for dependency in ("python3-webpy", "python3-sqlalchemy", "python3-alembic", "python3-stevedore",
                       "python3-jsonschema", "python3-psycopg3"):
        assert dependency in requires
    # Nothing of the build machine leaks in (e.g. a virtualenv's python in a #! line).
    assert not [r for r in requires if r.startswith("/") and r not in ("/bin/sh", "/usr/bin/python3")]


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
