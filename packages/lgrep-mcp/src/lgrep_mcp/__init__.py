"""lgrep-mcp."""
