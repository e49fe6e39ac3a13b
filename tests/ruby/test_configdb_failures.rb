# Each way a request of the ConfigDB backends gets no answer, against a real TLS (or TCP) server, has its
# own one-line headline naming the cause, the server's host:port and the option to change
# (ConfigDB::Failures), for ConfigDB and for Keystone alike; a certificate's fault is a misconfiguration
# (ConfigDB::Error), a refusal or a timeout an outage (ConfigDB::Unavailable, which failure: graceful forgives).
# Run: ruby -I nailgun_ext_configdb/hiera/configdb/lib tests/ruby/test_configdb_failures.rb
require 'minitest/autorun'
require 'puppet_x/configdb/client'
require_relative 'certificates'
require_relative 'recording_server'
require_relative 'hung_server'

class ConfigDBFailuresTest < Minitest::Test
  CA = Certificates::Authority.new('ConfigDB test CA')
  OTHER_CA = Certificates::Authority.new('Somebody else')
  FILES = Certificates.write('ca.pem' => CA.cert.to_pem, 'other.pem' => OTHER_CA.cert.to_pem)
  DOCUMENT = { '/api/v1/config/environments/1/nodes/n/resources/astute/values?effective' => [200, { 'a' => 1 }] }.freeze

  # cause => [the server's TLS context (nil: plain HTTP), the client's CA file, the class raised, the headline's pattern]
  TLS_CAUSES = {
    'hostname mismatch' => [CA.server_context(san: 'DNS:configdb.example'), FILES['ca.pem'], ConfigDB::Error,
                            /\ATLS: the certificate of %<service>s at %<where>s is not valid for the name 127\.0\.0\.1 \(hostname mismatch\): connect by a name it holds \(the %<option>s option\), or reissue it for 127\.0\.0\.1\z/],
    'unknown CA' => [CA.server_context, FILES['other.pem'], ConfigDB::Error,
                     /\ATLS: the certificate of %<service>s at %<where>s is signed by a CA not in the CA file \S+other\.pem \(ssl_ca_cert\) \(unable to get local issuer certificate\): set ssl_ca_cert to the CA that signed it\z/],
    'self-signed' => [Certificates.self_signed_context, FILES['ca.pem'], ConfigDB::Error,
                      /\ATLS: the certificate of %<service>s at %<where>s is self-signed and not in the CA file \S+ca\.pem \(ssl_ca_cert\) \(self-signed certificate\): set ssl_ca_cert to a file holding it or its CA\z/],
    'expired' => [CA.server_context(not_after: Time.now - 3600), FILES['ca.pem'], ConfigDB::Error,
                  /\ATLS: the certificate of %<service>s at %<where>s has expired: the server needs a renewed certificate\z/],
    'not TLS' => [nil, FILES['ca.pem'], ConfigDB::Error,
                  /\ATLS: %<service>s at %<where>s does not speak TLS there: use an http URL in the %<option>s option, or the port where it serves https\z/],
  }.freeze

  # An HTTP server that answers whatever comes, a TLS handshake included, with a 400 (as http.server does)
  class PlainServer
    attr_reader :port, :requests

    def initialize
      @tcp = TCPServer.new('127.0.0.1', 0)
      @port = @tcp.addr[1]
      @requests = []
      @thread = Thread.new do
        loop do
          connection = @tcp.accept
          connection.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
          connection.close
        end
      end
    end

    def url(scheme)
      "#{scheme}://127.0.0.1:#{@port}/api/v1/config"
    end

    def stop
      @thread.kill
      @tcp.close
    end
  end

  def setup
    ConfigDB::Client.clear
  end

  def failure(service, url, ca_file)
    options = { 'ssl_ca_cert' => ca_file, 'http_connect_timeout' => 1, 'http_read_timeout' => 1 }
    if service == 'Keystone' # the token comes first: ConfigDB itself is never asked
      options.update('url' => 'http://127.0.0.1:1/api/v1/config', 'keystone_url' => url, 'auth_user' => 'hiera',
                     'auth_pass' => 'pw')
    else
      options['url'] = url
    end
    assert_raises(ConfigDB::Error) { ConfigDB::Client.new(options).effective(1, 'n', 'astute') }
  end

  def expect(error, klass, pattern, service, port)
    option = service == 'Keystone' ? 'keystone_url' : 'url'
    expected = Regexp.new(format(pattern.source, service: service, where: "127.0.0.1:#{port}", option: option))
    assert_match expected, error.message
    assert_instance_of klass, error
    assert_kind_of ConfigDB::NoAnswer, error
  end

  %w[ConfigDB Keystone].each do |service|
    TLS_CAUSES.each do |cause, (context, ca_file, klass, pattern)|
      define_method("test_#{service.downcase}_#{cause.tr(' -', '__')}") do
        server = context ? RecordingServer.new(DOCUMENT, ssl_context: context) : PlainServer.new
        begin
          error = failure(service, server.url('https'), ca_file)
          expect(error, klass, pattern, service, server.port)
          assert_empty server.requests # no request went over a connection the client did not trust
        ensure
          server.stop
        end
      end
    end

    define_method("test_#{service.downcase}_refused") do
      port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
      expect(failure(service, "https://127.0.0.1:#{port}/", FILES['ca.pem']), ConfigDB::Unavailable,
             /\AConnection to %<service>s at %<where>s refused: nothing listens there; check the %<option>s option\z/,
             service, port)
    end

    define_method("test_#{service.downcase}_silent_during_the_handshake") do
      server = HungServer.new
      begin
        expect(failure(service, "https://127.0.0.1:#{server.port}/", FILES['ca.pem']), ConfigDB::Unavailable,
               /\ANo connection to %<service>s at %<where>s within 1 s: check the %<option>s option and the firewall \(or raise http_connect_timeout\)\z/,
               service, server.port)
      ensure
        server.stop
      end
    end
  end

  def test_errors_no_loopback_server_can_cause_have_their_line_too
    uri = URI('https://configdb.example:8443/api/v1/config')
    classify = ->(error) { ConfigDB::Failures.classify(error, uri, { 'http_read_timeout' => 3 }, 'ConfigDB', 'the url option') }
    assert_equal ['unknown host', 'Cannot resolve the name configdb.example (ConfigDB at configdb.example:8443): ' \
                                  'getaddrinfo: Name or service not known; check the url option'],
                 classify.call(SocketError.new('getaddrinfo: Name or service not known'))
    assert_equal ['timeout', 'ConfigDB at configdb.example:8443 did not answer within 3 s: it is hung or overloaded ' \
                             '(or raise http_read_timeout)'], classify.call(Net::ReadTimeout.new)
    assert_equal 'connection', classify.call(Errno::ECONNRESET.new).first
    assert_kind_of ConfigDB::Unavailable, ConfigDB::Failures.error(Errno::ECONNRESET.new, uri, {}, 'ConfigDB', 'url')
  end

  # Net::HTTP goes through the environment's http_proxy (unless no_proxy names the host; never for the loopback):
  # a refusal is then the proxy's, and the line must say so, without the proxy's credentials. Classified without
  # a request: the server is not on the loopback.
  def test_a_proxy_that_refuses_is_named_and_not_its_password
    saved = %w[http_proxy HTTP_PROXY no_proxy NO_PROXY].to_h { |name| [name, ENV.delete(name)] }
    ENV['http_proxy'] = 'http://squid:pr0xy-pw@127.0.0.1:3128'
    uri = URI('https://10.20.0.2:8443/api/v1/config')
    classify = ->(error) { ConfigDB::Failures.classify(error, uri, {}, 'ConfigDB', 'the url option') }
    assert_equal ['refused', 'Connection to the proxy at 127.0.0.1:3128 (http_proxy) on the way to ConfigDB at ' \
                             '10.20.0.2:8443 refused: nothing listens there; check http_proxy (or no_proxy)'],
                 classify.call(Errno::ECONNREFUSED.new)
    assert_equal ['timeout', 'ConfigDB at 10.20.0.2:8443 through the proxy at 127.0.0.1:3128 (http_proxy) did not ' \
                             'answer within 10 s: it is hung or overloaded (or raise http_read_timeout)'],
                 classify.call(Net::ReadTimeout.new)
    ENV['no_proxy'] = '10.20.0.2'
    assert_equal 'Connection to ConfigDB at 10.20.0.2:8443 refused: nothing listens there; check the url option',
                 classify.call(Errno::ECONNREFUSED.new).last
  ensure
    saved&.each { |name, value| value.nil? ? ENV.delete(name) : ENV[name] = value }
  end

  def test_the_right_ca_file_is_trusted_so_each_cause_above_is_the_only_fault
    server = RecordingServer.new(DOCUMENT, ssl_context: CA.server_context)
    client = ConfigDB::Client.new('url' => server.url('https'), 'ssl_ca_cert' => FILES['ca.pem'])
    assert_equal({ 'a' => 1 }, client.effective(1, 'n', 'astute'))
  ensure
    server&.stop
  end

  def test_a_refusal_by_the_server_itself_is_no_failure_to_reach_it
    server = RecordingServer.new(DOCUMENT.transform_values { [403, { 'message' => 'Forbidden' }] })
    error = assert_raises(ConfigDB::Error) { ConfigDB::Client.new('url' => server.url).effective(1, 'n', 'astute') }
    refute_kind_of ConfigDB::NoAnswer, error # Puppet gets its LookupError
  ensure
    server&.stop
  end
end
