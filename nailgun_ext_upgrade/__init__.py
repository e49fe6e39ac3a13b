"""The cluster_upgrade extension: clone an environment into an Upgrade Seed and move nodes into it."""
