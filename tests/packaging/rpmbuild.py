"""The RPM built as the spec's header says: its shell lines run in a copy of the work tree with a fresh HOME.

Shared by tests/packaging/test_rpm.py and tests/configdb_clients/test_hiera_packaged.py, so both build the
package by the documented steps (the latter with its own Puppet paths).
"""
import configparser
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "fuel-nailgun-extensions.spec"
#: ``python3`` on EL9 is 3.9, with which pip refuses to build this package (python_requires >= 3.10): the header's
#: steps name python3.11, and a build that runs ``python3`` fails saying so
EL9_PYTHON3 = """#!/bin/sh
echo "python3 is EL9's 3.9 here, older than this package's python_requires: run python3.11" >&2
exit 1
"""
# Not copied from the work tree into the scratch source tree.
TOP_LEVEL_JUNK = {".git", "venv", "build", "dist", "wheels"}


def version():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser["metadata"]["version"]


def run(cmd, **kwargs):
    """Run ``cmd``; its stdout, or an AssertionError with the end of both streams."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, "{0} exited with {1}\n--- stdout\n{2}\n--- stderr\n{3}".format(
        " ".join(str(c) for c in cmd), result.returncode, result.stdout[-4000:], result.stderr[-4000:])
    return result.stdout


def _ignore(directory, names):
    ignored = {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".egg-info", ".db", ".db-wal", ".db-shm"))}
    if Path(directory) == ROOT:
        ignored |= (TOP_LEVEL_JUNK & set(names)) | {n for n in names if n.startswith((".venv", ".pytest"))}
    return ignored


def header_steps():
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
    return subprocess.run(["rpm", "-q", "python3.11"], capture_output=True).returncode == 0


def build_by_the_header(workdir, python_bin, rpmbuild_args=(), stage=None):
    """Run the header's steps in a copy of the work tree, ``python_bin``'s ``python3.11`` on the PATH, and a
    ``python3`` before it that fails as EL9's (3.9) would.

    ``rpmbuild_args`` go right after ``rpmbuild`` (``--define``s); ``stage`` replaces its ``-ba`` (``-bp``:
    only unpack the sources). Returns the binary RPM (None for ``-bp``), the SRPM, the source and top dirs.
    """
    source = workdir / "src"
    shutil.copytree(ROOT, source, ignore=_ignore)
    home = workdir / "home"
    home.mkdir()
    assert (python_bin / "python3.11").is_file()
    path = workdir / "path"
    path.mkdir()
    (path / "python3.11").write_text('#!/bin/sh\nexec "{0}" "$@"\n'.format(python_bin / "python3.11"))
    (path / "python3").write_text(EL9_PYTHON3)
    for command in path.iterdir():
        command.chmod(0o755)
    environ = dict(os.environ, HOME=str(home), PATH="{0}:{1}".format(path, os.environ["PATH"]))
    steps = header_steps()
    assert steps and steps[-1].startswith("rpmbuild -ba "), steps
    extra = list(rpmbuild_args)
    if not _build_dependencies_are_rpms():
        extra.insert(0, "--nodeps")  # as the header says
    steps[-1] = " ".join(["rpmbuild"] + [_quote(a) for a in extra] + [stage or "-ba"]) + steps[-1][len("rpmbuild -ba"):]
    for step in steps:
        run(["bash", "-euc", step], cwd=source, env=environ)
    topdir = home / "rpmbuild"
    packages = list((topdir / "RPMS").glob("*/fuel-nailgun-extensions-*.rpm"))
    srpms = list((topdir / "SRPMS").glob("fuel-nailgun-extensions-*.src.rpm"))
    return {"rpm": packages[0] if packages else None, "srpm": srpms[0] if srpms else None, "source": source,
            "topdir": topdir, "version": version()}


def _quote(arg):
    return "'" + arg.replace("'", "'\\''") + "'"
