"""The shared platform beneath the Nailgun host and its extensions.

A library: it imports nothing of ``nailgun_host`` or of an extension (an import-linter
contract says so); what it needs of them is handed in.
"""
