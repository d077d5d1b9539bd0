"""Versions of a repository: git tags as component@version."""
