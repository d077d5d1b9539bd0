"""The settings floor: what lgrep is told, by files and the environment (`config`, `config_sources`)
and its built-in defaults (`defaults`).

It may import only the domain floor; runtime beside it is independent of it (docs/architecture.md,
"The floors of lgrep-core").
"""
