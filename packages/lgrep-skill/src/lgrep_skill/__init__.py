"""lgrep-skill."""
