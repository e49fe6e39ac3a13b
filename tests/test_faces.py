"""The faces extensions import (issue 25, item 1): ``nailgun_host.public``, ``nailgun_platform.public`` and the client
toolkit ``nailgun_platform.client``. Each one's ``__all__`` is its list; import-linter checks which modules an
extension imports (``extensions-import-faces``), these tests check the names: every name an extension takes from a
face is listed, every listed name is bound, and an extension's domain modules take no web-layer name from the face.
"""
import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FACES = ("nailgun_host.public", "nailgun_platform.public", "nailgun_platform.client")
EXTENSIONS = ("nailgun_ext_upgrade", "nailgun_ext_configdb")
#: the extensions' domain modules (setup.cfg's extension-domain-without-web contract)
DOMAIN = ("nailgun_ext_upgrade/objects", "nailgun_ext_upgrade/transformations", "nailgun_ext_upgrade/validators.py",
          "nailgun_ext_configdb/objects")
#: where the host's web layer lives
WEB = ("nailgun_host.api", "nailgun_host.app", "nailgun_host.urls", "web")


def _modules(*paths):
    for path in paths:
        path = ROOT / path
        yield from ([path] if path.suffix == ".py" else sorted(path.rglob("*.py")))


def _taken(path):
    """``[(face, name, line)]`` of the names ``path`` imports from a face."""
    tree = ast.parse(path.read_text())
    return [(node.module, alias.name, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in FACES for alias in node.names]


def _home(value):
    """The module a face's name comes from."""
    return value.__name__ if isinstance(value, type(importlib)) else getattr(value, "__module__", None)


@pytest.mark.parametrize("face", FACES)
def test_all_is_the_list_of_each_face(face):
    module = importlib.import_module(face)
    listed = module.__all__
    assert len(listed) == len(set(listed)), "{0} lists a name twice".format(face)
    bound = {name for name in vars(module) if not name.startswith("_")} | {"__version__"} & set(vars(module))
    submodules = {name for name in bound if _home(getattr(module, name)) == "{0}.{1}".format(face, name)}
    assert set(listed) == bound - submodules, "{0}: bound but not in __all__: {1}; listed but not bound: {2}".format(
        face, sorted(bound - submodules - set(listed)), sorted(set(listed) - bound))


def test_every_name_an_extension_takes_from_a_face_is_on_its_list():
    unlisted = [(str(path.relative_to(ROOT)), line, face, name)
                for path in _modules(*EXTENSIONS) for face, name, line in _taken(path)
                if name not in importlib.import_module(face).__all__]
    assert not unlisted, "names taken from a face but not in its __all__: {0}".format(unlisted)


def test_extension_domain_modules_take_no_web_name_from_the_face():
    face = importlib.import_module("nailgun_host.public")
    web_names = {name for name in face.__all__ if (_home(getattr(face, name)) or "").startswith(WEB)}
    assert {"BaseHandler", "route", "session_routes"} <= web_names  # the test sees the web layer's names
    taken = [(str(path.relative_to(ROOT)), line, name) for path in _modules(*DOMAIN)
             for module, name, line in _taken(path) if module == "nailgun_host.public" and name in web_names]
    assert not taken, "extension domain modules importing web-layer names: {0}".format(taken)


def test_every_name_on_a_face_is_one_an_extension_uses():
    """A face lists what the extensions use: a name none of them takes is dead weight on the contract."""
    used = {face: set() for face in FACES}
    for path in _modules(*EXTENSIONS):
        tree = ast.parse(path.read_text())
        for face, name, _line in _taken(path):
            used[face].add(name)
        bound = {alias.asname or alias.name: "{0}.{1}".format(node.module, alias.name) for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
        for node in ast.walk(tree):  # ``from nailgun_platform import client`` and then ``client.SessionOpen``
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and bound.get(node.value.id) in FACES:
                used[bound[node.value.id]].add(node.attr)
    for face in FACES:
        unused = sorted(set(importlib.import_module(face).__all__) - used[face])
        assert not unused, "{0} lists names no extension uses: {1}".format(face, unused)
