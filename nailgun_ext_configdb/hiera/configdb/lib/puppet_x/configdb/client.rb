# The ConfigDB side of the Hiera backends: a data source's effective values for one node.
#
# A Puppet run looks up thousands of keys, so a data source is fetched once (one GET of
# its effective values) and kept in a process-wide store; when it is older than the
# caller's max_age it is revalidated with If-None-Match, and a 304 keeps the stored copy.
# Requests go over the process's kept-alive connections (ConfigDB::Connections).
# An unknown environment or node (X-Level-Unknown: the environment stores data for other nodes only,
# unless unknown_node: warn), refused credentials, and an answer with its secrets masked
# (X-Secrets-Masked: the identity lacks the hiera role) raise ConfigDB::Error; an unreachable,
# hung or failing (5xx) server raises ConfigDB::Unavailable, which `failure: graceful` forgives. A
# lookup must never quietly come back empty or with a mask for a password.
# Lives in the configdb Puppet module's lib/ (so pluginsync, r10k and `puppet module install`
# deliver it); the RPM also installs it next to the Hiera 3 backend on Ruby's load path.
require 'digest'
require 'json'
require 'uri'
require 'puppet_x/configdb/http'
require 'puppet_x/configdb/keystone'
require 'puppet_x/configdb/options'

