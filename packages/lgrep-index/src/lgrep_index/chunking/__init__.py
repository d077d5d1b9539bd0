"""Internals of `lgrep_index.chunker` (the public entry point); nothing here is public API."""
