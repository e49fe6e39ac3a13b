# Hiera 5 data_hash function reading Fuel's deployment facts from ConfigDB (Puppet >= 4.9): the
# recommended shape, since Puppet calls it once per location and compilation and then looks keys up
# in the Hash it returned, as it does with yaml_data; configdb::lookup_key is called once per key.
#
# hiera.yaml (version 5):
#   - name: ConfigDB
#     data_hash: configdb::data_hash
#     uris: [override/node, override/plugins, ...]  # one location per data source, so that Puppet's
#                                                   # merge strategies apply across them
#     options:                                      # configdb::lookup_key's options but confine_to_keys
#       url: http://10.20.0.2:8000/api/v1/config
#       environment: "%{facts.fuel_environment}"    # the ConfigDB environment (Nailgun cluster) id
#       node: "%{facts.fqdn}"                       # default: %{::fqdn}; an empty node fails the lookup
#       failure: graceful                           # ConfigDB out of reach: the location is empty
#       unknown_node: fail                          # default; a node stored nothing for (others have data)
#                                                   # fails the lookup; warn: a warning, the environment's values
#       auth_user: hiera                            # HTTP Basic, or with keystone_url a Keystone token
#       auth_pass: hiera-pw
# Without uris the Hash holds, for each key, its value in the most specific data source that has it
# (what a first-found lookup through them finds): a merge lookup does not merge across data sources.
# Each data source is one GET per compilation, revalidated with If-None-Match; the requests go over the
# process's kept-alive connections. Unlike lookup_key, a data source's `lookup_options` key is honoured,
# as in a YAML file. confine_to_keys is refused: a data_hash is read whole, before any key is known.
require 'puppet_x/configdb/client'

Puppet::Functions.create_function(:'configdb::data_hash') do
  dispatch :data_hash do
    param 'Hash', :options
    param 'Puppet::LookupContext', :context
  end

  def data_hash(options, context)
    if options.key?('confine_to_keys')
      raise ConfigDB::Error, 'ConfigDB: confine_to_keys needs lookup_key: configdb::lookup_key ' \
                             '(configdb::data_hash reads every key of a location at once)'
    end
    ConfigDB.location_data(options, explain: ->(line) { context.explain { line } }) { |text| context.interpolate(text) }
  rescue ConfigDB::Unavailable => e
    raise ConfigDB::Failures.for_puppet(e) unless ConfigDB::Options.graceful?(options)
    ConfigDB::Options.warn_once(options['url']) { Puppet.warning("ConfigDB: failure: graceful, lookups go on without it: #{e.message}") }
    context.explain { "ConfigDB: failure: graceful, this location is empty for the compilation: #{e.message}" }
    {}
  rescue ConfigDB::Error => e
    raise ConfigDB::Failures.for_puppet(e)
  end
end
