# The ConfigDB backends' connections (to ConfigDB and to Keystone): timeouts, and TLS options
# named as hiera-http names them, so that an operator's hiera-http options carry over.
require 'net/http'
require 'openssl'
require 'socket'
require 'timeout'

module ConfigDB
  class Error < StandardError; end

  NETWORK_ERRORS = [SystemCallError, IOError, SocketError, Timeout::Error, OpenSSL::SSL::SSLError,
                    Net::OpenTimeout, Net::ReadTimeout, EOFError].freeze

  module HTTP
    module_function

    # options: ssl_ca_cert (a CA file; the system's store without it), ssl_verify (default true),
    # ssl_cert/ssl_key (a client certificate and its key, PEM files). Only for https URLs.
    def apply(http, options)
      http.use_ssl = true
      http.ca_file = options['ssl_ca_cert'].to_s if options['ssl_ca_cert']
      http.verify_mode = verify?(options) ? OpenSSL::SSL::VERIFY_PEER : OpenSSL::SSL::VERIFY_NONE
      return http unless options['ssl_cert']
      http.cert = OpenSSL::X509::Certificate.new(File.read(options['ssl_cert'].to_s))
      http.key = OpenSSL::PKey.read(File.read((options['ssl_key'] || options['ssl_cert']).to_s))
      http
    end

    def verify?(options)
      ![false, 'false', 'no', 0].include?(options['ssl_verify'])
    end

    # A connection to uri with the options' timeouts and, for https, its TLS settings.
    def http_for(uri, options)
      http = Net::HTTP.new(uri.host, uri.port)
      http.open_timeout = (options['open_timeout'] || 5).to_f
      http.read_timeout = (options['read_timeout'] || 30).to_f
      apply(http, options) if uri.scheme == 'https'
      http
    end
  end
end
