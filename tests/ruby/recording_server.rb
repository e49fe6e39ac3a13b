# A tiny HTTP server for the backend's unit tests: serves fixed JSON documents with
# ETags, answers If-None-Match with 304, and records every request it gets (with its body and
# the client certificate it presented). Other paths get the real server's 404 for a data source
# the environment does not define.
require 'json'
require 'openssl'
require 'socket'
require 'digest'

class RecordingServer
  Request = Struct.new(:method, :path, :headers, :body, :peer_cert)

  attr_reader :requests, :port, :documents

  # documents: path (with query) => [status, body object, headers = {}], or a callable taking the
  # Request and returning that (a fake Keystone, a server refusing tokens it did not issue)
  def initialize(documents, ssl_context: nil)
    @documents = documents
    @requests = []
    @tcp = TCPServer.new('127.0.0.1', 0)
    @port = @tcp.addr[1]
    @server = ssl_context ? OpenSSL::SSL::SSLServer.new(@tcp, ssl_context) : @tcp
    @thread = Thread.new { serve }
  end

  def url(scheme = 'http')
    "#{scheme}://127.0.0.1:#{@port}/api/v1/config"
  end

  def stop
    @thread.kill
    @tcp.close
  end

  private

  def serve
    loop do
      begin
        socket = @server.accept
      rescue OpenSSL::SSL::SSLError, SystemCallError
        next
      end
      handle(socket)
    end
  end

  def handle(socket)
    method, path = socket.gets.to_s.split(' ')
    headers = {}
    while (line = socket.gets) && line != "\r\n"
      name, value = line.split(':', 2)
      headers[name.downcase] = value.strip
    end
    body = headers['content-length'] ? socket.read(headers['content-length'].to_i) : nil
    peer = socket.respond_to?(:peer_cert) ? socket.peer_cert : nil
    request = Request.new(method, path, headers, body, peer)
    @requests << request
    answer = @documents.fetch(path) { [404, { 'message' => "Data source #{path[/resources\/(.*)\/values/, 1]} is not supported in environment 1" }] }
    status, document, extra = answer.respond_to?(:call) ? answer.call(request) : answer
    text = JSON.generate(document)
    etag = %("#{Digest::SHA1.hexdigest(text)}")
    more = (extra || {}).map { |k, v| "#{k}: #{v}\r\n" }.join
    if status == 200 && headers['if-none-match'] == etag
      socket.write("HTTP/1.1 304 Not Modified\r\nETag: #{etag}\r\nConnection: close\r\n\r\n")
    else
      socket.write("HTTP/1.1 #{status} X\r\nContent-Type: application/json\r\nETag: #{etag}\r\n#{more}" \
                   "Content-Length: #{text.bytesize}\r\nConnection: close\r\n\r\n#{text}")
    end
    socket.close
  rescue SystemCallError, IOError, OpenSSL::SSL::SSLError
    socket&.close
  end
end
