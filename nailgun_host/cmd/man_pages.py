"""Manual pages of every console command: ``python -m nailgun_host.cmd.man_pages --output DIR`` writes
``NAME.1`` for each console script of the distribution (setup.cfg's ``console_scripts``).

Each page is made by argparse-manpage from the parser the command itself parses with: the module a console
script names has a ``build_parser()``, so a new option is in its page without anyone writing it, and a new
command without one stops the build. ``fuel-ext``'s parser shows cliff's commands as subcommands. The RPM's
build runs this with the packaged virtualenv's python; ``SOURCE_DATE_EPOCH`` dates the pages.

argparse wraps help at the terminal's width (``$COLUMNS``), breaking words at their hyphens; in roff a line
break is a space, so a page would say ``/etc/fuel-nailgun- extensions/settings.yaml``, and depend on the
terminal of the build. The pages are made as if the terminal were endlessly wide: one line a paragraph, which
``man`` fills.
"""
import argparse
import contextlib
import importlib
import os
import sys
from importlib import metadata

import nailgun_host

DISTRIBUTION = "fuel-nailgun-extensions"
#: the terminal width the pages are made for: no help text is that long
UNWRAPPED = 100000


def parsers():
    """``{command name: its parser}`` for every console script of the distribution, by name."""
    scripts = [entry for entry in metadata.distribution(DISTRIBUTION).entry_points if entry.group == "console_scripts"]
    return {entry.name: importlib.import_module(entry.module).build_parser() for entry in sorted(scripts)}


def _summary(parser):
    """The NAME line's words: the description's first sentence."""
    first = (parser.description or "").split(". ")[0].strip().rstrip(".")
    return first[:1].lower() + first[1:]


@contextlib.contextmanager
def _unwrapped():
    """argparse's formatters (``shutil.get_terminal_size``) see an endlessly wide terminal meanwhile."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(UNWRAPPED)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def page(parser):
    """The roff source of ``parser``'s manual page, in section 1."""
    from argparse_manpage.manpage import Manpage

    with _unwrapped():
        return str(Manpage(parser, {"project_name": DISTRIBUTION, "version": nailgun_host.__version__,
                                    "manual_title": DISTRIBUTION, "description": _summary(parser)},
                           format="single-commands-section"))


def write_pages(directory):
    """Write every command's page into ``directory`` (made when missing); returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, parser in parsers().items():
        path = os.path.join(directory, name + ".1")
        with open(path, "w", encoding="utf-8") as page_file:
            page_file.write(page(parser))
        written.append(path)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nailgun_host.cmd.man_pages",
                                     description="Write the manual page NAME.1 of every console command.")
    parser.add_argument("--output", required=True, metavar="DIR", help="the directory to write the pages into")
    args = parser.parse_args(argv)
    for path in write_pages(args.output):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
