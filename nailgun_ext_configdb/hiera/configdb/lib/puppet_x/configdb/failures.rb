# Why a request of the ConfigDB backends got no answer, in one line: the cause, the server's host:port and
# the option to change. A certificate's fault is told by OpenSSL's verify result (the X509 V_ERR_* code that
# HTTP.start's verify callback records: a certificate for another host is not one no trusted CA signed), a
# server that does not speak TLS by OpenSSL's reason, a refusal or a timeout by the error's class. classify
# is the one place that reads them; Python's client has its twin (nailgun_platform/client/failures.py).
require 'net/http'
require 'openssl'
require 'socket'

module ConfigDB
  # A certificate the TLS options do not accept, with OpenSSL's verify result.
  class CertificateError < OpenSSL::SSL::SSLError
    attr_reader :verify_code

    def initialize(message, verify_code)
      super(message)
      @verify_code = verify_code
    end
  end

  # Marks an error raised because a server gave no answer (refused, timeout, TLS failure): its message is
  # the headline, and Puppet must show it (Failures.for_puppet).
  module NoAnswer; end

  module Failures
    HOSTNAME = [OpenSSL::X509::V_ERR_HOSTNAME_MISMATCH, OpenSSL::X509::V_ERR_IP_ADDRESS_MISMATCH].freeze
    SELF_SIGNED = [OpenSSL::X509::V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, OpenSSL::X509::V_ERR_SELF_SIGNED_CERT_IN_CHAIN].freeze
    UNKNOWN_CA = [OpenSSL::X509::V_ERR_UNABLE_TO_GET_ISSUER_CERT, OpenSSL::X509::V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
                  OpenSSL::X509::V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE].freeze

    module_function

    # The ConfigDB::Error (a misconfiguration: TLS) or ConfigDB::Unavailable (refused, timeout: what
    # `failure: graceful` forgives) to raise for a network error, its message the headline.
    def error(network_error, uri, options, service, url_option)
      _cause, headline = classify(network_error, uri, options, service, url_option)
      (network_error.is_a?(OpenSSL::SSL::SSLError) ? Error : Unavailable).new(headline).extend(NoAnswer)
    end

    # What a Hiera 5 function raises for a ConfigDB::Error: Puppet's LookupError, but for no answer the
    # error itself, since `puppet lookup` prints nothing for a LookupError (it exits 1 as for a missing
    # key) and prints any other error in one line ("Error: Could not run: ..."), as `puppet apply` does.
    def for_puppet(error)
      error.is_a?(NoAnswer) ? error : Puppet::DataBinding::LookupError.new(error.message)
    end

    # [cause, headline] for error, raised by a request to uri with the options; service names the server
    # ('ConfigDB', 'Keystone'), url_option the option that holds its URL ('the url option'). The causes are
    # those of Python's client: hostname mismatch, self-signed, unknown CA, expired, not yet valid,
    # certificate, not TLS, client certificate, handshake, refused, timeout, unknown host, connection.
    def classify(error, uri, options, service, url_option)
      where = "#{service} at #{uri.host}:#{uri.port}"
      host = uri.host
      proxy = proxy_of(uri)
      if proxy && PROXYS_FAULT.any? { |kind| error.is_a?(kind) }
        where = "the proxy at #{proxy.host}:#{proxy.port} (http_proxy) on the way to #{where}"
        host = proxy.host
        url_option = 'http_proxy (or no_proxy)'
      elsif proxy
        where = "#{where} through the proxy at #{proxy.host}:#{proxy.port} (http_proxy)"
      end
      case error
      when CertificateError then certificate(error, uri, where, options, url_option)
      when OpenSSL::SSL::SSLError
        if error.message.include?('wrong version number')
          ['not TLS', "TLS: #{where} does not speak TLS there: use an http URL in #{url_option}, or the port where " \
                      'it serves https']
        elsif error.message.include?('alert certificate required')
          ['client certificate', "TLS: #{where} demands a client certificate: set ssl_cert and ssl_key"]
        else
          ['handshake', "TLS: the handshake with #{where} failed: #{error.message.sub(/\A.*state=error: /, '')}"]
        end
      when Errno::ECONNREFUSED
        ['refused', "Connection to #{where} refused: nothing listens there; check #{url_option}"]
      when Net::OpenTimeout
        ['timeout', "No connection to #{where} within #{options['http_connect_timeout'] || 10} s: check #{url_option} " \
                    'and the firewall (or raise http_connect_timeout)']
      when Net::ReadTimeout
        ['timeout', "#{where} did not answer within #{options['http_read_timeout'] || 10} s: it is hung or overloaded " \
                    '(or raise http_read_timeout)']
      when SocketError then ['unknown host', "Cannot resolve the name #{host} (#{where}): #{error.message}; " \
                                             "check #{url_option}"]
      else ['connection', "Cannot connect to #{where}: #{error.class}: #{error.message}"]
      end
    end

    # Errors of connecting, which through a proxy are the proxy's: Net::HTTP connects to it first
    PROXYS_FAULT = [Errno::ECONNREFUSED, SocketError].freeze

    # The proxy (a URI, its credentials never shown) Net::HTTP goes through to uri: the environment's
    # http_proxy, unless no_proxy names the host; nil without one.
    def proxy_of(uri)
      http = Net::HTTP.new(uri.host, uri.port)
      http.proxy? ? URI::HTTP.build(host: http.proxy_address, port: http.proxy_port) : nil
    rescue URI::Error, ArgumentError
      nil
    end

    def certificate(error, uri, where, options, url_option)
      trusted = options['ssl_ca_cert'] ? "the CA file #{options['ssl_ca_cert']} (ssl_ca_cert)" : "the system's CAs"
      why = error.message[/\(([^()]*)\)\z/, 1] || error.message
      case error.verify_code
      when *HOSTNAME
        ['hostname mismatch', "TLS: the certificate of #{where} is not valid for the name #{uri.host} (hostname " \
                              "mismatch): connect by a name it holds (#{url_option}), or reissue it for #{uri.host}"]
      when *SELF_SIGNED
        ['self-signed', "TLS: the certificate of #{where} is self-signed and not in #{trusted} (#{why}): set " \
                        'ssl_ca_cert to a file holding it or its CA']
      when *UNKNOWN_CA
        ['unknown CA', "TLS: the certificate of #{where} is signed by a CA not in #{trusted} (#{why}): set " \
                       'ssl_ca_cert to the CA that signed it']
      when OpenSSL::X509::V_ERR_CERT_HAS_EXPIRED
        ['expired', "TLS: the certificate of #{where} has expired: the server needs a renewed certificate"]
      when OpenSSL::X509::V_ERR_CERT_NOT_YET_VALID
        ['not yet valid', "TLS: the certificate of #{where} is not valid yet: check the clocks of both machines"]
      else ['certificate', "TLS: the certificate of #{where} does not verify against #{trusted}: #{why}"]
      end
    end
  end
end
