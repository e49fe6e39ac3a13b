"""The web server of ``nailgun-api``: web.py's own (cheroot), made to behave like the API it serves.

- A listen backlog of ``LISTEN_BACKLOG`` connections (waitress's default), not cheroot's 5: a burst of
  clients opening connections at once would otherwise wait for SYN retransmissions or be dropped.
- cheroot's own refusals of a request it cannot parse (a malformed ``Content-Length``, request line or
  header) are JSON, ``{"message": ..., "errors": []}``, like every answer of the application, not text/plain.
- cheroot's own log lines (a client that failed the TLS handshake or spoke plain HTTP to the TLS port, an
  error outside a request) go through ``logging`` as ``nailgun.server``, so they have the request log's
  time, level and destination (``LOG``), not bare lines on stderr.
"""
import json
import logging
import socket

from cheroot import errors as cheroot_errors
from cheroot import server as cheroot_server
from web.httpserver import WSGIServer

#: connections the kernel queues before the server accepts them (capped by net.core.somaxconn)
LISTEN_BACKLOG = 1024
LOG = logging.getLogger("nailgun.server")


def error_log(msg="", level=logging.INFO, traceback=False):
    """cheroot's ``error_log`` hook (``HTTPServer.error_log``): its message at its level, with the
    exception being handled when it asks for the traceback."""
    LOG.log(level, "%s", msg, exc_info=traceback)


class JSONRefusals(cheroot_server.HTTPRequest):
    """A request whose refusals by cheroot itself (4xx, 5xx before the application runs) are JSON."""

    def simple_response(self, status, msg=""):
        status = str(status)
        if status[:1] not in "45":  # 100 Continue and the like
            return super().simple_response(status, msg)
        message = msg.decode("latin-1") if isinstance(msg, bytes) else str(msg or status[4:])
        body = json.dumps({"message": message.strip(), "errors": []}).encode()
        self.close_connection = True  # after a request it could not parse, the stream cannot be trusted
        head = "{0} {1}\r\nContent-Type: application/json\r\nContent-Length: {2}\r\nConnection: close\r\n\r\n".format(
            self.server.protocol, status, len(body))
        try:
            self.conn.wfile.write(head.encode("latin-1") + body)
        except socket.error as exc:
            if exc.args[0] not in cheroot_errors.socket_errors_to_ignore:
                raise


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = JSONRefusals


def make_server(address, application):
    """web.py's WSGI server for ``application`` on ``address`` (host, port), not yet listening."""
    server = WSGIServer(address, application)
    server.request_queue_size = LISTEN_BACKLOG
    server.ConnectionClass = _Connection
    server.error_log = error_log
    return server
