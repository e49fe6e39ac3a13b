"""The extension's domain: upgrade relations, the upgrade itself (clone, move, VIPs, releases) and the environment model."""
