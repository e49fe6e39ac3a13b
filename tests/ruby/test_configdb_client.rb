# Unit tests of ConfigDB::Client: one request per data source, ETag revalidation, the first-found
# merge of data sources, the process's kept-alive connections, errors, auth, TLS.
# Run: ruby -I nailgun_ext_configdb/hiera/configdb/lib tests/ruby/test_configdb_client.rb
require 'minitest/autorun'
require 'tmpdir'
require 'puppet_x/configdb/client'
require_relative 'recording_server'
require_relative 'hung_server'

class ConfigDBClientTest < Minitest::Test
  ASTUTE = '/api/v1/config/environments/1/nodes/node-1.domain.tld/resources/astute/values?effective'

  def setup
    ConfigDB::Client.clear
    @server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 1, 'nested' => { 'a' => [1, 2] } }] })
    @client = ConfigDB::Client.new('url' => @server.url)
  end

  def teardown
    @server.stop
  end

  def test_source_url_escapes_node_and_keeps_slashes_of_the_source
    url = @client.source_url(1, 'node 1', 'override/configuration/role')
    assert_equal "#{@server.url}/environments/1/nodes/node%201/resources/override/configuration/role/values?effective", url
    assert_equal "#{@server.url}/environments/3/resources/globals/values?effective", @client.source_url(3, '', 'globals')
  end

  def test_no_environment_is_an_error
    error = assert_raises(ConfigDB::Error) { @client.source_url('', 'n', 'astute') }
    assert_match(/no environment id/, error.message)
  end

  def test_fetches_a_data_source_once_within_max_age
    3.times do
      assert_equal 1, @client.effective(1, 'node-1.domain.tld', 'astute', max_age: 60)['deployment_id']
    end
    assert_equal 1, @server.requests.size
  end

  def test_the_store_is_shared_by_every_client_of_the_process
    @client.effective(1, 'node-1.domain.tld', 'astute', max_age: 60)
    other = ConfigDB::Client.new('url' => @server.url)
    assert_equal({ 'a' => [1, 2] }, other.effective(1, 'node-1.domain.tld', 'astute', max_age: 60)['nested'])
    assert_equal 1, @server.requests.size
  end

  def test_revalidates_with_if_none_match_and_keeps_the_data_on_304
    first = @client.effective(1, 'node-1.domain.tld', 'astute')
    second = @client.effective(1, 'node-1.domain.tld', 'astute')
    assert_equal first, second
    assert_equal 2, @server.requests.size
    assert_nil @server.requests[0].headers['if-none-match']
    assert_match(/\A"[0-9a-f]{40}"\z/, @server.requests[1].headers['if-none-match'])
  end

  def test_a_missing_data_source_is_empty
    assert_equal({}, @client.effective(1, 'node-1.domain.tld', 'globals'))
  end

  def test_an_unknown_environment_or_node_raises_instead_of_looking_empty
    server = RecordingServer.new({
      ASTUTE => [404, { 'message' => 'Cannot find an environment with the given identifier 1' }],
    })
    client = ConfigDB::Client.new('url' => server.url)
    error = assert_raises(ConfigDB::Error) { client.effective(1, 'node-1.domain.tld', 'astute') }
    assert_match(/ConfigDB answered 404 .*Cannot find an environment with the given identifier 1/, error.message)
  ensure
    server&.stop
  end

  def test_a_server_error_raises_with_the_servers_message
    server = RecordingServer.new({ ASTUTE => [500, { 'message' => 'database is down' }] })
    client = ConfigDB::Client.new('url' => server.url)
    error = assert_raises(ConfigDB::Error) { client.effective(1, 'node-1.domain.tld', 'astute') }
    assert_match(/ConfigDB answered 500 .*database is down/, error.message)
  ensure
    server&.stop
  end

  def test_an_unreachable_server_raises_a_clear_error
    port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
    client = ConfigDB::Client.new('url' => "http://127.0.0.1:#{port}/api/v1/config")
    error = assert_raises(ConfigDB::Error) { client.effective(1, 'n', 'astute') }
    assert_equal "Connection to ConfigDB at 127.0.0.1:#{port} refused: nothing listens there; check the url option",
                 error.message
  end

  def test_sends_basic_auth_when_configured
    client = ConfigDB::Client.new('url' => @server.url, 'user' => 'admin', 'password' => 's3cret')
    client.effective(1, 'node-1.domain.tld', 'astute')
    assert_equal "Basic #{['admin:s3cret'].pack('m0')}", @server.requests.last.headers['authorization']
  end

  def test_an_answer_with_masked_secrets_fails_and_is_not_kept
    masked = [200, { 'db_password' => '<secret>' }, { 'X-Secrets-Masked' => 'true' }]
    server = RecordingServer.new({ ASTUTE => masked })
    client = ConfigDB::Client.new('url' => server.url, 'auth_user' => 'reader', 'auth_pass' => 'reader-pw')
    2.times do
      error = assert_raises(ConfigDB::Error) { client.effective(1, 'node-1.domain.tld', 'astute', max_age: 60) }
      assert_match(/\AConfigDB: the identity 'reader' may not read secrets: give it the hiera role \(http/,
                   error.message)
      refute_match(/<secret>/, error.message)
    end
    assert_equal 2, server.requests.size # nothing masked was kept for the next lookup
    assert_nil server.requests.last.headers['if-none-match']
  ensure
    server&.stop
  end

  def test_an_answer_without_the_header_or_with_false_is_the_data
    server = RecordingServer.new({ ASTUTE => [200, { 'db_password' => 'clear' }, { 'X-Secrets-Masked' => 'false' }] })
    client = ConfigDB::Client.new('url' => server.url)
    assert_equal({ 'db_password' => 'clear' }, client.effective(1, 'node-1.domain.tld', 'astute'))
  ensure
    server&.stop
  end

  # X-Level-Unknown: the environment stores nothing for this node while it stores data for others (issue 26)
  def test_a_node_the_environment_stores_nothing_for_fails_and_is_not_kept
    server = RecordingServer.new({ ASTUTE => [200, { 'environment_level' => 1 }, { 'X-Level-Unknown' => 'true' }] })
    client = ConfigDB::Client.new('url' => server.url)
    2.times do
      error = assert_raises(ConfigDB::Error) { client.effective(1, 'node-1.domain.tld', 'astute', max_age: 60) }
      assert_equal "ConfigDB stores nothing for the node of #{server.url}/environments/1/nodes/node-1.domain.tld/" \
                   'resources/astute/values?effective in its environment, only for other nodes: is the node (the ' \
                   'node option or the fqdn fact) the name its data was uploaded under?', error.message
    end
    assert_equal 2, server.requests.size # nothing was kept for the next lookup
  ensure
    server&.stop
  end

  def test_unknown_node_warn_reads_the_environment_level_values_with_one_warning
    server = RecordingServer.new({ ASTUTE => [200, { 'environment_level' => 1 }, { 'X-Level-Unknown' => 'true' }] })
    client = ConfigDB::Client.new('url' => server.url, 'unknown_node' => 'warn')
    _out, err = capture_io do
      2.times { assert_equal({ 'environment_level' => 1 }, client.effective(1, 'node-1.domain.tld', 'astute')) }
    end
    assert_equal 1, err.scan(/ConfigDB stores nothing for the node of .*\(unknown_node: warn, the lookup goes on\)/).size,
                 err
  ensure
    server&.stop
  end

  # The store is the process's: a Puppet server compiles environments whose hiera.yaml differ. A copy kept by a
  # warn client, revalidated (304, which does not repeat the header) or taken within max_age by a fail client,
  # must still fail: the stored copy remembers that it holds no node's values.
  def test_a_kept_copy_of_an_unknown_node_fails_a_fail_client
    server = RecordingServer.new({ ASTUTE => [200, { 'environment_level' => 1 }, { 'X-Level-Unknown' => 'true' }] })
    warning = ConfigDB::Client.new('url' => server.url, 'unknown_node' => 'warn')
    failing = ConfigDB::Client.new('url' => server.url)
    capture_io { warning.effective(1, 'node-1.domain.tld', 'astute') }
    [0, 60].each do |max_age|
      error = assert_raises(ConfigDB::Error) { failing.effective(1, 'node-1.domain.tld', 'astute', max_age: max_age) }
      assert_match(/\AConfigDB stores nothing for the node of /, error.message)
    end
    assert_equal 2, server.requests.size
    refute_nil server.requests[1].headers['if-none-match'] # the first answer of the fail client was a 304
    _out, err = capture_io { @kept = warning.effective(1, 'node-1.domain.tld', 'astute', max_age: 60) }
    assert_equal [{ 'environment_level' => 1 }, ''], [@kept, err] # warned once already
  ensure
    server&.stop
  end

  def test_credentials_in_a_url_option_are_refused_without_showing_them
    %w[url keystone_url].each do |option|
      options = { 'url' => @server.url, option => 'http://hiera:hiera-pw@127.0.0.1:5000/v3' }
      error = assert_raises(ConfigDB::Error) { ConfigDB::Client.new(options) }
      assert_equal "ConfigDB: the #{option} option holds credentials: give them as auth_user and auth_pass",
                   error.message
    end
  end

  def test_unknown_node_takes_fail_or_warn_only
    assert_equal 'fail', ConfigDB::Options.unknown_node({})
    error = assert_raises(ConfigDB::Error) { ConfigDB::Client.new('url' => @server.url, 'unknown_node' => 'graceful') }
    assert_equal 'ConfigDB: unknown_node must be fail or warn, not "graceful"', error.message
  end

  def test_tls_is_verified_against_the_ca_file
    key = OpenSSL::PKey::RSA.new(2048)
    cert = self_signed(key)
    context = OpenSSL::SSL::SSLContext.new
    context.cert = cert
    context.key = key
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 7 }] }, ssl_context: context)
    ca_file = File.join(Dir.mktmpdir, 'ca.pem')
    File.write(ca_file, cert.to_pem)
    trusted = ConfigDB::Client.new('url' => server.url('https'), 'ca_file' => ca_file)
    assert_equal 7, trusted.effective(1, 'node-1.domain.tld', 'astute')['deployment_id']
    ConfigDB::Client.clear
    untrusted = ConfigDB::Client.new('url' => server.url('https'))
    error = assert_raises(ConfigDB::Error) { untrusted.effective(1, 'node-1.domain.tld', 'astute') }
    assert_match(/\ATLS: the certificate of ConfigDB at 127.0.0.1:\d+ is self-signed and not in the system's CAs /,
                 error.message)
  ensure
    server&.stop
  end

  def test_first_found_takes_each_key_from_the_most_specific_data_source_that_has_it
    prefix = '/api/v1/config/environments/1/nodes/node-1.domain.tld/resources'
    server = RecordingServer.new({
      "#{prefix}/override/node/values?effective" => [200, { 'port' => 2, 'nova' => { 'debug' => true } }],
      "#{prefix}/astute/values?effective" => [200, { 'port' => 1, 'nova' => { 'verbose' => true }, 'id' => 9 }],
    })
    client = ConfigDB::Client.new('url' => server.url)
    merged = client.first_found(1, 'node-1.domain.tld', %w[override/node globals astute])
    assert_equal({ 'port' => 2, 'nova' => { 'debug' => true }, 'id' => 9 }, merged) # first found: no deep merge
    assert_equal 3, server.requests.size
    assert_same client.effective(1, 'node-1.domain.tld', 'astute'), client.first_found(1, 'node-1.domain.tld', %w[astute])
    assert_equal({}, client.first_found(1, 'node-1.domain.tld', []))
  ensure
    server&.stop
  end

  def test_the_clients_of_a_process_share_one_kept_alive_connection
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 1 }] }, keep_alive: true)
    clients = [ConfigDB::Client.new('url' => server.url),
               ConfigDB::Client.new('url' => server.url, 'auth_user' => 'hiera', 'auth_pass' => 'hiera-pw')]
    clients.each { |client| %w[astute globals astute].each { |source| client.effective(1, 'node-1.domain.tld', source) } }
    assert_equal 6, server.requests.size
    assert_equal [1], server.requests.map(&:connection).uniq
    assert_equal [nil, nil, nil, "Basic #{['hiera:hiera-pw'].pack('m0')}"], server.requests.map { |r| r.headers['authorization'] }.first(4)
    server.drop_connections # as a server does with an idle connection: the next request opens another
    assert_equal 1, clients.first.effective(1, 'node-1.domain.tld', 'astute')['deployment_id']
    assert_equal 2, server.connections
  ensure
    server&.stop
  end

  def test_a_forked_process_opens_its_own_connection
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 1 }] }, keep_alive: true)
    client = ConfigDB::Client.new('url' => server.url)
    client.effective(1, 'node-1.domain.tld', 'astute')
    child = fork { exit!(client.effective(1, 'node-1.domain.tld', 'astute')['deployment_id'] == 1 ? 0 : 1) }
    _pid, status = Process.wait2(child)
    assert status.success?
    assert_equal 1, client.effective(1, 'node-1.domain.tld', 'astute')['deployment_id']
    assert_equal [1, 2, 1], server.requests.map(&:connection)
  ensure
    server&.stop
  end

  def test_a_connection_is_not_shared_across_tls_settings
    key = OpenSSL::PKey::RSA.new(2048)
    cert = self_signed(key)
    context = OpenSSL::SSL::SSLContext.new
    context.cert = cert
    context.key = key
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 7 }] }, ssl_context: context, keep_alive: true)
    ca_file = File.join(Dir.mktmpdir, 'ca.pem')
    File.write(ca_file, cert.to_pem)
    trusted = ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => ca_file)
    assert_equal 7, trusted.effective(1, 'node-1.domain.tld', 'astute')['deployment_id']
    untrusted = ConfigDB::Client.new('url' => server.url('https'))
    error = assert_raises(ConfigDB::Error) { untrusted.effective(1, 'node-1.domain.tld', 'globals') }
    assert_match(/\ATLS: the certificate of ConfigDB at 127.0.0.1:\d+ is self-signed and not in the system's CAs /,
                 error.message)
    assert_equal 1, server.requests.size
  ensure
    server&.stop
  end

  private

  def self_signed(key)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = 1
    cert.subject = cert.issuer = OpenSSL::X509::Name.parse('/CN=127.0.0.1')
    cert.public_key = key.public_key
    cert.not_before = Time.now - 60
    cert.not_after = Time.now + 3600
    extensions = OpenSSL::X509::ExtensionFactory.new(cert, cert)
    cert.add_extension(extensions.create_extension('basicConstraints', 'CA:TRUE', true))
    cert.add_extension(extensions.create_extension('subjectAltName', 'IP:127.0.0.1'))
    cert.sign(key, OpenSSL::Digest.new('SHA256'))
    cert
  end
