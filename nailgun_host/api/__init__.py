"""REST handlers of the host's core objects and the plumbing every handler shares."""
