"""Storage schema and safe LanceDB access."""
