"""Persistent objects of the extension."""
