"""The RPM for EL9: built with the literal steps of the spec's header, installed where only what it requires is.

This is what an operator gets on a Fuel master, so the checks are on the package (``rpm -qpR`` against what
EL9 has, ``rpm -qp --provides``, ``rpm -qpl``, rpmlint), on its payload (the virtualenv in /opt: no build
path in it, every bundled shared object within EL9's glibc) and on the package at work: installed without
``--nodeps`` into a root whose only other package provides exactly its requirements, then, chrooted there,
``fuel-ext --help``, ``nailgun-syncdb`` and ``--status``, and the unit's own command serving the API with
the packaged settings file.

Both databases' passes of run_tests.sh would build it: it runs in the SQLite pass only (its database is the
packaged service's, an SQLite file in the scratch root).
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
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest
import requests
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import free_port
from tests.packaging.rpmbuild import ROOT, SPEC, build_by_the_header, run, version

RPMLINTRC = ROOT / "specs" / "fuel-nailgun-extensions.rpmlintrc"
VENV = "/opt/fuel-nailgun-extensions"
SITE = VENV + "/lib/python3.11/site-packages"
UNIT = "/usr/lib/systemd/system/nailgun-api.service"
FEED_UNIT = "/usr/lib/systemd/system/nailgun-feed.service"
#: the locations Fuel's nginx includes (docs/operator/fuel-master.md)
NGINX_SNIPPET = "/etc/nginx/fuel-nailgun-extensions.conf"
SETTINGS = "/etc/fuel-nailgun-extensions/settings.yaml"
COMPLETION = "/usr/share/bash-completion/completions/fuel-ext"
COMMANDS = ("nailgun-api", "nailgun-feed", "nailgun-syncdb", "nailgun-users", "nailgun-secrets", "fuel-ext")
#: the package's log and state directories (not fuel-nailgun's /var/log/nailgun and /var/lib/nailgun)
LOG_DIR = "/var/log/fuel-nailgun-extensions"
#: the service's own user and group: not Fuel's nailgun, which must not read this service's settings and keys
SERVICE_USER = "nailgun-extensions"
STATE_DIR = "/var/lib/fuel-nailgun-extensions"
#: what fuel-nailgun, Nailgun's own package, owns on a Fuel master: an RPM file conflict if packaged here too
NAILGUNS_OWN = ("/etc/nailgun/settings.yaml", "/var/log/nailgun", "/var/lib/nailgun")
#: the extras the virtualenv carries: the database driver, the unit's WSGI server, nailgun-feed's aiohttp,
#: argparse-manpage, which makes the manual pages at build time, and castellan (the secrets' keys in Barbican)
BUNDLED_EXTRAS = ("postgresql", "server", "feed", "man", "castellan")
#: imported, but brought by the process that imports them: fuel2's (nailgun_platform.client.fuel2)
IMPORTED_FROM_THE_CALLER = {"fuelclient"}
PACKAGES = ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade", "nailgun_ext_configdb")
#: What EL9 (Rocky/Alma/RHEL 9.x, BaseOS and AppStream) provides of what the package may require, from those
#: repositories' packages: python3.11 (AppStream, with /usr/bin/python3.11), shadow-utils (BaseOS), logrotate
#: (BaseOS), systemd (BaseOS), bash (BaseOS, which provides /bin/sh). rpm's own rpmlib(...) features are not
#: packages and are left out of the comparison.
EL9_CAPABILITIES = {"python3.11", "/usr/bin/python3.11", "shadow-utils", "logrotate", "systemd", "/bin/sh"}
#: EL9's glibc and libstdc++ (GCC 11): the newest symbol versions a bundled shared object may need
EL9_GLIBC = Version("2.34")
EL9_GLIBCXX = Version("3.4.29")
#: the environment of the commands run in the root: systemd's for a unit (no NAILGUN_*, no virtualenv)
CHROOT_ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
CHROOT = shutil.which("chroot", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))

pytestmark = [
    pytest.mark.skipif(not all(map(shutil.which, ("rpmbuild", "cpio", "file", "readelf")))
                       or not os.access("/usr/bin/python3.11", os.X_OK),
                       reason="rpmbuild, cpio, file, readelf or /usr/bin/python3.11 is missing (run_tests.sh installs "
                              "the Debian packages rpm, cpio, file, binutils and python3.11 when run as root)"),
    pytest.mark.skipif(bool(os.environ.get("NAILGUN_TEST_DB_URL")),
                       reason="built and run once, in the SQLite pass (the packaged service's database is a file)"),
]


def _metadata():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


@pytest.fixture(scope="module")
def rpm(packaged_rpm):
    """The RPM, built by the header's steps in a copy of the work tree (committed or not), with a
    fresh HOME; ``python3.11`` is this test's interpreter (setuptools >= 69.3, as run_tests.sh installs)."""
    return packaged_rpm


