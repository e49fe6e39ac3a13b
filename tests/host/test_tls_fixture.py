"""The test CA's certificates do what the HTTPS tests rely on, checked with Python's own TLS server."""
import http.server
import ssl
import threading

import pytest
import requests


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        peer = self.connection.getpeercert()
        body = dict(x[0] for x in peer["subject"])["commonName"].encode() if peer else b"anonymous"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(params=[ssl.CERT_OPTIONAL, ssl.CERT_REQUIRED], ids=["client-cert-optional", "client-cert-required"])
def https(request, tls):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.load_verify_locations(tls.ca_file)
    context.verify_mode = request.param
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield request.param, server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_ca_verifies_the_server_and_the_client_certificate_identifies(https, tls, host):
    mode, port = https
    url = "https://{0}:{1}/".format(host, port)
    answer = requests.get(url, verify=tls.ca_file, cert=(tls.client_cert, tls.client_key), timeout=10)
    assert answer.text == "puppet"
    if mode == ssl.CERT_OPTIONAL:
        assert requests.get(url, verify=tls.ca_file, timeout=10).text == "anonymous"
    else:
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(url, verify=tls.ca_file, timeout=10)


def test_the_wrong_ca_and_the_system_cas_refuse_the_server(https, tls):
    url = "https://127.0.0.1:{0}/".format(https[1])
    for verify in (tls.wrong_ca_file, True):
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(url, verify=verify, cert=(tls.client_cert, tls.client_key), timeout=10)
