"""Secrets (issue 11): which values of a document are secret (``classify``) and the Fernet keys
that encrypt them at rest (``keys``).

Both are free of the web layer and of the database: the handlers and the storage call them,
never the other way round.
"""