#: ``python3.11`` as with setuptools < 69.3: ``setup.py sdist`` makes fuel-nailgun-extensions-VERSION.tar.gz
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


def test_the_header_steps_build_with_an_older_setuptools_too(tmp_path):
    """setuptools < 69.3 names the sdist fuel-nailgun-extensions-1.0.0.tar.gz: the header's steps take it and
    rpmbuild unpacks it with the wheelhouse (``-bp``: what the name changes; the rest is the other build's)."""
    python_bin = tmp_path / "bin"
    python_bin.mkdir()
    (python_bin / "python3.11").write_text(OLD_SDIST_PYTHON3.format(python=sys.executable))
    (python_bin / "python3.11").chmod(0o755)
    built = build_by_the_header(tmp_path, python_bin, stage="-bp")
    sdist = "fuel-nailgun-extensions-{0}".format(built["version"])
    assert [p.name for p in (built["source"] / "dist").glob("*.tar.gz")] == [sdist + ".tar.gz"]
    unpacked = built["topdir"] / "BUILD" / sdist
    assert (unpacked / "setup.py").is_file()
    assert list((unpacked / "wheels").glob("cryptography-*.whl")), "the wheelhouse is not unpacked beside it"


def _query(package, fmt):
    return run(["rpm", "-qp", "--qf", fmt, package])


def _dependencies(package, kind):
    """``{name: "OP VERSION" or ""}`` of ``rpm -qp --KIND`` (requires, provides, obsoletes, conflicts)."""
    found = {}
    for line in run(["rpm", "-qp", "--" + kind, package]).splitlines():
        name, _, version = line.partition(" ")
        found[name] = version
    return found


def _requirements(package):
    """What ``rpm -qpR`` names, rpm's own rpmlib(...) features and the package's own config() aside."""
    return {name for name in _dependencies(package, "requires")
            if not name.startswith(("rpmlib(", "config(fuel-nailgun-extensions)"))}


def test_rpm_header(rpm):
    metadata = _metadata()["metadata"]
    assert _query(rpm["rpm"], "%{NAME} %{VERSION} %{ARCH} %{LICENSE} %{URL}") == \
        "fuel-nailgun-extensions {0} x86_64 {1} {2}".format(rpm["version"], metadata["license"], metadata["url"])


def test_requires_name_python3_11_and_only_what_el9_has(rpm):
    """``rpm -qpR``: EL9's python3.11 and nothing EL9 lacks: no python3dist(...), no python(abi), no library
    a bundled wheel links (rpm's generators are off for the virtualenv)."""
    required = _requirements(rpm["rpm"])
    assert {"python3.11", "/usr/bin/python3.11", "shadow-utils"} <= required
    assert required <= EL9_CAPABILITIES, "not in EL9: {0}".format(sorted(required - EL9_CAPABILITIES))


def test_it_provides_only_itself(rpm):
    """The bundled libraries (libssl, libpq, ... of the wheels) are offered to no other package."""
    assert set(_dependencies(rpm["rpm"], "provides")) == {
        "fuel-nailgun-extensions", "fuel-nailgun-extensions(x86-64)", "config(fuel-nailgun-extensions)"}


def test_it_replaces_the_old_cluster_upgrade_package(rpm):
    """The old package registers the same cluster_upgrade entry point: the two cannot be installed together."""
    assert "fuel-nailgun-extension-cluster-upgrade" in _dependencies(rpm["rpm"], "obsoletes")
    assert _dependencies(rpm["rpm"], "conflicts") == {"fuel-nailgun-extension-cluster-upgrade": ""}


