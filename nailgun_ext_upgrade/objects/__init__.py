"""The extension's domain: upgrade relations, the upgrade itself (clone, move nodes, VIPs,
releases) and the environment model."""
