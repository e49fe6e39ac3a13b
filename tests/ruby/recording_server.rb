# A tiny HTTP server for the backend's unit tests: serves fixed JSON documents with
# ETags, answers If-None-Match with 304, and records every request it gets (with its body, the
# client certificate it presented and the connection it came over). Other paths get the real
# server's 404 for a data source the environment does not define. With keep_alive it keeps
# connections open, as gunicorn or cheroot do, and counts them.
require 'json'
require 'openssl'
require 'socket'
require 'digest'

class RecordingServer
  Request = Struct.new(:method, :path, :headers, :body, :peer_cert, :connection)

  attr_reader :requests, :port, :documents, :connections

  # documents: path (with query) => [status, body object, headers = {}], or a callable taking the
  # Request and returning that (a fake Keystone, a server refusing tokens it did not issue)
  def initialize(documents, ssl_context: nil, keep_alive: false)
    @documents = documents
    @requests = []
    @keep_alive = keep_alive
    @connections = 0
    @open = []
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
    drop_connections
  end

  # Closes the kept-alive connections, as a server does with idle ones.
  def drop_connections
    @open.each(&:close)
    @open.clear
  end

  private

  def serve
    loop do
      begin
        socket = @server.accept
      rescue OpenSSL::SSL::SSLError, SystemCallError
        next
      end
      @connections += 1
      if @keep_alive
        @open << socket
        Thread.new(socket, @connections) { |kept, number| nil while handle(kept, number) }
      else
        handle(socket, @connections)
      end
    end
  end

  # Answers one request; true when the connection stays open for the next one.
  def handle(socket, connection)
    line = socket.gets
    if line.nil? # the client closed the connection
      socket.close
      return false
    end
    method, path = line.split(' ')
    headers = {}
    while (line = socket.gets) && line != "\r\n"
      name, value = line.split(':', 2)
      headers[name.downcase] = value.strip
    end
    body = headers['content-length'] ? socket.read(headers['content-length'].to_i) : nil
    peer = socket.respond_to?(:peer_cert) ? socket.peer_cert : nil
    request = Request.new(method, path, headers, body, peer, connection)
    @requests << request
    answer = @documents.fetch(path) { [404, { 'message' => "Data source #{path[/resources\/(.*)\/values/, 1]} is not supported in environment 1" }] }
    status, document, extra = answer.respond_to?(:call) ? answer.call(request) : answer
    text = JSON.generate(document)
    etag = %("#{Digest::SHA1.hexdigest(text)}")
    more = (extra || {}).map { |k, v| "#{k}: #{v}\r\n" }.join
    connection_header = @keep_alive ? '' : "Connection: close\r\n"
    if status == 200 && headers['if-none-match'] == etag
      socket.write("HTTP/1.1 304 Not Modified\r\nETag: #{etag}\r\n#{connection_header}\r\n")
    else
      socket.write("HTTP/1.1 #{status} X\r\nContent-Type: application/json\r\nETag: #{etag}\r\n#{more}" \
                   "Content-Length: #{text.bytesize}\r\n#{connection_header}\r\n#{text}")
    end
    return true if @keep_alive
    socket.close
    false
  rescue SystemCallError, IOError, OpenSSL::SSL::SSLError
    socket&.close
    false
  end
end
