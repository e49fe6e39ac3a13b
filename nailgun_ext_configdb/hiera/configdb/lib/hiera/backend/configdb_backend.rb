# Hiera 3 backend reading Fuel's deployment facts from ConfigDB.
#
# hiera.yaml:
#   :backends: [configdb, yaml]
#   :configdb:
#     :url: http://10.20.0.2:8000/api/v1/config
#     :environment: "%{::fuel_environment}"  # the ConfigDB environment (Nailgun cluster) id
#     :node: "%{::fqdn}"                     # default; the node's FQDN or Nailgun id (never empty)
#     :hierarchy: [override/node, ..., astute]  # default: Fuel's order (ConfigDB::FUEL_HIERARCHY)
#     :cache_ttl: 5                          # seconds before a data source is revalidated (ETag)
#     :http_connect_timeout: 10              # seconds; :http_read_timeout (10) per answer
#     :failure: graceful                     # ConfigDB out of reach: the next backend answers
#     :unknown_node: fail                    # default; a node stored nothing for (others have data) fails the
#                                            # lookup, or with warn reads the environment's values after a warning
#     :confine_to_keys: ['^nova::', ...]     # only keys these regexes match go to ConfigDB
#     :auth_user: hiera                      # HTTP Basic, or with :keystone_url a Keystone token; an identity
#     :auth_pass: hiera-pw                   # with roles reader and hiera (others read secrets masked: the
#                                            # lookup fails)
#     :keystone_url: http://10.20.0.2:5000/v3  # optional; :project_name (admin), :user_domain_name and
#                                              # :project_domain_name (Default) scope the token
#     :headers: {X-Site: dc1}                # sent with every request
#     :ssl_ca_cert: /etc/pki/tls/certs/fuel.crt  # :ssl_verify (true), :ssl_cert/:ssl_key: a client certificate
# A key no data source has falls through to the next backend; refused credentials, or an identity that may
# not read secrets (the server masks them), fail the lookup. Lives in the configdb module's lib/, which
# Puppet puts on Ruby's load path; the RPM also installs it (and puppet_x/configdb) into Puppet's
# vendor_ruby for the `hiera` command.
require 'puppet_x/configdb/client'

class Hiera
  module Backend
    class Configdb_backend
      def initialize(_cache = nil)
        @options = (Config[:configdb] || {}).each_with_object({}) { |(k, v), h| h[k.to_s] = v }
        @client = ConfigDB::Client.new(@options)
        @hierarchy = Array(@options['hierarchy'] || ConfigDB::FUEL_HIERARCHY)
        @max_age = (@options['cache_ttl'] || 5).to_f
        @graceful = ConfigDB::Options.graceful?(@options)
        @confinement = ConfigDB::Options.confinement(@options)
        Hiera.debug("[configdb] backend for #{@options['url']}, data sources #{@hierarchy.join(', ')}")
      end

      def lookup(key, scope, _order_override, resolution_type, context = { recurse_guard: nil })
        unless ConfigDB::Options.admits?(@confinement, key)
          Hiera.debug("[configdb] skipping #{key}: confine_to_keys does not match it")
          throw :no_such_key
        end
        environment = Backend.parse_string(@options['environment'].to_s, scope)
        node = ConfigDB::Options.node!(node_of(scope), @options['node'] ? 'the node option' : 'the fqdn fact')
        answer = nil
        found = false
        @hierarchy.each do |source|
          data = effective(environment, node, source)
          next unless data.include?(key)
          found = true
          Hiera.debug("[configdb] found #{key} in #{source} of node #{node}")
          value = Backend.parse_answer(data[key], scope, {}, context)
          case resolution_type.is_a?(Hash) ? :hash : resolution_type
          when :array
            unless value.is_a?(Array) || value.is_a?(String)
              raise Exception, "Hiera type mismatch for key '#{key}': expected Array and got #{value.class}"
            end
            (answer ||= []) << value
          when :hash
            raise Exception, "Hiera type mismatch for key '#{key}': expected Hash and got #{value.class}" unless value.is_a?(Hash)
            answer = Backend.merge_answer(value, answer || {}, resolution_type)
          else
            answer = value
            break
          end
        end
        throw :no_such_key unless found
        answer
      rescue ConfigDB::Error => e # a known failure: its line says it all; `hiera` would print backtraces under it
        raise e.class, e.message, [], cause: nil
      end

      private

      # A data source's values; with failure: graceful, an unavailable ConfigDB ends this backend's
      # part of the lookup (every data source is on the same server, so no further timeout is paid).
      def effective(environment, node, source)
        @client.effective(environment, node, source, max_age: @max_age, explain: ->(line) { Hiera.debug("[configdb] #{line}") })
      rescue ConfigDB::Unavailable => e
        raise unless @graceful
        ConfigDB::Options.warn_once(@options['url']) { Hiera.warn("[configdb] failure: graceful, lookups go on without ConfigDB: #{e.message}") }
        Hiera.debug("[configdb] failure: graceful: #{e.message}")
        throw :no_such_key
      end

      def node_of(scope)
        return Backend.parse_string(@options['node'].to_s, scope) if @options['node']
        node = scope['::fqdn']
        node = scope['fqdn'] if node.nil? || node == :undefined || node.to_s.empty?
        node.nil? || node == :undefined ? '' : node.to_s
      end
    end
  end
end
