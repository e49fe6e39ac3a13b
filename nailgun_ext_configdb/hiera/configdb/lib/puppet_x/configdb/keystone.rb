# Keystone tokens for the ConfigDB backends: one password authentication (Keystone v3) per
# user and process, kept until shortly before it expires or until ConfigDB refuses it.
# Neither the password nor the token ever appears in an error message.
require 'digest'
require 'json'
require 'time'
require 'uri'
require 'puppet_x/configdb/http'

module ConfigDB
  module Keystone
    Token = Struct.new(:id, :expires_at)
    # a token this close to its expiry is renewed before it is sent
    MARGIN = 30

    @tokens = {}
    @lock = Mutex.new

    class << self
      # A valid token id for the options (keystone_url, auth_user, auth_pass, project_name,
      # user_domain_name, project_domain_name, TLS options), from the process cache if it has one.
      def token(options)
        key = cache_key(options)
        @lock.synchronize do
          cached = @tokens[key]
          return cached.id if cached && (cached.expires_at.nil? || cached.expires_at - Time.now > MARGIN)
        end
        fresh = authenticate(options)
        @lock.synchronize { @tokens[key] = fresh }
        fresh.id
      end

      # Forgets token_id (ConfigDB refused it); a token renewed meanwhile by another thread stays.
      def invalidate(options, token_id)
        key = cache_key(options)
        @lock.synchronize { @tokens.delete(key) if @tokens[key]&.id == token_id }
      end

      def clear
        @lock.synchronize { @tokens.clear }
      end

      def tokens_url(options)
        base = options['keystone_url'].to_s.chomp('/')
        base.end_with?('/auth/tokens') ? base : "#{base}/auth/tokens"
      end

      private

      def cache_key(options)
        Digest::SHA256.hexdigest(JSON.generate(%w[keystone_url auth_user auth_pass project_name user_domain_name
                                                  project_domain_name ssl_ca_cert ssl_cert].map { |k| options[k].to_s }))
      end

      def authenticate(options)
        uri = URI(tokens_url(options))
        request = Net::HTTP::Post.new(uri)
        request['Content-Type'] = 'application/json'
        request['Accept'] = 'application/json'
        request.body = JSON.generate(auth_body(options))
        response = HTTP.start(uri, options) { |http| http.request(request) }
        unless response.code == '201' && response['X-Subject-Token']
          raise Error, "Keystone at #{uri} refused user '#{options['auth_user']}' of project " \
                       "'#{options['project_name']}' (#{response.code}): #{message(response)}"
        end
        Token.new(response['X-Subject-Token'], expiry(response.body))
      rescue *NETWORK_ERRORS => e
        raise Failures.error(e, uri, options, 'Keystone', 'the keystone_url option')
      end

      def auth_body(options)
        { 'auth' => {
          'identity' => { 'methods' => ['password'],
                          'password' => { 'user' => { 'name' => options['auth_user'].to_s,
                                                      'domain' => { 'name' => options['user_domain_name'].to_s },
                                                      'password' => options['auth_pass'].to_s } } },
          'scope' => { 'project' => { 'name' => options['project_name'].to_s,
                                      'domain' => { 'name' => options['project_domain_name'].to_s } } },
        } }
      end

      def expiry(body)
        text = JSON.parse(body.to_s).dig('token', 'expires_at')
        text && Time.iso8601(text)
      rescue JSON::ParserError, ArgumentError, TypeError
        nil
      end

      def message(response)
        body = JSON.parse(response.body.to_s)
        (body.is_a?(Hash) && body.dig('error', 'message')) || response.message
      rescue JSON::ParserError
        response.message
      end
    end
  end
end
