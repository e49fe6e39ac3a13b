"""A WSGI application's whole answer at once: its status, headers and body, its work all done."""

#: answers that have no body, and so no length to tell
BODILESS = ("1", "204", "304")


def answered(app, environ):
    """(status, headers, body) of ``app``'s answer to ``environ``, the body read to its end and closed."""
    given = {}

    def capture(status, headers, exc_info=None):
        given.update(status=status, headers=list(headers))
        return lambda data: given.setdefault("written", []).append(data)

    result = app(environ, capture)
    try:
        body = b"".join(given.get("written", [])) + b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return given["status"], given["headers"], body


def measured(app):
    """``app`` answering with a ``Content-Length``: web.py streams every answer, even a whole one, so a
    server (waitress) closes the connection after each; every handler here returns its whole body."""
    def application(environ, start_response):
        status, headers, body = answered(app, environ)
        if not status.startswith(BODILESS):
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"] + [
                ("Content-Length", str(len(body)))]
        start_response(status, headers)
        return [body]
    return application
