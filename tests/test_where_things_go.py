"""docs/contributing/where-things-go.md answers "where does X go" in one table; each row is checked here.

A row says what is added, the package it belongs to (host, platform, extension, tests, benchmarks) and where:
paths in backticks. Every path must exist (a directory written with its ``/``), lie in the row's package (an
extension row names the place in both extensions), and respect the faces: an extension's module imports of the
host and the platform only their faces, a platform module imports nothing of the host or an extension, and a
face it names has its ``__all__``.
"""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "contributing" / "where-things-go.md"
HEADER = ("to add", "package", "where")
#: the faces an extension builds on: an extension row may name them besides its own places
FACE_FILES = ("nailgun_host/public.py", "nailgun_platform/public.py", "nailgun_platform/client/__init__.py")
#: the places each package of a row may name (setup.cfg: where entry points register a package's parts)
PACKAGES = {
    "host": ("nailgun_host/", "setup.cfg"),
    "platform": ("nailgun_platform/",),
    "extension": ("nailgun_ext_upgrade/", "nailgun_ext_configdb/", "setup.cfg") + FACE_FILES,
    "tests": ("tests/",),
    "benchmarks": ("benchmarks/",),
}
EXTENSIONS = ("nailgun_ext_upgrade", "nailgun_ext_configdb")
FACES = {"nailgun_host.public", "nailgun_platform.public", "nailgun_platform.client"}


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def rows():
    """The rows of the page's one table ``| To add | Package | Where |``."""
    lines = PAGE.read_text().splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("|") and tuple(
        c.lower() for c in _cells(line)) == HEADER]
    assert len(headers) == 1, "where-things-go.md must hold one table headed {0}".format(HEADER)
    found = []
    for line in lines[headers[0] + 2:]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        assert len(cells) == 3, "a row has three cells: " + line
        found.append(cells)
    return found


def paths(cell):
    """The repository paths a Where cell names (code spans with a ``/`` or a file suffix)."""
    return [span for span in re.findall(r"`([^`]+)`", cell) if "/" in span or re.search(r"\.(py|cfg|md)$", span)]


def _python_files(path):
    return [path] if path.suffix == ".py" else sorted(path.rglob("*.py")) if path.is_dir() else []


def _imported(path):
    """The modules ``path`` imports (absolute imports only: the project writes no relative ones)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


ROWS = rows()


def test_the_table_answers_the_questions_a_newcomer_asks():
    asked = [row[0] for row in ROWS]
    assert len(asked) == len(set(asked)), "a question is answered twice"
    for words in ("REST route of an extension", "core object", "both extensions use", "console command",
                  "client command", "migration of an extension", "migration of the core", "setting of an extension",
                  "setting of the host", "policy rule", "hook of the extension contract"):
        assert any(words in question for question in asked), "no row says where {0!r} goes".format(words)


@pytest.mark.parametrize("question, package, where", ROWS, ids=[row[0][:50] for row in ROWS])
def test_each_row_names_existing_places_of_its_package(question, package, where):
    assert package in PACKAGES, "{0!r}: unknown package {1!r}".format(question, package)
    named = paths(where)
    assert named, "{0!r} names no place".format(question)
    for name in named:
        path = ROOT / name
        assert path.exists(), "{0!r} names {1}, which does not exist".format(question, name)
        assert path.is_dir() == name.endswith("/"), "{0}: write a directory with its '/', a file without".format(name)
        assert name.startswith(PACKAGES[package]), "{0!r} is a {1} row but names {2}".format(question, package, name)
    if package == "extension":
        own = [name for name in named if name.startswith(EXTENSIONS)]
        for extension in EXTENSIONS:
            assert any(name.startswith(extension) for name in own) or not own, (
                "{0!r} names no place in {1}".format(question, extension))


@pytest.mark.parametrize("question, package, where", ROWS, ids=[row[0][:50] for row in ROWS])
def test_each_row_respects_the_faces(question, package, where):
    for name in paths(where):
        for path in _python_files(ROOT / name):
            for module, names in _imported(path):
                inside = module.split(".")[0]
                if name.startswith(EXTENSIONS):
                    if inside in ("nailgun_host", "nailgun_platform"):
                        reached = {module} if module in FACES else {"{0}.{1}".format(module, n) for n in names}
                        assert reached & FACES, "{0} (row {1!r}) imports {2}, not a face".format(
                            path.relative_to(ROOT), question, module)
                elif name.startswith("nailgun_platform/"):
                    assert inside not in ("nailgun_host",) + EXTENSIONS, (
                        "{0} (row {1!r}) is platform code importing {2}".format(
                            path.relative_to(ROOT), question, module))
            if path.name == "public.py" or path.relative_to(ROOT).as_posix() == "nailgun_platform/client/__init__.py":
                assert "__all__" in path.read_text(), "the face {0} has no __all__".format(name)