def _file_modes(package):
    """``{path: (permissions, user, group)}`` of every file and directory of the package."""
    lines = run(["rpm", "-qp", "--qf", "[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME}\\n]",
                 package]).splitlines()
    return {path: tuple(rest) for path, *rest in (line.rsplit(" ", 3) for line in lines)}


def test_the_service_files_are_packaged(rpm):
    files = run(["rpm", "-qpl", rpm["rpm"]]).splitlines()
    assert {UNIT, FEED_UNIT, COMPLETION} <= set(files)
    pages = [f for f in files if f.startswith("/usr/share/man/man1/")]
    for command in COMMANDS:  # compressed as the distribution's brp-compress does
        assert [p for p in pages if re.fullmatch(r"/usr/share/man/man1/{0}\.1(\.\w+)?".format(command), p)], pages
    # EL9's places (without the version), whatever rpm builds it
    assert "/usr/share/licenses/fuel-nailgun-extensions/LICENSE" in files
    assert "/usr/share/doc/fuel-nailgun-extensions/README.md" in files
    assert "/usr/share/doc/fuel-nailgun-extensions/docs/operator/rpm.md" in files
    assert set(run(["rpm", "-qp", "--configfiles", rpm["rpm"]]).split()) == {
        SETTINGS, "/etc/logrotate.d/fuel-nailgun-extensions", NGINX_SNIPPET}
    scripts = run(["rpm", "-qp", "--scripts", rpm["rpm"]])
    modes = _file_modes(rpm["rpm"])
    assert modes[SETTINGS] == ("-rw-r-----", "root", SERVICE_USER)  # it holds the database password
    assert modes[LOG_DIR] == ("drwxr-x---", SERVICE_USER, SERVICE_USER)
    assert modes[STATE_DIR] == ("drwxr-x---", SERVICE_USER, SERVICE_USER)
    assert re.search(r"useradd -r -g {0} .*\s{0}$".format(SERVICE_USER), scripts, re.M), scripts


def test_the_settings_files_pointers_name_packaged_files(rpm):
    """The settings file's comments send the operator to the table of every setting: a path the package has."""
    files = set(run(["rpm", "-qpl", rpm["rpm"]]).splitlines())
    comments = "\n".join(line for line in (ROOT / "packaging" / "settings.yaml").read_text().splitlines()
                         if line.startswith("#"))
    named = re.findall(r"(/usr/share/\S+?)\.?(?:\s|$)", comments)
    assert any(path.endswith("/docs/operator/configuration.md") for path in named), comments
    assert not [path for path in named if path not in files], named


def test_no_file_of_nailguns_own_package_is_packaged(rpm):
    """On a Fuel master fuel-nailgun owns /etc/nailgun/settings.yaml (DATABASE:, API_LOG: ...): packaging it too
    is a file conflict, and the API would read Nailgun's settings. The package's own names instead."""
    files = run(["rpm", "-qpl", rpm["rpm"]]).splitlines()
    assert not [f for f in files if f.startswith(NAILGUNS_OWN)], files
    assert {SETTINGS, LOG_DIR, STATE_DIR, "/etc/logrotate.d/fuel-nailgun-extensions"} <= set(files)
    packaged = yaml.safe_load((ROOT / "packaging" / "settings.yaml").read_text())
    assert packaged["LOG"]["file"] == LOG_DIR + "/api.log"
    assert [packaged["AUTH"]["users_file"], packaged["SECRETS"]["key_repository"], packaged["CONFIGDB"]["git_root"]] \
        == [STATE_DIR + "/users.yaml", STATE_DIR + "/fernet-keys", STATE_DIR + "/configdb-git"]
    assert (ROOT / "packaging" / "nailgun-api.logrotate").read_text().count(LOG_DIR + "/*.log {") == 1
    scripts = run(["rpm", "-qp", "--scripts", rpm["rpm"]])
    assert "-d {0} ".format(STATE_DIR) in scripts, scripts


