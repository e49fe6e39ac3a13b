"""The shared platform beneath the Nailgun host and its extensions: what both extensions need and
Nailgun never had.

Secrets and sealing (``secrets``, ``sealed``), RFC 6902 patching (``patching``), JSON equality
(``json_equality``) and input rules (``json_rules``, ``user_schemas``), the read cache and whole
answers (``read_cache``, ``whole_answer``, ``etags``), notifications and the feed server
(``notify``, ``feed_server``), the client toolkit (``client``), strict YAML and the one clock.

A library: it imports nothing of ``nailgun_host`` or of an extension (an import-linter contract
says so); what it needs of them is handed in (``hosting``, callbacks, arguments). Extensions use it
through ``nailgun_platform.public`` (server side) and ``nailgun_platform.client`` (client side).
"""
