"""How the commands name the documents of sessions, deployments and conflicts (one line each).

A session stages whole documents, each described by the extension that staged it
(``{"type": ..., ...}``). Tables show a readable line, which the extension's client code gives:
the entry point of its type in the group ``LABELS`` (setup.cfg), a function of the descriptor.
``-f json|yaml`` keep the server's structure (cliff's machine-readable form).
"""
import functools
import importlib.metadata
import json

from cliff import columns

#: the entry point group naming, per document type (the entry point's name), the function that labels it
LABELS = "nailgun.session_document_labels"


def items(value):
    """The list the server sent, or none when it sent something else: printing never fails on a body."""
    return value if isinstance(value, list) else []


def entries(value):
    return [item for item in items(value) if isinstance(item, dict)]


@functools.lru_cache(maxsize=1)
def labellers():
    """``{document type: entry point}`` of the installed extensions' labels (``LABELS``)."""
    return {entry.name: entry for entry in importlib.metadata.entry_points(group=LABELS)}


def label(descriptor):
    """The line its extension gives a document (``values of astute at /nodes/5/``, ``the environment model``);
    a document of a type no installed extension labels as compact JSON."""
    kind = descriptor.get("type") if isinstance(descriptor, dict) else None
    entry = labellers().get(kind) if isinstance(kind, str) else None
    if entry is None:
        return json.dumps(descriptor, sort_keys=True)
    return entry.load()(descriptor)


def staged_line(entry):
    """A session's staged document and the keys it changes."""
    keys = items(entry.get("changed_keys"))
    return label(entry.get("document")) + (": " + ", ".join(map(str, keys)) if keys else "")


def conflict_line(entry):
    """A 409 entry: the document another change wrote since the session opened."""
    line = label(entry.get("document")) + ": changed"
    if entry.get("revision") is not None:
        line += " in revision {0}".format(entry["revision"])
    if entry.get("author"):
        line += " by {0}".format(entry["author"])
    return line


class Documents(columns.FormattableColumn):
    """A session's or deployment's ``documents``: one line each in a table."""

    def human_readable(self):
        return "\n".join(staged_line(entry) for entry in entries(self._value))


class Conflicts(columns.FormattableColumn):
    def human_readable(self):
        return "\n".join(conflict_line(entry) for entry in entries(self._value))


class Lines(columns.FormattableColumn):
    """A list of strings (a deployment's model sections): one a line."""

    def human_readable(self):
        return "\n".join(map(str, items(self._value)))


class JSONValue(columns.FormattableColumn):
    """Any JSON value: compact JSON in a table, itself in ``-f json|yaml``."""

    def human_readable(self):
        return "" if self._value is None else json.dumps(self._value, sort_keys=True)


class Document(columns.FormattableColumn):
    def human_readable(self):
        return label(self._value)
