"""Internals of `lgrep_index.walker` (the public entry point); nothing here is public API."""
