# The ConfigDB backends' connections (to ConfigDB and to Keystone): timeouts and TLS options named as
# hiera-http names them (so that an operator's hiera-http options carry over), and the process's
# kept-alive connections to ConfigDB.
require 'net/http'
require 'openssl'
require 'socket'
require 'timeout'
require 'puppet_x/configdb/failures'

module ConfigDB
  class Error < StandardError; end
  # ConfigDB is out of reach or failing (network error, timeout, 5xx): what `failure: graceful` forgives
  class Unavailable < Error; end

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

    # A started connection to uri (yielded to the block, and finished after it, when one is given). A
    # certificate the options do not accept raises CertificateError with OpenSSL's verify result.
    def start(uri, options, &block)
      http = http_for(uri, options)
      rejected = nil
      http.verify_callback = ->(ok, store) { ok || (rejected ||= store.error) && false }
      begin
        http.start(&block)
      rescue OpenSSL::SSL::SSLError => e
        raise unless rejected
        raise CertificateError.new(e.message, rejected)
      end
    end

    # A connection to uri with the options' timeouts (hiera-http's http_connect_timeout and
    # http_read_timeout, 10 s each by default) and, for https, its TLS settings. Net::HTTP's own
    # retry of an idempotent request is off: after a read timeout it would silently wait the
    # timeout a second time (Connections retries only a kept-alive connection the server closed).
    def http_for(uri, options)
      http = Net::HTTP.new(uri.host, uri.port)
      http.open_timeout = (options['http_connect_timeout'] || 10).to_f
      http.read_timeout = http.write_timeout = (options['http_read_timeout'] || 10).to_f
      http.max_retries = 0
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
    # how a kept-alive connection the server closed meanwhile fails; a fresh connection is tried once
    STALE = [EOFError, Errno::ECONNRESET, Errno::EPIPE, Errno::ECONNABORTED].freeze

    @idle = {}
    @lock = Mutex.new
    @pid = Process.pid

    class << self
      # Yields a started connection to uri and returns the block's value. Only a reused connection
      # that turns out closed by the server is replaced (once); a timeout or a refusal is final.
      def with(uri, options, &block)
        key = key_for(uri, options)
        reused = checkout(key)
        begin
          use(key, reused || HTTP.start(uri, options), &block)
        rescue *STALE
          raise unless reused
          use(key, HTTP.start(uri, options), &block)
        end
      end

      def clear
        idle = @lock.synchronize { @idle.values.flatten.tap { @idle.clear } }
        idle.each { |http| close(http) }
      end

      private

      def use(key, http)
        kept = false
        result = yield http
        kept = checkin(key, http)
        result
      ensure
        close(http) unless kept
      end

      def key_for(uri, options)
        [uri.scheme, uri.host, uri.port, HTTP.verify?(options),
         *%w[ssl_ca_cert ssl_cert ssl_key http_connect_timeout http_read_timeout].map { |name| options[name].to_s }]
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
