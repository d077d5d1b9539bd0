"""lgrep-index."""
