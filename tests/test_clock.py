"""One clock (issue 25, item 6): every naive-UTC "now" the packages store comes from ``nailgun_platform.clock``."""
import ast
import datetime
import os

from nailgun_platform import clock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade", "nailgun_ext_configdb")
CLOCK = os.path.join("nailgun_platform", "clock.py")


def _naive_nows():
    """``[where]`` of each ``....now(...).replace(tzinfo=None)`` and each function named ``now``/``_now``."""
    found = []
    for package in PACKAGES:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, package)):
            for name in (n for n in files if n.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as stream:
                    tree = ast.parse(stream.read(), path)
                for node in ast.walk(tree):
                    defined = isinstance(node, ast.FunctionDef) and node.name in ("now", "_now")
                    replaced = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                                and node.func.attr == "replace" and isinstance(node.func.value, ast.Call)
                                and getattr(node.func.value.func, "attr", None) == "now"
                                and any(k.arg == "tzinfo" for k in node.keywords))
                    if defined or replaced:
                        found.append("{0}:{1}".format(os.path.relpath(path, ROOT), node.lineno))
    return found


def test_the_clock_is_naive_utc():
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    now = clock.now()
    assert now.tzinfo is None and before <= now <= datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def test_no_module_keeps_a_clock_of_its_own():
    found = _naive_nows()
    assert [where for where in found if where.startswith(CLOCK)], "the reading finds the clock itself"
    assert [where for where in found if not where.startswith(CLOCK)] == []
