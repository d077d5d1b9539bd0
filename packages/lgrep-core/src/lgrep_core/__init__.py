"""lgrep-core."""