module ConfigDB
  # Fuel's order of data sources, the most specific first (the spec's "Data model").
  FUEL_HIERARCHY = %w[
    override/node override/plugins
    override/configuration/node override/configuration/role override/configuration/cluster
    globals astute
  ].freeze

  # A Hiera 5 location's data (configdb::data_hash, configdb::lookup_key): the data sources of the
  # function's options (its uri, or hierarchy in Fuel's order by default) for the node and environment
  # they name, first-found merged. interpolate is given each of those options' texts (Puppet's
  # %{...}). Called once per location and compilation, which Puppet's function context then caches.
  # explain, when given, is called with a line per data source: its URL and how it was answered
  # (puppet lookup --explain).
  def self.location_data(options, explain: nil, &interpolate)
    environment = interpolate.call(options['environment'].to_s)
    node = interpolate.call((options['node'] || '%{::fqdn}').to_s)
    Options.node!(node, options.key?('node') ? 'the node option' : 'the fqdn fact')
    sources = options['uri'] ? [options['uri']] : Array(options['hierarchy'] || FUEL_HIERARCHY)
    Client.new(options).first_found(environment, node, sources, explain: explain)
  end

  class Client
    DEFAULTS = {
      'url' => 'http://127.0.0.1:8000/api/v1/config',
      'http_connect_timeout' => 10,
      'http_read_timeout' => 10,
      'failure_ttl' => 10,
      'project_name' => 'admin',
      'user_domain_name' => 'Default',
      'project_domain_name' => 'Default',
    }.freeze
    # the names the backends had before they took hiera-http's
    ALIASES = { 'user' => 'auth_user', 'password' => 'auth_pass', 'ca_file' => 'ssl_ca_cert',
                'open_timeout' => 'http_connect_timeout', 'read_timeout' => 'http_read_timeout' }.freeze
    NETWORK_ERRORS = ConfigDB::NETWORK_ERRORS
    LOOPBACK = /\A(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?)\z/.freeze
    # set on an answer in which the server replaced at least one secret by its mask ("<secret>")
    MASKED_HEADER = 'X-Secrets-Masked'
    # set on an answer for a node the environment stores nothing for while it stores data for other nodes
    UNKNOWN_LEVEL_HEADER = 'X-Level-Unknown'

    # unknown: the answer had X-Level-Unknown (a 304 does not repeat it), kept by an unknown_node: warn client;
    # the store is the process's, so every client that uses the copy applies its own unknown_node to it
    Entry = Struct.new(:etag, :data, :checked_at, :unknown)

    @store = {}
    @down = {}
    @lock = Mutex.new
    @warned = {}
    class << self
      # store: [identity, url] => Entry, shared by every backend instance of the process;
      # down: [identity, ConfigDB's URL] => [the Unavailable error of its last try, when]
      attr_reader :store, :down, :lock, :warned

      def clear
        @lock.synchronize { @store.clear && @down.clear }
        Keystone.clear
        Connections.clear
      end
    end

    # options: url; auth_user/auth_pass (HTTP Basic, or with keystone_url a Keystone v3 token
    # scoped to project_name, user_domain_name, project_domain_name); headers (sent with every
    # request); ssl_ca_cert, ssl_verify (default true), ssl_cert/ssl_key; http_connect_timeout,
    # http_read_timeout (seconds, 10 each); failure_ttl (seconds, 10): how long a ConfigDB found
    # unavailable is not asked again; unknown_node (fail or warn, see Options.unknown_node).
    def initialize(options = {})
      given = options.each_with_object({}) { |(k, v), h| h[ALIASES.fetch(k.to_s, k.to_s)] ||= v }
      @options = DEFAULTS.merge(given.reject { |_k, v| v.nil? })
      @base = @options['url'].to_s.chomp('/')
      @identity = Digest::SHA256.hexdigest(JSON.generate(%w[auth_user auth_pass keystone_url project_name ssl_cert]
                                                            .map { |k| @options[k].to_s }))
      @server = [@identity, @base].freeze # the key of ConfigDB's unavailability
      # (environment, node, data source) => the store's key; a Hiera 3 lookup asks for every data
      # source per key, and this spares it building and escaping their URLs each time
      @store_keys = Hash.new { |by_env, env| by_env[env] = Hash.new { |by_node, node| by_node[node] = {} } }
      @unknown_node = Options.unknown_node(@options)
      refuse_credentials_in_urls
      warn_cleartext
    end

    # The options without credentials, for messages and debugging.
    def inspect
      "#<ConfigDB::Client #{@base} user=#{@options['auth_user'].inspect}" \
        "#{@options['keystone_url'] ? " keystone=#{@options['keystone_url']}" : ''}>"
    end
    alias to_s inspect

    def source_url(environment, node, source)
      raise Error, 'ConfigDB: no environment id configured' if environment.to_s.empty?
      path = "/environments/#{escape(environment)}"
      path += "/nodes/#{escape(node)}" unless node.to_s.empty?
      path += "/resources/#{source.to_s.split('/').map { |part| escape(part) }.join('/')}/values?effective"
      @base + path
    end

    # The effective values (a Hash) of a data source; {} when the server has none for it. A ConfigDB
    # found unavailable is not asked again for failure_ttl seconds: the other data sources and lookups
    # of a run fail (or, with failure: graceful, fall through) at once instead of each waiting a timeout.
    # explain, when given, is called with the URL and how it was answered.
    def effective(environment, node, source, max_age: 0, explain: nil)
      key = @store_keys[environment][node][source] ||= [@identity, source_url(environment, node, source)].freeze
      entry, down = self.class.lock.synchronize { [self.class.store[key], self.class.down[@server]] }
      if entry && now - entry.checked_at < max_age
        explain&.call("ConfigDB #{key[1]}: cache used (fetched #{(now - entry.checked_at).round(1)} s ago, " \
                      "cache_ttl #{max_age} s)")
        unknown_node(key[1]) if entry.unknown
        return entry.data
      end
      if down && now - down[1] < @options['failure_ttl'].to_f
        explain&.call("ConfigDB #{key[1]}: not asked (unavailable #{(now - down[1]).round(1)} s ago, failure_ttl " \
                      "#{@options['failure_ttl']} s): #{down[0].message}")
        raise down[0]
      end
      begin
        entry, how = fetch(key[1], entry)
      rescue Unavailable => e
        self.class.lock.synchronize { self.class.down[@server] = [e, now] }
        explain&.call(e.message)
        raise
      end
      explain&.call("ConfigDB #{key[1]}: #{how}")
      self.class.lock.synchronize { self.class.store[key] = entry }
      entry.data
    end

    # What a first-found lookup through the data sources (the most specific first) sees, as one
    # Hash: each key with its value in the first data source that has it. One request per data
    # source; a single data source's Hash is returned as it is.
    def first_found(environment, node, sources, explain: nil)
      found = sources.map { |source| effective(environment, node, source, explain: explain) }
      return found.first || {} if found.size <= 1
      found.reverse_each.with_object({}) { |data, merged| merged.update(data) }
    end

    private

    def escape(text)
      URI.encode_www_form_component(text.to_s).gsub('+', '%20')
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def keystone?
      @options['keystone_url'] && !@options['keystone_url'].to_s.empty?
    end

    # [a new Entry, how it was obtained (for --explain)]
    def fetch(url, entry)
      response, token = get(url, entry)
      if response.code == '401' && token
        Keystone.invalidate(@options, token) # expired or revoked early: one more try with a new token
        response, = get(url, entry)
      end
      case response
      when Net::HTTPNotModified
        unknown_node(url) if entry.unknown
        [Entry.new(entry.etag, entry.data, now, entry.unknown), 'cache used (304: stored copy revalidated)']
      when Net::HTTPSuccess
        raise Error, masked(url) if response[MASKED_HEADER].to_s.strip.casecmp?('true')
        unknown = response[UNKNOWN_LEVEL_HEADER].to_s.strip.casecmp?('true')
        unknown_node(url) if unknown
        [Entry.new(response['ETag'], parse(url, response.body), now, unknown), "fetched (#{response.code})"]
      when Net::HTTPNotFound
        raise Error, "ConfigDB answered 404 for #{url}: #{server_message(response)}" unless missing_source?(response)
        [Entry.new(nil, {}, now), 'fetched (404: the environment does not define this data source)']
      when Net::HTTPServerError
        raise Unavailable, "ConfigDB answered #{response.code} for #{url}: #{server_message(response)}"
      when Net::HTTPUnauthorized, Net::HTTPForbidden then raise Error, refusal(url, response)
      else raise Error, "ConfigDB answered #{response.code} for #{url}: #{server_message(response)}"
      end
    rescue *NETWORK_ERRORS => e
      # a certificate the options do not trust is a misconfiguration, not an outage
      raise Failures.error(e, URI(url), @options, 'ConfigDB', 'the url option')
    end

    # [response, the Keystone token it was sent with or nil]
    def get(url, entry)
      uri = URI(url)
      request = Net::HTTP::Get.new(uri)
      (@options['headers'] || {}).each { |name, value| request[name.to_s] = value.to_s }
      request['Accept'] = 'application/json'
      request['If-None-Match'] = entry.etag if entry && entry.etag
      token = nil
      if keystone?
        token = request['X-Auth-Token'] = Keystone.token(@options)
      elsif @options['auth_user']
        request.basic_auth(@options['auth_user'].to_s, @options['auth_pass'].to_s)
      end
      [Connections.with(uri, @options) { |http| http.request(request) }, token]
    end

    def refusal(url, response)
      who = if keystone? then "user '#{@options['auth_user']}' (Keystone token, project '#{@options['project_name']}')"
            elsif @options['auth_user'] then "user '#{@options['auth_user']}' (HTTP Basic)"
            else 'a request without credentials (set auth_user and auth_pass)'
            end
      what = response.code == '401' ? 'refused the credentials of' : 'denied access to'
      "ConfigDB #{what} #{who} (#{response.code}) for #{url}: #{server_message(response)}"
    end

    # Puppet must never compile with the mask in place of a password: an identity that may not
    # read secrets fails the lookup, saying how to fix it (docs/operator/secrets.md).
    def masked(url)
      who = @options['auth_user'] ? "'#{@options['auth_user']}'" : 'of a request without credentials'
      where = keystone? ? " in project '#{@options['project_name']}' (Keystone)" : ''
      "ConfigDB: the identity #{who} may not read secrets: give it the hiera role#{where} " \
        "(#{url} answered with its secrets masked)"
    end

    # The node of url is one the environment stores nothing for, while it stores data for others: the
    # answer holds only the environment-level values, which Puppet must not take for the node's. The
    # lookup fails (unknown_node: fail, the default) or goes on with a warning, once per URL (warn).
    def unknown_node(url)
      message = "ConfigDB stores nothing for the node of #{url} in its environment, only for other nodes: is the " \
                'node (the node option or the fqdn fact) the name its data was uploaded under?'
      raise Error, message if @unknown_node == 'fail'
      Options.warn_once(url) { Kernel.warn("#{message} (unknown_node: warn, the lookup goes on)") }
    end

    # Net::HTTP never sends a URL's user:password, while every message, --explain line and Puppet report that
    # names a URL would show it: the options that hold URLs must not carry credentials (the message names the
    # option, never its value).
    def refuse_credentials_in_urls
      %w[url keystone_url].each do |option|
        next unless @options[option] && URI(@options[option].to_s).userinfo
        raise Error, "ConfigDB: the #{option} option holds credentials: give them as auth_user and auth_pass"
      rescue URI::InvalidURIError
        next
      end
    end

    # Credentials in clear text to another machine deserve a warning (once per process and server).
    def warn_cleartext
      uris = [URI(@base)]
      uris << URI(Keystone.tokens_url(@options)) if keystone?
      uris.each do |uri|
        next unless @options['auth_user'] && uri.scheme == 'http' && !LOOPBACK.match?(uri.host.to_s)
        first = self.class.lock.synchronize { self.class.warned[uri.host] ? false : (self.class.warned[uri.host] = true) }
        next unless first
        Kernel.warn("ConfigDB: credentials go to #{uri.scheme}://#{uri.host}:#{uri.port} over plain HTTP; use https")
      end
    rescue URI::InvalidURIError
      nil
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
