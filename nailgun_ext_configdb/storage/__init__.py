"""Where ConfigDB's definitions and documents are kept: the store's drivers."""
