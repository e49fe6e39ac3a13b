"""TLS material made in the test run: a CA, a server and a client certificate it signed, and a wrong CA; and
server certificates that each fail a client's check for one cause (``TLS.faulty``).

Nothing is committed to the repository, and nothing but the expired certificate expires while a run lasts (one day).
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


def _certificate(subject, key, issuer, issuer_key, ca=False, extensions=(), lifetime=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before, not_after = lifetime or (now - datetime.timedelta(minutes=5), now + LIFETIME)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject)).issuer_name(issuer.subject if issuer else _name(subject))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
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


def _server_names(*names):
    return x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(name)) if name[0].isdigit() or ":" in name
                                        else x509.DNSName(name) for name in names])


#: the loopback names the good server certificate holds
LOOPBACK = ("localhost", "127.0.0.1", "::1")


class TLS:
    """PEM files in ``directory``: ``ca_file``, ``cert_file``/``key_file`` (server: 127.0.0.1, ::1 and
    localhost), ``client_cert``/``client_key`` and ``wrong_ca_file`` (a CA that signed none of them).

    ``faulty``: cause => (certificate, key) of a server certificate that a client trusting ``ca_file`` refuses
    for that cause alone: ``hostname mismatch`` (the CA's, for configdb.example only), ``self-signed`` (loopback names,
    signed by itself), ``expired`` (the CA's, loopback names, expired yesterday)."""

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

        now = datetime.datetime.now(datetime.timezone.utc)
        usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
        self_key = _key()
        made = {
            "hostname mismatch": ("configdb.example", ca, ca_key, _server_names("configdb.example"), None),
            "self-signed": ("localhost", None, None, _server_names(*LOOPBACK), None),
            "expired": ("localhost", ca, ca_key, _server_names(*LOOPBACK),
                        (now - 2 * LIFETIME, now - LIFETIME)),
        }
        self.faulty = {}
        for cause, (subject, issuer, issuer_key, names, lifetime) in made.items():
            key = self_key if issuer is None else _key()
            certificate = _certificate(subject, key, issuer, issuer_key or key, extensions=[names, usage],
                                       lifetime=lifetime)
            self.faulty[cause] = (self._write(cause + ".pem", certificate), self._write(cause + ".key", key))

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
