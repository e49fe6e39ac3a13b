# The ConfigDB backends' connections (to ConfigDB and to Keystone): timeouts, TLS options named as
# hiera-http names them (so that an operator's hiera-http options carry over), and the process's
# kept-alive connections to ConfigDB.
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

  # Kept-alive connections shared by every client of the process, an idle list per server and TLS
  # settings: the data sources of a run, and the compilations of a Puppet server (each with its own
  # clients, one per hierarchy location), reuse a connection instead of paying a TCP and TLS
  # handshake each. A connection serves one request at a time; one that failed is closed, not kept.
  module Connections
    # idle connections kept per server: enough for a Puppet server's concurrent compilations
    MAX_IDLE = 4

    @idle = {}
    @lock = Mutex.new
    @pid = Process.pid

    class << self
      # Yields a started connection to uri and returns the block's value.
      def with(uri, options)
        key = key_for(uri, options)
        http = checkout(key) || HTTP.http_for(uri, options).start
        kept = false
        begin
          result = yield http
          kept = checkin(key, http)
          result
        ensure
          close(http) unless kept
        end
      end

      def clear
        idle = @lock.synchronize { @idle.values.flatten.tap { @idle.clear } }
        idle.each { |http| close(http) }
      end

      private

      def key_for(uri, options)
        [uri.scheme, uri.host, uri.port, HTTP.verify?(options),
         *%w[ssl_ca_cert ssl_cert ssl_key open_timeout read_timeout].map { |name| options[name].to_s }]
      end

      def checkout(key)
        @lock.synchronize do
          # a forked child must not talk over its parent's sockets; it drops them unclosed, since
          # closing would end the parent's TLS sessions too
          @idle, @pid = {}, Process.pid if @pid != Process.pid
          @idle[key]&.pop
        end
      end

      def checkin(key, http)
        @lock.synchronize do
          idle = (@idle[key] ||= [])
          next false if idle.size >= MAX_IDLE || @pid != Process.pid
          idle.push(http)
          true
        end
      end

      def close(http)
        http.finish if http.started?
      rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
        nil
      end
    end
  end
end
