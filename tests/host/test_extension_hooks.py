"""The extension contract stays true to its code (issue 25, item 6), as datasette tests its plugin hooks.

``BaseExtension`` (``nailgun_host/extensions.py``) is the contract's documentation: every member an extension
may declare has its signature there and a docstring (or a ``#:`` comment) saying when the host fires or reads it.
These tests read the packages' source, so a hook added, renamed or dropped anywhere is checked where it is used:
every name handed to ``fire``, ``fire_for_cluster`` or ``call_provided`` is declared, every hook is fired or read
by the host or the platform, and an extension defines no public method the host would never call.
"""
import ast
import inspect
import os
import re
import sys

import pytest

import nailgun_host
from nailgun_host import extensions
from nailgun_host.extensions import BaseExtension
from tests.host.conftest import TOY_DIR

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(nailgun_host.__file__)))
PACKAGES = ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade", "nailgun_ext_configdb")
#: the packages whose code fires hooks or reads an extension's declarations
HOST = ("nailgun_host", "nailgun_platform")
#: how a hook's name reaches the host's fire functions: the position of the name among the call's arguments
FIRE_FUNCTIONS = {"fire": 0, "fire_for_cluster": 1, "call_provided": 0}
CONTRACT_SOURCE = inspect.getsourcefile(extensions)


def _modules(packages):
    for package in packages:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as stream:
                        yield os.path.relpath(path, ROOT), ast.parse(stream.read(), path)


def _called_name(call):
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)


def fired(packages=PACKAGES):
    """``[(where, function, hook name or None when it is not a literal)]`` of every call of a fire function."""
    found = []
    for path, tree in _modules(packages):
        for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
            function = _called_name(call)
            if function not in FIRE_FUNCTIONS or path == os.path.relpath(CONTRACT_SOURCE, ROOT):
                continue
            position = FIRE_FUNCTIONS[function]
            argument = call.args[position] if len(call.args) > position else None
            name = argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, str) else None
            found.append(("{0}:{1}".format(path, call.lineno), function, name))
    return found


def read_attributes(packages=HOST):
    """Every ``x.name`` read in the host's and the platform's code: how a hook is called or a declaration read."""
    return {node.attr for _path, tree in _modules(packages) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)}


def _contract_class():
    with open(CONTRACT_SOURCE, encoding="utf-8") as stream:
        source = stream.read()
    tree = ast.parse(source)
    (found,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "BaseExtension"]
    return found, source.splitlines()


def members():
    """``{name: documentation}`` of the contract's public members, as its source says them."""
    contract, lines = _contract_class()
    documented = {}
    for position, statement in enumerate(contract.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names, doc = [statement.name], ast.get_docstring(statement)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            comment = lines[statement.lineno - 2].strip()
            following = contract.body[position + 1] if position + 1 < len(contract.body) else None
            doc = comment[2:].strip() if comment.startswith("#:") else None
            if doc is None and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                doc = following.value.value  # an attribute docstring
        else:
            continue
        documented.update({name: doc for name in names if not name.startswith("_")})
    return documented


HOOKS = members()


def test_the_contract_reading_sees_the_members_python_sees():
    public = {name for name in dir(BaseExtension) if not name.startswith("_")}
    assert set(HOOKS) == public
    assert {"on_node_create", "on_cluster_delete", "urls", "check_settings", "on_session_deploy"} <= set(HOOKS)


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_every_member_of_the_contract_is_documented(hook):
    assert HOOKS[hook] and len(HOOKS[hook].split()) >= 3, (
        "BaseExtension.{0} needs a docstring (or a #: comment) saying when it is fired or read".format(hook))


def test_every_member_of_the_contract_is_on_the_extending_page():
    with open(os.path.join(ROOT, "docs", "extending.md"), encoding="utf-8") as stream:
        page = stream.read()
    missing = sorted(hook for hook in HOOKS if not re.search(r"`{0}[`(]".format(re.escape(hook)), page))
    assert not missing, "docs/extending.md does not name these members of BaseExtension: {0}".format(missing)


def test_the_fire_functions_are_found():
    """The reading below finds what it must: without this, an empty result would pass everything."""
    names = {name for _where, _function, name in fired()}
    assert {"on_node_create", "on_cluster_delete", "on_before_deployment_check"} <= names


def test_every_fired_name_is_a_documented_hook():
    wrong = ["{0}: {1}({2!r})".format(where, function, name) for where, function, name in fired()
             if name is None or name not in HOOKS]
    assert not wrong, "fired names that are no hook of BaseExtension (or not a literal): " + ", ".join(wrong)


def test_every_hook_is_fired_or_read_by_the_host():
    used = {name for _where, _function, name in fired(HOST)} | read_attributes()
    unused = sorted(set(HOOKS) - used)
    assert not unused, "hooks nobody fires or reads: fire them where Nailgun does, or remove them: {0}".format(unused)


@pytest.fixture
def extension_classes():
    """The installed extensions' classes and the host tests' toy one (a provided method, every callback kind)."""
    sys.path.insert(0, TOY_DIR)
    import toy_ext

    yield [type(extension) for extension in extensions.load_extensions()] + [toy_ext.ToyA]
    sys.path.remove(TOY_DIR)


def test_an_extension_declares_only_hooks_and_what_it_provides(extension_classes):
    """A misspelt callback (``on_node_deleted``) would never be fired: each public member an extension
    defines is one of the contract's, or a method it ``provides`` to the others."""
    classes = extension_classes
    assert {c.__name__ for c in classes} >= {"ClusterUpgradeExtension", "ConfigDBExtension", "ToyA"}
    for extension in classes:
        own = {name for klass in extension.__mro__ if klass not in BaseExtension.__mro__
               for name in vars(klass) if not name.startswith("_")}
        strays = own - set(HOOKS) - set(extension.provides)
        assert not strays, "{0} defines {1}, which the host never calls".format(extension.__name__, sorted(strays))
        for name in extension.provides:
            assert callable(getattr(extension, name, None)), "{0} provides {1!r} but has no such method".format(
                extension.__name__, name)

