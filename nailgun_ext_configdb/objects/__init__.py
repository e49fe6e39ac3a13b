"""ConfigDB's domain: components, resource definitions, environments, stored documents, levels, keys and the merge."""
