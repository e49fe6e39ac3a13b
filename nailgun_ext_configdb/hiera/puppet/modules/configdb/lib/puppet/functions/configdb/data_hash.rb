# Hiera 5 data_hash function reading Fuel's deployment facts from ConfigDB (Puppet >= 4.9): the
# recommended shape, since Puppet calls it once per location and compilation and then looks keys up
# in the Hash it returned, as it does with yaml_data; configdb::lookup_key is called once per key.
#
# hiera.yaml (version 5):
#   - name: ConfigDB
#     data_hash: configdb::data_hash
#     uris: [override/node, override/plugins, ...]  # optional: one location per data source, so that
#                                                   # Puppet's merge strategies apply across them
#     options:                                      # the same options as configdb::lookup_key's
#       url: http://10.20.0.2:8000/api/v1/config
#       environment: "%{facts.fuel_environment}"    # the ConfigDB environment (Nailgun cluster) id
#       node: "%{facts.fqdn}"                       # default: %{::fqdn}
#       hierarchy: [override/node, ..., astute]     # without uris; default: Fuel's order
#       auth_user: hiera                            # HTTP Basic, or with keystone_url a Keystone token
#       auth_pass: hiera-pw
# Without uris the Hash holds, for each key, its value in the most specific data source that has it
# (what a first-found lookup through them finds). Each data source is one GET per compilation,
# revalidated with If-None-Match; the requests go over the process's kept-alive connections. Unlike
# lookup_key, a data source's `lookup_options` key is honoured, as in a YAML file.
# Needs hiera/backend/configdb_client.rb on Ruby's load path.
require 'hiera/backend/configdb_client'

Puppet::Functions.create_function(:'configdb::data_hash') do
  dispatch :data_hash do
    param 'Hash', :options
    param 'Puppet::LookupContext', :context
  end

  def data_hash(options, context)
    ConfigDB.location_data(options) { |text| context.interpolate(text) }
  rescue ConfigDB::Error => e
    raise Puppet::DataBinding::LookupError, e.message
  end
end
