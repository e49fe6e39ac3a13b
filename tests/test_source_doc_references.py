"""The packages' source points readers at the documentation where it lives now (issue 25, item 7): a message, a
policy description or a comment names a page of docs/ that exists, never a section of the README (which holds
the tour and links only, so a section named there is gone). What the RPM installs (packaging/, specs/) points at
pages and sections that exist too (issue 26: the settings file named a README section "Settings" that was not)."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade", "nailgun_ext_configdb")
SOURCES = sorted(path for package in PACKAGES for pattern in ("*.py", "*.rb")
                 for path in (ROOT / package).rglob(pattern))


def _named(pattern):
    return [(path.relative_to(ROOT), number, found)
            for path in SOURCES for number, line in enumerate(path.read_text().splitlines(), 1)
            for found in re.findall(pattern, line)]


#: what the RPM builds and installs: its comments are the first documentation an operator reads
PACKAGING = sorted(path for folder in ("packaging", "specs") for path in (ROOT / folder).rglob("*") if path.is_file())
#: a page (docs/....md or README.md), then an optional #anchor or a section named in quotes
PAGE_POINTER = re.compile(r'(?P<page>(?:docs/[\w./-]+|README)\.md)(?:#(?P<anchor>[\w-]+)|'
                          r'(?:,|\'s)? (?:section|heading) "(?P<section>[^"]+)")?')
#: a section named without its page: ``section "X"`` or ``"X" section``
SECTION = re.compile(r'\b(?:section|heading) "[^"]+"|"[^"]+" (?:section|heading)\b')


def _headings(page):
    """A page's headings, as written and as GitHub's anchors (lower case, spaces to dashes, punctuation dropped)."""
    titles = [line.lstrip("#").strip() for line in (ROOT / page).read_text().splitlines()
              if re.match(r"#{1,6} ", line)]
    return set(titles) | {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") for title in titles}


def _packaging_pointers():
    return [(path.relative_to(ROOT), number, line) for path in PACKAGING
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            if PAGE_POINTER.search(line) or SECTION.search(line) or re.search(r"\bREADME\b", line)]


def test_the_packaging_points_at_the_docs():
    assert any(str(where) == "packaging/settings.yaml" for where, _, _ in _packaging_pointers())


@pytest.mark.parametrize("where, number, line", _packaging_pointers(), ids=str)
def test_every_doc_pointer_of_the_packaging_names_a_page_and_section_that_exist(where, number, line):
    pointers = list(PAGE_POINTER.finditer(line))
    named = sum(1 for _ in SECTION.finditer(line))
    assert pointers, "{0}:{1} names a section or the README without its page: {2}".format(where, number, line)
    assert named <= sum(1 for pointer in pointers if pointer.group("section")), (
        "{0}:{1} names a section without its page: {2}".format(where, number, line))
    for pointer in pointers:
        assert (ROOT / pointer.group("page")).is_file(), "{0}:{1} names {2}, which does not exist".format(
            where, number, pointer.group("page"))
        wanted = pointer.group("anchor") or pointer.group("section")
        assert wanted is None or wanted in _headings(pointer.group("page")), (
            "{0}:{1} names the section {2!r} of {3}, which has no such heading".format(
                where, number, wanted, pointer.group("page")))


def test_the_sources_are_read():
    assert len(SOURCES) > 100 and _named(r"docs/[\w./-]+\.md")


@pytest.mark.parametrize("where, number, page", _named(r"docs/[\w./-]+\.md"), ids=str)
def test_every_docs_page_the_source_names_exists(where, number, page):
    assert (ROOT / page).is_file(), "{0}:{1} names {2}, which does not exist".format(where, number, page)


def test_no_source_sends_a_reader_to_the_readme():
    named = _named(r"\bREADME\b(?!\.md)[^\n]{0,30}")
    assert not named, "name the docs/ page instead: " + "; ".join("{0}:{1} {2}".format(*n) for n in named)


def _strings_in_code(path):
    """The string constants of ``path`` that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_platform_names_no_extension_even_in_a_string():
    """import-linter sees imports only; a module name in a string (an entry point filter) is the same knowledge."""
    named = ["{0}:{1} {2!r}".format(path.relative_to(ROOT), node.lineno, node.value)
             for path in sorted((ROOT / "nailgun_platform").rglob("*.py")) for node in _strings_in_code(path)
             if re.search(r"nailgun_ext_|nailgun_host", node.value)]
    assert not named, "the platform must be handed what it needs of the host and the extensions: " + "; ".join(named)
