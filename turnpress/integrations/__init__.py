"""Adapters between turnpress and agent frameworks (each behind its own extra)."""