end

# hiera-http's parity: timeouts without a silent second wait, and what `failure: graceful` forgives.
class ConfigDBTimeoutTest < Minitest::Test
  ASTUTE = ConfigDBClientTest::ASTUTE

  def setup
    ConfigDB::Client.clear
  end

  def test_a_hung_server_fails_after_one_read_timeout_without_a_retry
    server = HungServer.new
    client = ConfigDB::Client.new('url' => server.url, 'http_read_timeout' => 1)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(ConfigDB::Unavailable) { client.effective(1, 'node-1.domain.tld', 'astute') }
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_match(/\AConfigDB at 127.0.0.1:\d+ did not answer within 1 s: it is hung or overloaded/, error.message)
    assert_equal 1, server.connections # Net::HTTP's own retry would have opened a second one
    assert_operator waited, :>=, 1
    assert_operator waited, :<, 2 # not twice the timeout
  ensure
    server&.stop
  end

  def test_timeouts_default_to_ten_seconds_and_take_hiera_http_and_older_names
    uri = URI('http://127.0.0.1:1/')
    defaults = ConfigDB::HTTP.http_for(uri, ConfigDB::Client::DEFAULTS)
    assert_equal [10.0, 10.0, 0], [defaults.open_timeout, defaults.read_timeout, defaults.max_retries]
    options = ConfigDB::Client.new('open_timeout' => 2, 'http_read_timeout' => 3).instance_variable_get(:@options)
    http = ConfigDB::HTTP.http_for(uri, options)
    assert_equal [2.0, 3.0], [http.open_timeout, http.read_timeout]
  end

  def test_an_unavailable_server_is_not_asked_again_within_failure_ttl
    port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
    url = "http://127.0.0.1:#{port}/api/v1/config"
    client = ConfigDB::Client.new('url' => url, 'failure_ttl' => 60)
    first = assert_raises(ConfigDB::Unavailable) { client.effective(1, 'n', 'astute') }
    server = TCPServer.new('127.0.0.1', port) # up again, but the failure is remembered for any data source
    lines = []
    again = assert_raises(ConfigDB::Unavailable) { client.effective(1, 'n', 'globals', explain: lines.method(:<<)) }
    assert_same first, again
    assert_match(/globals.*: not asked \(unavailable .* s ago, failure_ttl 60 s\): Connection to ConfigDB at 127.0.0.1:#{port} refused/,
                 lines.first)
    assert_equal :wait_readable, server.accept_nonblock(exception: false) # no connection came
    error = assert_raises(ConfigDB::Unavailable) { ConfigDB::Client.new('url' => url, 'failure_ttl' => 0, 'http_read_timeout' => 0.2).effective(1, 'n', 'astute') }
    refute_same first, error # asked again: the server accepted, and the test's server never answers HTTP
    refute_nil server.accept_nonblock(exception: false)
  ensure
    server&.close
  end

  def test_a_server_error_is_unavailable_but_a_refusal_is_not
    documents = { ASTUTE => [503, { 'message' => 'database is down' }] }
    server = RecordingServer.new(documents)
    client = ConfigDB::Client.new('url' => server.url, 'failure_ttl' => 0)
    assert_raises(ConfigDB::Unavailable) { client.effective(1, 'node-1.domain.tld', 'astute') }
    documents[ASTUTE] = [403, { 'message' => 'Policy does not allow nailgun:read' }]
    error = assert_raises(ConfigDB::Error) { client.effective(1, 'node-1.domain.tld', 'astute') }
    refute_kind_of ConfigDB::Unavailable, error
  ensure
    server&.stop
  end

  def test_explain_names_the_url_and_whether_the_stored_copy_served
    server = RecordingServer.new({ ASTUTE => [200, { 'deployment_id' => 1 }] })
    client = ConfigDB::Client.new('url' => server.url)
    lines = []
    2.times { client.effective(1, 'node-1.domain.tld', 'astute', explain: lines.method(:<<)) }
    client.effective(1, 'node-1.domain.tld', 'astute', max_age: 60, explain: lines.method(:<<))
    url = "#{server.url}/environments/1/nodes/node-1.domain.tld/resources/astute/values?effective"
    assert_equal ["ConfigDB #{url}: fetched (200)", "ConfigDB #{url}: cache used (304: stored copy revalidated)"],
                 lines.first(2)
    assert_match(/\AConfigDB #{Regexp.escape(url)}: cache used \(fetched .* s ago, cache_ttl 60/, lines.last)
  ensure
    server&.stop
  end
end
