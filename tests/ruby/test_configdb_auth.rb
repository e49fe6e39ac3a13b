# Unit tests of the backends' credentials and TLS: HTTP Basic, custom headers, Keystone tokens
# (obtained once, renewed before they expire and after a 401), clear errors for 401/403,
# client certificates and CA files.
# Run: ruby -I nailgun_ext_configdb/hiera/configdb/lib tests/ruby/test_configdb_auth.rb
require 'minitest/autorun'
require 'time'
require 'puppet_x/configdb/client'
require_relative 'recording_server'
require_relative 'certificates'

class ConfigDBAuthTest < Minitest::Test
  PREFIX = '/api/v1/config/environments/1/nodes/node-1.domain.tld/resources'
  ASTUTE = "#{PREFIX}/astute/values?effective".freeze
  GLOBALS = "#{PREFIX}/globals/values?effective".freeze
  TOKENS = '/v3/auth/tokens'.freeze

  def setup
    ConfigDB::Client.clear
    @issued = []     # tokens the fake Keystone gave out
    @accepted = nil  # tokens the fake ConfigDB takes: every issued one unless a test says otherwise
    @lifetime = 3600
    @server = RecordingServer.new({ TOKENS => method(:keystone), ASTUTE => method(:configdb),
                                    GLOBALS => method(:configdb) })
  end

  def teardown
    @server&.stop
  end

  # A Keystone v3 password authentication: a new token each time, expiring after @lifetime seconds.
  def keystone(request)
    password = JSON.parse(request.body).dig('auth', 'identity', 'password', 'user', 'password')
    return [401, { 'error' => { 'message' => 'The request you have made requires authentication.' } }] if password != 's3cret'
    @issued << "token-#{@issued.size + 1}"
    [201, { 'token' => { 'expires_at' => (Time.now.utc + @lifetime).iso8601(6) } }, { 'X-Subject-Token' => @issued.last }]
  end

  def configdb(request)
    return [200, { 'deployment_id' => 1 }] if (@accepted || @issued).include?(request.headers['x-auth-token'])
    [401, { 'message' => 'The request you have made requires authentication.', 'errors' => [] }]
  end

  def keystone_client(extra = {})
    ConfigDB::Client.new({ 'url' => @server.url, 'keystone_url' => "http://127.0.0.1:#{@server.port}/v3",
                           'auth_user' => 'admin', 'auth_pass' => 's3cret' }.merge(extra))
  end

  def fetch(client, source = 'astute')
    client.effective(1, 'node-1.domain.tld', source)
  end

  def requests(path)
    @server.requests.select { |r| r.path == path }
  end

  def test_basic_credentials_are_sent_under_hiera_http_names_and_the_old_ones
    documents = { ASTUTE => [200, { 'deployment_id' => 1 }] }
    server = RecordingServer.new(documents)
    fetch(ConfigDB::Client.new('url' => server.url, 'auth_user' => 'admin', 'auth_pass' => 's3cret'))
    fetch(ConfigDB::Client.new('url' => server.url, 'user' => 'reader', 'password' => 'r3ad'))
    assert_equal ["Basic #{['admin:s3cret'].pack('m0')}", "Basic #{['reader:r3ad'].pack('m0')}"],
                 server.requests.map { |r| r.headers['authorization'] }
  ensure
    server&.stop
  end

  def test_custom_headers_are_sent_with_every_request
    @accepted = ['static-token']
    client = ConfigDB::Client.new('url' => @server.url, 'headers' => { 'X-Auth-Token' => 'static-token', :'X-Site' => 'dc1' })
    fetch(client)
    fetch(client, 'globals')
    assert_equal [%w[static-token dc1]] * 2, @server.requests.map { |r| r.headers.values_at('x-auth-token', 'x-site') }
  end

  def test_a_keystone_token_is_obtained_once_per_process_and_sent_instead_of_basic
    fetch(keystone_client)
    fetch(keystone_client, 'globals')
    assert_equal 1, requests(TOKENS).size
    auth = JSON.parse(requests(TOKENS).first.body)['auth']
    assert_equal({ 'name' => 'admin', 'domain' => { 'name' => 'Default' }, 'password' => 's3cret' },
                 auth.dig('identity', 'password', 'user'))
    assert_equal({ 'project' => { 'name' => 'admin', 'domain' => { 'name' => 'Default' } } }, auth['scope'])
    data = requests(ASTUTE) + requests(GLOBALS)
    assert_equal %w[token-1 token-1], data.map { |r| r.headers['x-auth-token'] }
    assert(data.none? { |r| r.headers['authorization'] })
  end

  def test_the_project_and_domains_are_configurable
    fetch(keystone_client('project_name' => 'services', 'user_domain_name' => 'ops', 'project_domain_name' => 'infra'))
    auth = JSON.parse(requests(TOKENS).first.body)['auth']
    assert_equal 'ops', auth.dig('identity', 'password', 'user', 'domain', 'name')
    assert_equal({ 'project' => { 'name' => 'services', 'domain' => { 'name' => 'infra' } } }, auth['scope'])
  end

  def test_a_token_the_server_refuses_is_renewed_once
    client = keystone_client
    fetch(client)
    @accepted = ['token-2'] # token-1 was revoked
    assert_equal 1, client.effective(1, 'node-1.domain.tld', 'astute')['deployment_id']
    assert_equal %w[token-1 token-1 token-2], requests(ASTUTE).map { |r| r.headers['x-auth-token'] }
    assert_equal 2, requests(TOKENS).size
  end

  def test_a_token_about_to_expire_is_renewed_before_it_is_sent
    @lifetime = 5 # inside the renewal margin
    fetch(keystone_client)
    fetch(keystone_client, 'globals')
    assert_equal %w[token-1 token-2], @server.requests.reject { |r| r.path == TOKENS }.map { |r| r.headers['x-auth-token'] }
  end

  def test_a_token_refused_again_after_renewal_is_a_clear_error
    @accepted = []
    error = assert_raises(ConfigDB::Error) { fetch(keystone_client) }
    assert_match(/ConfigDB refused the credentials of user 'admin' \(Keystone token, project 'admin'\) \(401\) for .*astute.*requires authentication/,
                 error.message)
    assert_equal [2, 2], [requests(TOKENS).size, requests(ASTUTE).size]
    refute_match(/s3cret|token-/, error.message)
  end

  def test_keystone_refusing_the_password_is_a_clear_error_without_the_password
    error = assert_raises(ConfigDB::Error) { fetch(keystone_client('auth_pass' => 'wrong-pass')) }
    assert_match(%r{Keystone at http://127.0.0.1:\d+/v3/auth/tokens refused user 'admin' of project 'admin' \(401\): The request}, error.message)
    refute_match(/wrong-pass/, error.message)
    assert_empty requests(ASTUTE)
  end

  def test_401_and_403_fail_the_lookup_and_say_who_was_refused
    server = RecordingServer.new({
      ASTUTE => [401, { 'message' => 'The request you have made requires authentication.' }],
      GLOBALS => [403, { 'message' => 'Policy does not allow nailgun:read' }],
    })
    basic = ConfigDB::Client.new('url' => server.url, 'auth_user' => 'admin', 'auth_pass' => 's3cret')
    error = assert_raises(ConfigDB::Error) { fetch(basic) }
    assert_match(/ConfigDB refused the credentials of user 'admin' \(HTTP Basic\) \(401\) for .*requires authentication/, error.message)
    error = assert_raises(ConfigDB::Error) { fetch(basic, 'globals') }
    assert_match(/ConfigDB denied access to user 'admin' \(HTTP Basic\) \(403\) for .*nailgun:read/, error.message)
    refute_match(/s3cret/, error.message)
    error = assert_raises(ConfigDB::Error) { fetch(ConfigDB::Client.new('url' => server.url)) }
    assert_match(/without credentials \(set auth_user and auth_pass\) \(401\)/, error.message)
  ensure
    server&.stop
  end

  def test_each_identity_has_its_own_store
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 1 }] })
    %w[admin reader admin].each do |user|
      ConfigDB::Client.new('url' => server.url, 'auth_user' => user, 'auth_pass' => 'x')
                      .effective(1, 'node-1.domain.tld', 'astute', max_age: 60)
    end
    assert_equal 2, server.requests.size
  ensure
    server&.stop
  end

  def test_the_client_certificate_is_presented_to_a_server_that_demands_one
    ca = Certificates::Authority.new('ConfigDB test CA')
    cert, key = ca.issue('hiera-client')
    files = Certificates.write('ca.pem' => ca.cert.to_pem, 'client.pem' => cert.to_pem, 'client.key' => key.to_pem)
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 7 }] }, ssl_context: ca.server_context(client_ca: ca))
    client = ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => files['ca.pem'],
                                  'ssl_cert' => files['client.pem'], 'ssl_key' => files['client.key'])
    assert_equal 7, fetch(client)['deployment_id']
    assert_equal '/CN=hiera-client', server.requests.last.peer_cert.subject.to_s
    ConfigDB::Client.clear
    without = ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => files['ca.pem'])
    error = assert_raises(ConfigDB::Error) { fetch(without) }
    assert_equal "TLS: ConfigDB at 127.0.0.1:#{server.port} demands a client certificate: set ssl_cert and ssl_key",
                 error.message
    assert_equal 1, server.requests.size
  ensure
    server&.stop
  end

  def test_a_server_certificate_of_another_ca_is_refused_unless_verification_is_off
    ours = Certificates::Authority.new('ConfigDB test CA')
    other = Certificates::Authority.new('Somebody else')
    files = Certificates.write('ours.pem' => ours.cert.to_pem, 'other.pem' => other.cert.to_pem)
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 7 }] }, ssl_context: ours.server_context)
    error = assert_raises(ConfigDB::Error) { fetch(ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => files['other.pem'])) }
    assert_match(/\ATLS: the certificate of ConfigDB at 127.0.0.1:\d+ is signed by a CA not in the CA file #{files['other.pem']} \(ssl_ca_cert\) \(unable to get local issuer certificate\): set ssl_ca_cert to the CA that signed it\z/,
                 error.message)
    assert_empty server.requests
    assert_equal 7, fetch(ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => files['ours.pem']))['deployment_id']
    ConfigDB::Client.clear
    unverified = ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => files['other.pem'], 'ssl_verify' => false)
    assert_equal 7, fetch(unverified)['deployment_id']
  ensure
    server&.stop
  end

  def test_credentials_are_not_shown_and_plain_http_to_another_host_warns
    client = nil
    ConfigDB::Client.warned.clear
    _out, err = capture_io do
      client = ConfigDB::Client.new('url' => 'http://10.20.0.2:8000/api/v1/config', 'auth_user' => 'admin', 'auth_pass' => 's3cret')
    end
    assert_match(%r{credentials go to http://10.20.0.2:8000 over plain HTTP}, err)
    refute_match(/s3cret/, client.inspect)
    _out, err = capture_io { keystone_client } # loopback: no warning
    assert_empty err
  end
end
