"""lgrep's MCP tools, one module per job, each a `Unit` whose methods `server.py` registers."""
