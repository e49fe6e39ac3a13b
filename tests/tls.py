"""TLS material made in the test run: a CA, a server and a client certificate it signed, and a wrong CA.

Nothing is committed to the repository, and nothing expires while a run lasts (one day).
"""
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LIFETIME = datetime.timedelta(days=1)


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, key, issuer, issuer_key, ca=False, extensions=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject)).issuer_name(issuer.subject if issuer else _name(subject))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + LIFETIME)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            issuer_key.public_key()), critical=False)
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class TLS:
    """PEM files in ``directory``: ``ca_file``, ``cert_file``/``key_file`` (server: 127.0.0.1, ::1 and
    localhost), ``client_cert``/``client_key`` and ``wrong_ca_file`` (a CA that signed none of them)."""

    def __init__(self, directory):
        self.directory = directory
        ca_key = _key()
        ca = _certificate("nailgun test CA", ca_key, None, ca_key, ca=True)
        self.ca_file = self._write("ca.pem", ca)

        server_key = _key()
        server = _certificate("localhost", server_key, ca, ca_key, extensions=[
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                         x509.IPAddress(ipaddress.ip_address("::1"))]),
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])])
        self.cert_file = self._write("server.pem", server)
        self.key_file = self._write("server.key", server_key)

        client_key = _key()
        client = _certificate("puppet", client_key, ca, ca_key, extensions=[
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])])
        self.client_cert = self._write("client.pem", client)
        self.client_key = self._write("client.key", client_key)

        wrong_key = _key()
        self.wrong_ca_file = self._write("wrong-ca.pem", _certificate("unrelated CA", wrong_key, None, wrong_key, ca=True))

    def _write(self, name, item):
        if isinstance(item, x509.Certificate):
            data = item.public_bytes(serialization.Encoding.PEM)
        else:
            data = item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption())
        path = os.path.join(self.directory, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
        return path
