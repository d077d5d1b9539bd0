"""lgrep-search."""
