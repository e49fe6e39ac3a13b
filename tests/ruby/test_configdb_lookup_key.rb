# The Hiera 5 functions (configdb::lookup_key, configdb::data_hash) under a real `puppet apply`: many
# lookups cost one request per data source per compilation, over one kept-alive connection even when
# each data source is a location of its own (revalidation itself is tested in test_configdb_client.rb).
# Run: ruby -I nailgun_ext_configdb/hiera/configdb/lib tests/ruby/test_configdb_lookup_key.rb
require 'minitest/autorun'
require 'fileutils'
require 'open3'
require 'tmpdir'
require 'yaml'
require 'puppet_x/configdb/client'
require_relative 'recording_server'

class ConfigDBLookupKeyTest < Minitest::Test
  MODULE = File.expand_path('../../nailgun_ext_configdb/hiera/configdb', __dir__)
  PREFIX = '/api/v1/config/environments/3/nodes/node-4.domain.tld/resources'

  def setup
    skip 'puppet is not installed' unless system('which puppet > /dev/null 2>&1')
    @server = RecordingServer.new({
      "#{PREFIX}/override/plugins/values?effective" => [200, { 'debug' => true }],
      "#{PREFIX}/astute/values?effective" => [200, (1..40).to_h { |i| ["key#{i}", i] }.merge('debug' => false)],
    })
    @dir = Dir.mktmpdir
    production = File.join(@dir, 'code', 'environments', 'production')
    FileUtils.mkdir_p(File.join(production, 'modules'))
    FileUtils.ln_s(MODULE, File.join(production, 'modules', 'configdb'))
    configure({})
  end

  def configure(options, function: 'lookup_key', uris: nil)
    entry = { 'name' => 'ConfigDB', function => "configdb::#{function}",
              'options' => { 'url' => @server.url, 'environment' => '3' }.merge(options) }
    entry['uris'] = uris if uris
    File.write(File.join(@dir, 'code', 'environments', 'production', 'hiera.yaml'),
               YAML.dump('version' => 5, 'hierarchy' => [entry]))
  end

  def teardown
    @server&.stop
    FileUtils.rm_rf(@dir) if @dir
  end

  def apply(manifest)
    # no RUBYLIB: Puppet puts the module's lib/ (the client in puppet_x/configdb) on Ruby's load path
    env = { 'RUBYLIB' => nil, 'FACTER_fqdn' => 'node-4.domain.tld' }
    Open3.capture3(env, 'puppet', 'apply', '--codedir', File.join(@dir, 'code'),
                   '--hiera_config', File.join(@dir, 'none.yaml'), '--vardir', File.join(@dir, 'var'),
                   '-e', manifest)
  end

  MANY_LOOKUPS = "$s = [#{(1..40).map { |i| "'key#{i}'" }.join(', ')}].map |$k| { lookup($k) } " \
                 "notice(\"sum=${$s.reduce |$a, $b| { $a + $b }}\") notice(\"debug=${lookup('debug')}\") " \
                 "notice(\"none=${lookup('nope', undef, undef, 'x')}\")"

  def test_many_lookups_cost_one_request_per_data_source
    out, err, status = apply(MANY_LOOKUPS)
    assert status.success?, err
    assert_includes out, 'sum=820'
    assert_includes out, 'debug=true'
    assert_includes out, 'none=x'
    assert_equal 7, @server.requests.size
    assert_equal 7, @server.requests.map(&:path).uniq.size
    assert(@server.requests.none? { |r| r.headers['if-none-match'] })
  end

  def test_data_hash_finds_the_same_values_with_one_request_per_data_source
    configure({}, function: 'data_hash')
    out, err, status = apply(MANY_LOOKUPS)
    assert status.success?, err
    assert_includes out, 'sum=820'
    assert_includes out, 'debug=true' # override/plugins, before astute
    assert_includes out, 'none=x'
    assert_equal 7, @server.requests.map(&:path).uniq.size
    assert_equal 7, @server.requests.size
  end

  def test_data_hash_with_a_location_per_data_source_merges_across_them_over_one_connection
    @server.stop
    @server = RecordingServer.new({
      "#{PREFIX}/override/plugins/values?effective" => [200, { 'nova' => { 'debug' => true }, 'roles' => ['mongo'] }],
      "#{PREFIX}/globals/values?effective" => [200, { 'nova' => { 'verbose' => true }, 'roles' => ['primary-mongo'] }],
      "#{PREFIX}/astute/values?effective" => [200, { 'nova' => { 'debug' => false, 'workers' => 4 },
                                                      'lookup_options' => { 'roles' => { 'merge' => 'unique' } } }],
    }, keep_alive: true)
    configure({}, function: 'data_hash', uris: ConfigDB::FUEL_HIERARCHY)
    out, err, status = apply("notice(String(lookup('nova', Hash, 'deep'))) notice(String(lookup('nova'))) " \
                             "notice(String(lookup('roles')))")
    assert status.success?, err
    assert_includes out, "{'debug' => true, 'workers' => 4, 'verbose' => true}"
    assert_includes out, "{'debug' => true}" # first found: override/plugins' Hash alone
    assert_includes out, "['mongo', 'primary-mongo']" # astute's lookup_options, as from a YAML file
    assert_equal 7, @server.requests.size
    assert_equal [1], @server.requests.map(&:connection).uniq # 7 locations, 7 clients, one connection
  end

  def test_data_hash_fails_the_run_with_the_servers_refusal
    @server.documents["#{PREFIX}/astute/values?effective"] = [403, { 'message' => 'Policy does not allow nailgun:read' }]
    configure({ 'auth_user' => 'puppet', 'auth_pass' => 's3cret' }, function: 'data_hash')
    _out, err, status = apply("notice(lookup('debug'))")
    refute status.success?
    assert_match(/ConfigDB denied access to user 'puppet' \(HTTP Basic\) \(403\).*nailgun:read/, err)
    refute_match(/s3cret/, err)
  end

  def test_data_hash_refuses_confine_to_keys_it_cannot_apply
    configure({ 'confine_to_keys' => ['^debug$'] }, function: 'data_hash')
    _out, err, status = apply("notice(lookup('debug'))")
    refute status.success?
    assert_match(/confine_to_keys needs lookup_key: configdb::lookup_key/, err)
    assert_empty @server.requests
  end

  def test_lookup_key_with_confine_to_keys_asks_configdb_only_for_matching_keys
    configure({ 'confine_to_keys' => ['key[12]'] })
    out, err, status = apply("notice(\"k=${lookup('key1')} ${lookup('key2')} ${lookup('key3', undef, undef, 'local')}\")")
    assert status.success?, err
    assert_includes out, 'k=1 2 local' # ConfigDB has key3 (3): it was not asked for it
    assert_equal 7, @server.requests.size # one location, read once for key1 and key2
  end

  def test_a_keystone_token_and_custom_headers_are_sent_and_a_refusal_fails_the_run
    tokens = 0
    documents = @server.documents
    documents['/v3/auth/tokens'] = ->(_request) { [201, { 'token' => {} }, { 'X-Subject-Token' => "token-#{tokens += 1}" }] }
    configure({ 'keystone_url' => "http://127.0.0.1:#{@server.port}/v3", 'auth_user' => 'puppet', 'auth_pass' => 's3cret',
                'project_name' => 'services', 'headers' => { 'X-Site' => 'dc1' } })
    out, err, status = apply("notice(\"debug=${lookup('debug')}\")")
    assert status.success?, err
    assert_includes out, 'debug=true'
    data = @server.requests.reject { |r| r.path.start_with?('/v3/') }
    assert_equal [%w[token-1 dc1]] * data.size, data.map { |r| r.headers.values_at('x-auth-token', 'x-site') }
    assert_equal 'services', JSON.parse(@server.requests.first.body).dig('auth', 'scope', 'project', 'name')
    documents["#{PREFIX}/override/node/values?effective"] = [403, { 'message' => 'Policy does not allow nailgun:read' }]
    _out, err, status = apply("notice(lookup('debug'))")
    refute status.success?
    assert_match(/ConfigDB denied access to user 'puppet' \(Keystone token, project 'services'\) \(403\).*nailgun:read/, err)
    refute_match(/s3cret|token-/, err)
  end
end
