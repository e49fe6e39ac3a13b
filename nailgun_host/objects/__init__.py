"""The host's core objects: the operations extensions may use on releases, clusters,
networks, nodes and tasks (each module works on the shared session)."""
