"""Handlers of the upgrade resources and of the environment model."""
