"""The pages build the DOM one way (console.js's el(), add() and fill()): never from HTML text, which would run what
the API holds, nor with DOM methods that show null as the text "null". Read from the shipped modules, no browser."""
import pathlib
import re

import pytest

STATIC = pathlib.Path(__file__).resolve().parents[2] / "nailgun_host" / "console" / "static"
MODULES = sorted(STATIC.glob("*.js"))
#: ways into the DOM other than el(), add() and fill(); console.js's add() is the one appendChild
FORBIDDEN = re.compile(r"\.(innerHTML|outerHTML|insertAdjacentHTML|append|replaceChildren|before|after|replaceWith)\b"
                       r"|document\.write|\bappendChild\b")


def test_the_modules_are_found():
    assert {module.name for module in MODULES} >= {"console.js", "environments.js", "history.js", "sessions.js",
                                                   "upgrade.js"}


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.name)
def test_the_dom_is_built_through_el_add_and_fill_only(module):
    lines = module.read_text().splitlines()
    found = [(number, line.strip()) for number, line in enumerate(lines, 1) if FORBIDDEN.search(line)]
    if module.name == "console.js":  # add() itself
        found = [(number, line) for number, line in found
                 if line != "parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));"]
    assert found == []
