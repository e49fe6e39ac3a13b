# The backends' options that decide whether ConfigDB is asked at all, with hiera-http's names and
# semantics, so that an operator's hiera-http habits carry over:
#   failure: graceful    ConfigDB out of reach, hung or failing (5xx) makes the lookup "not found"
#                        (the next backend or hierarchy level answers) instead of failing the run;
#                        a misconfiguration (refused credentials, masked secrets, an unknown
#                        environment or node) still fails it
#   confine_to_keys      regexes; only a key one of them matches as a whole goes to ConfigDB
#   unknown_node         fail (default) or warn: a node the environment stores nothing for, while it
#                        stores data for other nodes (a wrong node name, or data never uploaded), fails
#                        the lookup, or warns once and reads the environment-level values
# and the node a lookup reads, which must not be empty.
require 'puppet_x/configdb/http'

module ConfigDB
  module Options
    @warned = {}
    @lock = Mutex.new

    module_function

    def graceful?(options)
      options['failure'].to_s == 'graceful'
    end

    UNKNOWN_NODE = %w[fail warn].freeze

    # What the unknown_node option says: 'fail' (default: Puppet must never take the environment's values,
    # or nothing, for a node's because the node was misnamed) or 'warn'.
    def unknown_node(options)
      value = (options['unknown_node'] || 'fail').to_s
      return value if UNKNOWN_NODE.include?(value)
      raise Error, "ConfigDB: unknown_node must be fail or warn, not #{value.inspect}"
    end

    # The union of confine_to_keys' regexes, or nil when the option is not set.
    def confinement(options)
      patterns = options['confine_to_keys']
      return nil if patterns.nil?
      raise Error, 'ConfigDB: confine_to_keys must be an array of regexes' unless patterns.is_a?(Array)
      Regexp.union(patterns.map { |pattern| Regexp.new(pattern.to_s) })
    rescue RegexpError => e
      raise Error, "ConfigDB: confine_to_keys has an invalid regex: #{e.message}"
    end

    # Whether key goes to ConfigDB: as in hiera-http, a regex must match the whole key.
    def admits?(confinement, key)
      confinement.nil? || key[confinement] == key
    end

    # The node a lookup reads. An empty one (a scope without the fqdn fact) would silently read
    # the environment's values instead of the node's: that is an error.
    # origin: where the node came from ('the fqdn fact' or 'the node option'), for the message.
    def node!(node, origin)
      return node unless node.to_s.empty?
      raise Error, "ConfigDB: no node to look up: #{origin} is empty in this scope; refusing to read " \
                   "environment-level values as the node's"
    end

    # Yields once per process and key: a warning that is worth one line, not one per lookup.
    def warn_once(key)
      first = @lock.synchronize { @warned[key] ? false : (@warned[key] = true) }
      yield if first
    end
  end
end