def test_rpmlint_finds_no_error(rpm):
    if shutil.which("rpmlint") is None:
        pytest.skip("rpmlint is not installed (run_tests.sh installs the Debian package rpmlint when run as root)")
    result = subprocess.run(["rpmlint", "-r", RPMLINTRC, rpm["rpm"], rpm["srpm"], SPEC],
                            capture_output=True, text=True)
    errors = [line for line in result.stdout.splitlines() if ": E: " in line]
    assert not errors, result.stdout
    assert re.search(r"\b0 errors\b", result.stdout), result.stdout + result.stderr


def test_srpm_carries_the_spec_the_sdist_and_the_wheelhouse(rpm):
    files = run(["rpm", "-qpl", rpm["srpm"]]).split()
    assert "fuel-nailgun-extensions.spec" in files
    assert any(f.endswith("-{0}.tar.gz".format(rpm["version"])) and "wheels" not in f for f in files)
    assert "fuel-nailgun-extensions-wheels-{0}.tar.gz".format(rpm["version"]) in files


@pytest.fixture(scope="module")
def payload(rpm, tmp_path_factory):
    """The RPM's files as they land on disk (rpm2cpio), whatever the user running the test."""
    directory = tmp_path_factory.mktemp("payload")
    subprocess.run("rpm2cpio {0} | cpio -idm --quiet".format(shlex.quote(str(rpm["rpm"]))), shell=True,
                   cwd=directory, check=True)
    return directory


def test_no_build_path_is_left_in_the_payload(rpm, payload):
    """The virtualenv was made in the build root: no file (#! lines, pyvenv.cfg, activate, .pyc) names it."""
    topdir = str(rpm["topdir"]).encode()
    leaks = subprocess.run(["grep", "-rlF", topdir, str(payload)], capture_output=True).stdout.decode().splitlines()
    assert not leaks, leaks
    assert (payload / VENV.lstrip("/") / "lib/python3.11/site-packages/nailgun_host/__pycache__").is_dir()


def test_the_virtualenv_runs_on_usr_bin_python3_11(payload):
    venv = payload / VENV.lstrip("/")
    config = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines())
    assert (config["home"], config["include-system-site-packages"]) == ("/usr/bin", "false")
    assert os.readlink(venv / "bin" / "python3.11") == "/usr/bin/python3.11"
    for command in COMMANDS:
        link = payload / "usr/bin" / command
        assert (link.parent / os.readlink(link)).resolve() == (venv / "bin" / command).resolve(), command
        assert (venv / "bin" / command).read_text().splitlines()[0] == "#!{0}/bin/python".format(VENV), command


def _glibc_needs(path):
    """``{"GLIBC": [Version, ...], "GLIBCXX": [...]}``: the symbol versions ``path`` needs (readelf -V)."""
    needs = {"GLIBC": [], "GLIBCXX": []}
    for name, number in re.findall(r"Name: (GLIBC|GLIBCXX)_([0-9.]+)", run(["readelf", "-V", "-W", path])):
        needs[name].append(Version(number))
    return needs


def test_every_bundled_shared_object_runs_on_el9s_glibc(payload):
    """EL9 has glibc 2.34 (this machine 2.36): every wheel is tagged for at most manylinux_2_34, and every
    shared object in the virtualenv needs at most GLIBC_2.34 and GLIBCXX_3.4.29."""
    site = payload / SITE.lstrip("/")
    for wheel in site.glob("*.dist-info/WHEEL"):
        for tag in re.findall(r"^Tag: (\S+)$", wheel.read_text(), re.M):
            platform = tag.split("-")[2]
            if platform != "any":
                glibc = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64|manylinux(1|2010|2014)_x86_64", platform)
                assert glibc, (wheel, tag)
                legacy = {"1": "2.5", "2010": "2.12", "2014": "2.17"}
                assert Version(legacy[glibc[3]] if glibc[3] else "{0}.{1}".format(glibc[1], glibc[2])) <= EL9_GLIBC
    objects = [p for p in site.rglob("*.so*") if p.is_file() and run(["file", "-b", p]).startswith("ELF")]
    assert len(objects) > 20, objects  # cryptography, psycopg, google-re2, pyyaml, ... and their .libs
    too_new = {}
    for path in objects:
        needs = _glibc_needs(path)
        if max(needs["GLIBC"], default=EL9_GLIBC) > EL9_GLIBC or max(needs["GLIBCXX"], default=EL9_GLIBCXX) > EL9_GLIBCXX:
            too_new[str(path.relative_to(site))] = needs
    assert not too_new, too_new


