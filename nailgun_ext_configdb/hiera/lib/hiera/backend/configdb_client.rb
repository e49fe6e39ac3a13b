# The ConfigDB side of the Hiera backends: a data source's effective values for one node.
#
# A Puppet run looks up thousands of keys, so a data source is fetched once (one GET of
# its effective values) and kept in a process-wide store; when it is older than the
# caller's max_age it is revalidated with If-None-Match, and a 304 keeps the stored copy.
# An unreachable server, an unknown environment or node raise ConfigDB::Error: a lookup must
# never quietly come back empty.
require 'json'
require 'net/http'
require 'openssl'
require 'uri'

module ConfigDB
  # Fuel's order of data sources, the most specific first (the spec's "Data model").
  FUEL_HIERARCHY = %w[
    override/node override/plugins
    override/configuration/node override/configuration/role override/configuration/cluster
    globals astute
  ].freeze

  class Error < StandardError; end

  class Client
    DEFAULTS = {
      'url' => 'http://127.0.0.1:8000/api/v1/config',
      'open_timeout' => 5,
      'read_timeout' => 30,
    }.freeze
    NETWORK_ERRORS = [SystemCallError, IOError, SocketError, Timeout::Error, OpenSSL::SSL::SSLError,
                      Net::OpenTimeout, Net::ReadTimeout, EOFError].freeze

    Entry = Struct.new(:etag, :data, :checked_at)

    @store = {}
    @lock = Mutex.new
    class << self
      # url => Entry, shared by every backend instance of the process
      attr_reader :store, :lock

      def clear
        @lock.synchronize { @store.clear }
      end
    end

    # options: url, user, password, ca_file, ssl_verify (default true), open_timeout, read_timeout
    def initialize(options = {})
      @options = DEFAULTS.merge(options.each_with_object({}) { |(k, v), h| h[k.to_s] = v })
      @base = @options['url'].to_s.chomp('/')
    end

    def source_url(environment, node, source)
      raise Error, 'ConfigDB: no environment id configured' if environment.to_s.empty?
      path = "/environments/#{escape(environment)}"
      path += "/nodes/#{escape(node)}" unless node.to_s.empty?
      path += "/resources/#{source.to_s.split('/').map { |part| escape(part) }.join('/')}/values?effective"
      @base + path
    end

    # The effective values (a Hash) of a data source; {} when the server has none for it.
    def effective(environment, node, source, max_age: 0)
      url = source_url(environment, node, source)
      entry = self.class.lock.synchronize { self.class.store[url] }
      return entry.data if entry && now - entry.checked_at < max_age
      entry = fetch(url, entry)
      self.class.lock.synchronize { self.class.store[url] = entry }
      entry.data
    end

    private

    def escape(text)
      URI.encode_www_form_component(text.to_s).gsub('+', '%20')
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def fetch(url, entry)
      uri = URI(url)
      request = Net::HTTP::Get.new(uri)
      request['Accept'] = 'application/json'
      request['If-None-Match'] = entry.etag if entry && entry.etag
      request.basic_auth(@options['user'].to_s, @options['password'].to_s) if @options['user']
      response = connection(uri).request(request)
      case response
      when Net::HTTPNotModified then Entry.new(entry.etag, entry.data, now)
      when Net::HTTPSuccess then Entry.new(response['ETag'], parse(url, response.body), now)
      when Net::HTTPNotFound
        raise Error, "ConfigDB answered 404 for #{url}: #{server_message(response)}" unless missing_source?(response)
        Entry.new(nil, {}, now)
      else raise Error, "ConfigDB answered #{response.code} for #{url}: #{server_message(response)}"
      end
    rescue *NETWORK_ERRORS => e
      @http = nil
      raise Error, "ConfigDB at #{@base} cannot be reached (#{url}): #{e.class}: #{e.message}"
    end

    # One kept-alive connection per client: a run's requests share it (Net::HTTP retries an
    # idempotent GET once if the server closed it meanwhile).
    def connection(uri)
      return @http if @http&.started?
      http = Net::HTTP.new(uri.host, uri.port)
      http.open_timeout = @options['open_timeout'].to_f
      http.read_timeout = @options['read_timeout'].to_f
      if uri.scheme == 'https'
        http.use_ssl = true
        http.ca_file = @options['ca_file'] if @options['ca_file']
        http.verify_mode = @options['ssl_verify'] == false ? OpenSSL::SSL::VERIFY_NONE : OpenSSL::SSL::VERIFY_PEER
      end
      @http = http.start
    end

    def parse(url, body)
      data = JSON.parse(body)
      raise Error, "ConfigDB sent a #{data.class} for #{url}, not an object" unless data.is_a?(Hash)
      data
    rescue JSON::ParserError => e
      raise Error, "ConfigDB sent malformed JSON for #{url}: #{e.message}"
    end

    # A 404 about the data source (the environment does not define it) is an empty source; one about
    # the environment or the node is a misconfiguration that must not look like empty values.
    def missing_source?(response)
      server_message(response).start_with?('Data source ')
    end

    def server_message(response)
      body = JSON.parse(response.body.to_s)
      body.is_a?(Hash) && body['message'] ? body['message'] : response.message
    rescue JSON::ParserError
      response.message
    end
  end
end
