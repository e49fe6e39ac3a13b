"""The one clock: naive UTC, as every timestamp column stores it."""
import datetime


def now():
    """The current UTC time without tzinfo (the columns are naive UTC on SQLite and PostgreSQL)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
