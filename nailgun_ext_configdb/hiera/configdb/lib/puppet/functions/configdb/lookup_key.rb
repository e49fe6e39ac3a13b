# Hiera 5 lookup_key function reading Fuel's deployment facts from ConfigDB (Puppet >= 4.9).
#
# hiera.yaml (version 5):
#   - name: ConfigDB
#     lookup_key: configdb::lookup_key
#     uris: [override/node, override/plugins, ...]  # optional: one location per data source, so that
#                                                   # Puppet's merge strategies apply across them
#     options:
#       url: http://10.20.0.2:8000/api/v1/config
#       environment: "%{facts.fuel_environment}"    # the ConfigDB environment (Nailgun cluster) id
#       node: "%{facts.fqdn}"                       # default: %{::fqdn}; an empty node fails the lookup
#       hierarchy: [override/node, ..., astute]     # without uris; default: Fuel's order
#       http_connect_timeout: 10                    # seconds; http_read_timeout (10) per answer
#       failure: graceful                           # ConfigDB out of reach: the next level answers
#       unknown_node: fail                          # default; a node stored nothing for (others have data)
#                                                   # fails the lookup; warn: a warning, the environment's values
#       confine_to_keys: ['^nova::', ...]           # only keys these regexes match go to ConfigDB
#       auth_user: hiera                            # HTTP Basic, or with keystone_url a Keystone token; an identity
#       auth_pass: hiera-pw                         # with roles reader and hiera (others read secrets masked: the
#                                                   # lookup fails)
#       keystone_url: http://10.20.0.2:5000/v3      # optional; project_name (admin), user_domain_name and
#                                                   # project_domain_name (Default) scope the token
#       headers: {X-Site: dc1}                      # sent with every request
#       ssl_ca_cert: /etc/pki/tls/certs/fuel.crt    # ssl_verify (true), ssl_cert/ssl_key: a client certificate
# configdb::data_hash takes the same options (but confine_to_keys) and is cheaper: Puppet calls this
# function once per key (and location), that one once per location. On the first key of a compilation
# the location's data sources are fetched (one GET each) and first-found merged into one Hash, kept in
# the function context's cache for the compilation and revalidated with If-None-Match in the next one.
# With failure: graceful an unavailable ConfigDB leaves the location empty for the compilation, so it
# costs one timeout, not one per key. A Keystone token serves the whole process (a Puppet server's
# compilations) until it expires or ConfigDB refuses it.
require 'puppet_x/configdb/client'

Puppet::Functions.create_function(:'configdb::lookup_key') do
  dispatch :lookup_key do
    param 'Variant[String, Numeric]', :key
    param 'Hash', :options
    param 'Puppet::LookupContext', :context
  end

  def lookup_key(key, options, context)
    key = key.to_s
    return context.not_found if key == 'lookup_options'
    unless ConfigDB::Options.admits?(ConfigDB::Options.confinement(options), key)
      context.explain { "ConfigDB: skipping '#{key}': confine_to_keys does not match it" }
      return context.not_found
    end
    if context.cache_has_key(:data)
      context.explain { 'ConfigDB: cache used (this location was read earlier in the compilation)' }
    else
      context.cache(:data, location_data(options, context))
    end
    data = context.cached_value(:data)
    return context.not_found unless data.include?(key)
    context.interpolate(data[key])
  rescue ConfigDB::Error => e
    raise ConfigDB::Failures.for_puppet(e)
  end

  private

  def location_data(options, context)
    ConfigDB.location_data(options, explain: ->(line) { context.explain { line } }) { |text| context.interpolate(text) }
  rescue ConfigDB::Unavailable => e
    raise unless ConfigDB::Options.graceful?(options)
    ConfigDB::Options.warn_once(options['url']) { Puppet.warning("ConfigDB: failure: graceful, lookups go on without it: #{e.message}") }
    context.explain { "ConfigDB: failure: graceful, this location is empty for the compilation: #{e.message}" }
    {}
  end
end