def _bundled_distributions(site):
    return {canonicalize_name(d.metadata["Name"]): d for d in importlib.metadata.distributions(path=[str(site)])}


def test_the_bundled_distributions_meet_setup_cfgs_requirements(payload):
    """install_requires and the bundled extras: each present in the virtualenv at a version it allows."""
    options = _metadata()
    lines = options["options"]["install_requires"].splitlines()
    for extra in BUNDLED_EXTRAS:
        lines += options["options.extras_require"][extra].splitlines()
    bundled = _bundled_distributions(payload / SITE.lstrip("/"))
    requirements = [Requirement(line.split("#")[0]) for line in lines if line.split("#")[0].strip()]
    assert len(requirements) > 20
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in bundled, name
        assert requirement.specifier.contains(bundled[name].version), (requirement, bundled[name].version)


def test_no_test_tool_is_bundled(payload):
    """What only the test extra asks for (pytest, selenium, ...) stays out of the RPM's virtualenv."""
    options = _metadata()["options.extras_require"]
    def names(text):
        return {canonicalize_name(Requirement(line.split("#")[0]).name)
                for line in text.splitlines() if line.split("#")[0].strip()}
    shipped = names(_metadata()["options"]["install_requires"])
    for extra in BUNDLED_EXTRAS:
        shipped |= names(options[extra])
    test_only = names(options["test"]) - shipped
    assert {"pytest", "selenium"} <= test_only
    bundled = set(_bundled_distributions(payload / SITE.lstrip("/")))
    assert not test_only & bundled, sorted(test_only & bundled)


def test_every_distribution_the_code_imports_is_bundled(payload):
    """Each top-level import of the packages is the standard library's, ours, or a bundled distribution's."""
    imported = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    imported.add(node.module.split(".")[0])
    site = payload / SITE.lstrip("/")
    importable = {p.name.split(".")[0] for p in site.iterdir() if not p.name.endswith((".dist-info", ".libs"))}
    missing = sorted(imported - set(sys.stdlib_module_names) - set(PACKAGES) - IMPORTED_FROM_THE_CALLER - importable)
    assert not missing, "imported but not in the RPM's virtualenv (declare them in setup.cfg): " + ", ".join(missing)


