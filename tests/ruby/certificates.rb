# Throw-away X.509 material for the TLS tests: a CA, and certificates it signs for 127.0.0.1.
require 'openssl'
require 'tmpdir'

module Certificates
  # An authority that signs server and client certificates; #write puts PEM files in a directory.
  class Authority
    attr_reader :cert, :key

    def initialize(name)
      @key = OpenSSL::PKey::RSA.new(2048)
      @cert = Certificates.build(name, @key.public_key, nil, @key, ca: true)
    end

    # [certificate, key] for common name, signed by this authority; for the names of san (subjectAltName),
    # valid until not_after
    def issue(name, **options)
      key = OpenSSL::PKey::RSA.new(2048)
      [Certificates.build(name, key.public_key, self, @key, **options), key]
    end

    # An SSL context serving a certificate of this authority (for 127.0.0.1, or as options say); with
    # client_ca, it demands a client certificate signed by that authority.
    def server_context(client_ca: nil, **options)
      context = OpenSSL::SSL::SSLContext.new
      context.cert, context.key = issue('127.0.0.1', **options)
      if client_ca
        context.cert_store = OpenSSL::X509::Store.new.tap { |store| store.add_cert(client_ca.cert) }
        context.verify_mode = OpenSSL::SSL::VERIFY_PEER | OpenSSL::SSL::VERIFY_FAIL_IF_NO_PEER_CERT
      end
      context
    end
  end

  module_function

  def build(name, public_key, issuer, signing_key, ca: false, san: 'IP:127.0.0.1', not_after: Time.now + 3600)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = rand(1 << 64)
    cert.subject = OpenSSL::X509::Name.parse("/CN=#{name}")
    cert.issuer = issuer ? issuer.cert.subject : cert.subject
    cert.public_key = public_key
    cert.not_before = [Time.now - 60, not_after - 60].min
    cert.not_after = not_after
    extensions = OpenSSL::X509::ExtensionFactory.new(cert, issuer ? issuer.cert : cert)
    cert.add_extension(extensions.create_extension('basicConstraints', ca ? 'CA:TRUE' : 'CA:FALSE', true))
    cert.add_extension(extensions.create_extension('subjectAltName', san)) unless ca
    cert.sign(signing_key, OpenSSL::Digest.new('SHA256'))
    cert
  end

  # An SSL context serving a certificate for 127.0.0.1 that signed itself
  def self_signed_context
    context = OpenSSL::SSL::SSLContext.new
    context.key = OpenSSL::PKey::RSA.new(2048)
    context.cert = build('127.0.0.1', context.key.public_key, nil, context.key)
    context
  end

  # Writes PEM texts (name => text) into a new directory: name => path
  def write(files)
    dir = Dir.mktmpdir
    files.to_h { |name, text| [name, File.join(dir, name).tap { |path| File.write(path, text) }] }
  end
end
