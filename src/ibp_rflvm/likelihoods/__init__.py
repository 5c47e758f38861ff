"""Observation models, each a plug-in behind the small interface in :mod:`.base`."""
