"""How the commands name the documents of sessions, deployments and conflicts (one line each).

A session stages whole documents: a ConfigDB document (``{"type": "configdb", "resource",
"resource_name", "level", "kind"}``) or an environment's model (``{"type": "model"}``). Tables
show a readable line; ``-f json|yaml`` keep the server's structure (cliff's machine-readable form).
"""
import json

from cliff import columns


def items(value):
    """The list the server sent, or none when it sent something else: printing never fails on a body."""
    return value if isinstance(value, list) else []


def entries(value):
    return [item for item in items(value) if isinstance(item, dict)]


def label(descriptor):
    """``values of astute at /nodes/5/``, ``the environment model``; anything else as compact JSON."""
    if not isinstance(descriptor, dict):
        return json.dumps(descriptor, sort_keys=True)
    if descriptor.get("type") == "model":
        return "the environment model"
    if descriptor.get("type") == "configdb":
        return "{0} of {1} at {2}".format(descriptor.get("kind"),
                                          descriptor.get("resource_name") or descriptor.get("resource"),
                                          descriptor.get("level") or "/")
    return json.dumps(descriptor, sort_keys=True)


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
