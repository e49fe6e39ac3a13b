# Unit tests of the Hiera 3 backend: Fuel's order of data sources, resolution types,
# fall-through of unknown keys, node and environment taken from the scope.
# Run: ruby -I nailgun_ext_configdb/hiera/configdb/lib tests/ruby/test_configdb_backend.rb
require 'minitest/autorun'
require 'hiera'
require 'hiera/backend/configdb_backend'
require_relative 'recording_server'

class ConfigDBBackendTest < Minitest::Test
  PREFIX = '/api/v1/config/environments/5/nodes/node-2.domain.tld/resources'

  def setup
    ConfigDB::Client.clear
    @server = RecordingServer.new({
      "#{PREFIX}/override/node/values?effective" => [200, { 'mysql_port' => 3307, 'classes' => ['b'] }],
      "#{PREFIX}/globals/values?effective" => [200, { 'classes' => ['g'], 'nova' => { 'debug' => true } }],
      "#{PREFIX}/astute/values?effective" => [200, { 'mysql_port' => 3306, 'deployment_id' => 9,
                                                      'classes' => ['a'], 'nova' => { 'verbose' => false },
                                                      'greeting' => 'hello %{::fqdn}' }],
    })
    configure({})
    @scope = { '::fqdn' => 'node-2.domain.tld', '::fuel_env' => '5' }
  end

  def teardown
    @server.stop
  end

  def configure(extra)
    Hiera::Config.load({ backends: ['configdb'], logger: 'noop',
                         configdb: { url: @server.url, environment: '%{::fuel_env}' }.merge(extra) })
    @backend = Hiera::Backend::Configdb_backend.new
  end

  def lookup(key, resolution = :priority, scope = @scope)
    @backend.lookup(key, scope, nil, resolution)
  end

  def test_the_most_specific_data_source_wins
    assert_equal 3307, lookup('mysql_port')
    assert_equal 9, lookup('deployment_id')
  end

  def test_an_unknown_key_falls_through
    assert_throws(:no_such_key) { lookup('no_such_key_anywhere') }
  end

  def test_array_and_hash_resolution_gather_every_data_source
    assert_equal [['b'], ['g'], ['a']], lookup('classes', :array)
    assert_equal({ 'debug' => true, 'verbose' => false }, lookup('nova', :hash))
  end

  def test_values_are_interpolated_like_the_yaml_backend
    assert_equal 'hello node-2.domain.tld', lookup('greeting')
  end

  def test_each_data_source_is_fetched_once_for_many_lookups
    20.times { lookup('deployment_id') }
    lookup('nova', :hash)
    assert_equal ConfigDB::FUEL_HIERARCHY.size, @server.requests.size
    assert_equal ConfigDB::FUEL_HIERARCHY.size, @server.requests.map(&:path).uniq.size
  end

  def test_the_hierarchy_is_configurable
    configure(hierarchy: %w[astute override/node])
    assert_equal 3306, lookup('mysql_port')
    assert_equal ["#{PREFIX}/astute/values?effective"], @server.requests.map(&:path)
  end

  def test_the_node_falls_back_to_the_unqualified_fqdn_or_comes_from_the_config
    assert_equal 9, lookup('deployment_id', :priority, { 'fqdn' => 'node-2.domain.tld', '::fuel_env' => '5' })
    configure(node: 'node-%{::node_id}.domain.tld')
    assert_equal 3307, lookup('mysql_port', :priority, { '::node_id' => '2', '::fuel_env' => '5' })
  end

  def test_refused_credentials_fail_the_lookup_instead_of_falling_through
    server = RecordingServer.new({ "#{PREFIX}/override/node/values?effective" => [401, { 'message' => 'Authentication required' }] })
    configure(url: server.url, auth_user: 'admin', auth_pass: 'wrong')
    error = assert_raises(ConfigDB::Error) { lookup('deployment_id') }
    assert_match(/refused the credentials of user 'admin' \(HTTP Basic\) \(401\).*Authentication required/, error.message)
  ensure
    server&.stop
  end

  def test_an_unreachable_server_fails_the_lookup
    port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
    configure(url: "http://127.0.0.1:#{port}/api/v1/config")
    error = assert_raises(ConfigDB::Unavailable) { lookup('deployment_id') }
    assert_equal "Connection to ConfigDB at 127.0.0.1:#{port} refused: nothing listens there; check the url option",
                 error.message
    assert_empty error.backtrace # a known failure: `hiera` prints its line alone
    assert_nil error.cause
  end

  def test_failure_graceful_lets_the_next_backend_answer_when_the_server_is_out_of_reach
    port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
    configure(url: "http://127.0.0.1:#{port}/api/v1/config", failure: 'graceful')
    assert_throws(:no_such_key) { lookup('deployment_id') }
    assert_throws(:no_such_key) { lookup('nova', :hash) }
  end

  def test_failure_graceful_still_fails_a_misconfiguration
    server = RecordingServer.new({ "#{PREFIX}/override/node/values?effective" => [401, { 'message' => 'Authentication required' }] })
    configure(url: server.url, failure: 'graceful')
    assert_raises(ConfigDB::Error) { lookup('deployment_id') }
  ensure
    server&.stop
  end

  def test_confine_to_keys_sends_only_whole_matches_to_configdb
    configure(confine_to_keys: ['^mysql_.*', 'deployment'])
    assert_equal 3307, lookup('mysql_port')
    requests = @server.requests.size
    assert_throws(:no_such_key) { lookup('deployment_id') } # 'deployment' matches only part of it
    assert_throws(:no_such_key) { lookup('nova', :hash) }
    assert_equal requests, @server.requests.size
    configure(confine_to_keys: '^mysql')
    flunk 'a string is not an array of regexes'
  rescue ConfigDB::Error => e
    assert_match(/confine_to_keys must be an array of regexes/, e.message)
  end

  def test_a_scope_without_the_node_fails_instead_of_reading_environment_values
    error = assert_raises(ConfigDB::Error) { lookup('deployment_id', :priority, { '::fuel_env' => '5' }) }
    assert_match(/no node to look up: the fqdn fact is empty in this scope/, error.message)
    configure(node: '%{::node_name}')
    error = assert_raises(ConfigDB::Error) { lookup('deployment_id', :priority, { '::fuel_env' => '5' }) }
    assert_match(/no node to look up: the node option is empty in this scope/, error.message)
    assert_empty @server.requests
  end
end
