"""The configdb extension: a versioned store of serialized deployment facts."""
