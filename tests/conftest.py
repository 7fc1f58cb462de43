"""Shared pytest setup: package-specific fixtures live in tests/<package>/conftest.py."""