def test_every_file_of_the_packages_is_installed(rpm, payload):
    """Data files (migrations, YAML fixtures, templates, Ruby) ship too, not only modules."""
    site = payload / SITE.lstrip("/")
    source = rpm["source"]
    expected = {
        path.relative_to(source)
        for package in PACKAGES
        for path in (source / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")}
    missing = sorted(str(p) for p in expected if not (site / p).is_file())
    assert not missing, "in the source tree but not in the RPM (see packages/package_data in setup.cfg): " + \
        ", ".join(missing)


def test_entry_points_are_in_the_dist_info(rpm, payload):
    """What stevedore sees in the virtualenv: both extensions of the nailgun.extensions namespace."""
    dist = _bundled_distributions(payload / SITE.lstrip("/"))["fuel-nailgun-extensions"]
    assert dist.version == rpm["version"]
    extensions = {ep.name: ep.value for ep in dist.entry_points if ep.group == "nailgun.extensions"}
    assert extensions == {"cluster_upgrade": "nailgun_ext_upgrade.extension:ClusterUpgradeExtension",
                          "configdb": "nailgun_ext_configdb.extension:ConfigDBExtension"}


# --- installed on "EL9": a root with only the declared requirements ---------------------------------------------

#: a package that stands for EL9's: it provides exactly what the RPM requires, and carries what the payload
#: runs on, this machine's python3.11 with its standard library and every shared library it and the wheels link
STANDIN_SPEC = """\
Name: el9-standin
Version: 1
Release: 1
Summary: Stands for the EL9 packages fuel-nailgun-extensions requires
License: various
AutoReqProv: no
{provides}
%global debug_package %{{nil}}
%global _build_id_links none
%global __os_install_post %{{nil}}
%global _binary_payload w0.ufdio

%description
The capabilities fuel-nailgun-extensions requires, with the files they stand for.

%install
cp -a {stage}/. %{{buildroot}}/

%files
{files}
"""


def _linked_libraries(path):
    """The absolute paths of the shared libraries ``path`` loads (ldd), the dynamic loader included."""
    output = run(["ldd", path])
    assert "not found" not in output, (path, output)
    return set(re.findall(r"(?:=> )?(/\S+) \(0x", output))


def _stage_python(stage, venv_site):
    """This machine's /usr/bin/python3.11, its standard library and every library it or the wheels load."""
    python = Path("/usr/bin/python3.11")
    stdlib = Path(sysconfig.get_paths(vars={"installed_base": "/usr", "base": "/usr"})["stdlib"])
    assert stdlib == Path("/usr/lib/python3.11"), stdlib
    (stage / "usr/bin").mkdir(parents=True)
    shutil.copy2(python, stage / "usr/bin/python3.11")
    shutil.copytree(stdlib, stage / stdlib.relative_to("/"), symlinks=True,
                    ignore=shutil.ignore_patterns("test", "idlelib", "tkinter", "turtledemo", "site-packages",
                                                  "dist-packages"))
    objects = [python] + list(stdlib.glob("lib-dynload/*.so")) + [
        p for p in venv_site.rglob("*.so*") if p.is_file() and run(["file", "-b", p]).startswith("ELF")]
    libraries = set()
    for path in objects:
        libraries |= {Path(lib) for lib in _linked_libraries(path) if not lib.startswith(str(venv_site))}
    for library in libraries:
        target = stage / library.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library.resolve(), target)
    (stage / "tmp").mkdir(mode=0o1777)
    return sorted(libraries)


@pytest.fixture(scope="module")
def el9_root(rpm, payload, tmp_path_factory):
    """A root holding the stand-in for EL9 and the RPM, both installed by rpm without --nodeps (--noscripts:
    the scriptlets need EL's useradd and systemctl, which the stand-in does not carry; they are read above)."""
    work = tmp_path_factory.mktemp("standin")
    stage = work / "stage"
    _stage_python(stage, payload / SITE.lstrip("/"))
    required = sorted(_requirements(rpm["rpm"]))
    assert set(required) <= EL9_CAPABILITIES
    spec = work / "el9-standin.spec"
    spec.write_text(STANDIN_SPEC.format(
        provides="\n".join("Provides: " + capability for capability in required), stage=stage,
        files="\n".join("/" + p.name for p in stage.iterdir())))
    run(["rpmbuild", "--define", "_topdir {0}".format(work / "rpmbuild"), "-bb", spec])
    (standin,) = (work / "rpmbuild" / "RPMS").glob("*/el9-standin-*.rpm")
    assert set(_dependencies(standin, "provides")) >= set(required)
    root = work / "root"
    run(["rpm", "--root", root, "--initdb"])
    # alone, the RPM is refused: what it requires is missing
    bare = subprocess.run(["rpm", "--root", str(root), "-i", "--test", "--noscripts", str(rpm["rpm"])],
                          capture_output=True, text=True)
    assert bare.returncode != 0 and "python3.11 is needed" in bare.stderr, bare.stderr
    run(["rpm", "--root", root, "-i", "--noscripts", standin])
    run(["rpm", "--root", root, "-i", "--noscripts", rpm["rpm"]])
    assert run(["rpm", "--root", root, "-q", "fuel-nailgun-extensions"]).startswith(
        "fuel-nailgun-extensions-{0}-".format(rpm["version"]))
    return root


@pytest.fixture(scope="module")
def chrooted(el9_root):
    """``chrooted(command, **kwargs)``: a CompletedProcess of ``command`` run inside the root, with the kernel's
    /proc mounted there as on any running system (psutil reads it for /stats). Needs root."""
    if os.geteuid() != 0 or CHROOT is None:
        pytest.skip("chroot needs root (CI runs as root) and coreutils' chroot; the install is checked above")
    proc = el9_root / "proc"
    proc.mkdir(exist_ok=True)
    run(["mount", "-t", "proc", "proc", proc])

    def chrooted(command, **kwargs):
        return subprocess.run([CHROOT, str(el9_root)] + command, capture_output=True, text=True,
                              env=CHROOT_ENVIRON, timeout=120, **kwargs)
    yield chrooted
    run(["umount", proc])


def test_it_installs_where_only_its_requirements_are(el9_root):
    files = run(["rpm", "--root", el9_root, "-ql", "fuel-nailgun-extensions"]).splitlines()
    assert UNIT in files and VENV + "/bin/python" in files
    installed = {name.rsplit("-", 2)[0] for name in run(["rpm", "--root", el9_root, "-qa"]).split()}
    assert installed == {"el9-standin", "fuel-nailgun-extensions"}


def test_every_units_command_is_there(el9_root):
    """nailgun-api's and nailgun-feed's ExecStartPre and ExecStart name commands the root has."""
    for name in (UNIT, FEED_UNIT):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read(el9_root / name.lstrip("/"))
        for key in ("ExecStartPre", "ExecStart"):
            executable = Path(shlex.split(unit["Service"][key])[0])
            link = el9_root / executable.relative_to("/")
            target = link.parent / os.readlink(link) if link.is_symlink() else link
            assert target.resolve().is_relative_to(el9_root) and target.resolve().is_file(), (name, key, executable)


def test_fuel_ext_runs_there(chrooted):
    result = chrooted(["/usr/bin/fuel-ext", "--help"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^\s+config get\b", result.stdout, re.M), result.stdout


def test_the_units_command_serves_the_api_there_with_the_packaged_settings(el9_root, chrooted):
    """As an operator: point the settings file's database at an SQLite file, migrate, add a user, check, start
    the unit's ExecStart (its port a free one) and ask it over loopback."""
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(el9_root / UNIT.lstrip("/"))
    service = unit["Service"]
    assert (service["User"], service["Group"]) == (SERVICE_USER, SERVICE_USER)
    settings = el9_root / SETTINGS.lstrip("/")
    packaged = settings.read_text()
    placeholder = yaml.safe_load(packaged)["DATABASE_URL"]
    settings.write_text(packaged.replace(placeholder, "sqlite:///{0}/nailgun.db".format(STATE_DIR)))
    migrated = chrooted(["nailgun-syncdb"])
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert migrated.stdout.splitlines()[0] == "database: sqlite:///{0}/nailgun.db".format(STATE_DIR)
    status = chrooted(["nailgun-syncdb", "--status"])
    assert status.returncode == 0 and re.search(r"^core: \S+ \(head\)$", status.stdout, re.M), status.stdout
    users = chrooted(["nailgun-users", "set", "admin", "--role", "admin"], input="s3cret-pass\n")
    assert users.returncode == 0, users.stderr
    check = chrooted(shlex.split(service["ExecStartPre"]))
    assert check.returncode == 0, check.stdout + check.stderr
    port = free_port()
    command = [re.sub(r"^--listen=\S+$", "--listen=127.0.0.1:{0}".format(port), arg)
               for arg in shlex.split(service["ExecStart"])]
    assert command[0] == VENV + "/bin/waitress-serve"
    output = el9_root / "tmp" / "server.out"
    with open(output, "w") as out:
        server = subprocess.Popen([CHROOT, str(el9_root)] + command, stdout=out, stderr=subprocess.STDOUT,
                                  env=CHROOT_ENVIRON)
    base = "http://127.0.0.1:{0}/api/v1".format(port)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = requests.get(base + "/health", timeout=5)
                break
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, output.read_text()
                time.sleep(0.2)
        assert health.status_code == 200, health.text
        assert health.json()["database"] == "sqlite"
        assert requests.get(base + "/clusters/", timeout=5).status_code == 401
        clusters = requests.get(base + "/clusters/", auth=("admin", "s3cret-pass"), timeout=5)
        assert (clusters.status_code, clusters.json()) == (200, []), clusters.text
    finally:
        server.terminate()
        server.wait(20)
    log = el9_root / yaml.safe_load(packaged)["LOG"]["file"].lstrip("/")
    assert "/api/v1/clusters/" in log.read_text()
