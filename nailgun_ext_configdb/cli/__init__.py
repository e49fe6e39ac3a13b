"""The ``fuel2 config ...`` commands: client side only (requests, cliff and PyYAML, never the server)."""
