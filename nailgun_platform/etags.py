"""Entity tags (RFC 9110 8.8.3): how an ``If-None-Match`` header names a tag."""


def none_match(header, tag):
    """Whether an ``If-None-Match`` value names ``tag`` (weak comparison, ``*`` for any)."""
    tags = [t.strip() for t in header.split(",") if t.strip()]
    return any(t == "*" or (t[2:] if t.startswith("W/") else t) == tag for t in tags)
