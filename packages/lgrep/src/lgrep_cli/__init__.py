"""The lgrep command."""
