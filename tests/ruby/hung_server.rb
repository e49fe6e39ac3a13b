# A server that accepts connections and never answers (a hung ConfigDB), counting the connections,
# so that a test sees both how long a client waits and whether it silently tried again.
require 'socket'

class HungServer
  attr_reader :port

  def initialize
    @tcp = TCPServer.new('127.0.0.1', 0)
    @port = @tcp.addr[1]
    @held = Queue.new
    @thread = Thread.new { loop { @held << @tcp.accept } }
  end

  def url
    "http://127.0.0.1:#{@port}/api/v1/config"
  end

  def connections
    @held.size
  end

  def stop
    @thread.kill
    @tcp.close
    @held.size.times { @held.pop.close }
  end
end
