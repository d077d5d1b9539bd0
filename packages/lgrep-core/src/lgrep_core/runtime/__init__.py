"""The runtime floor: what the process itself holds: locks that say who holds them and the private
folders they live in (`locks`), its memory (`memory`), its threads' CPU priority (`priority`).

It may import only the domain floor; settings beside it is independent of it (docs/architecture.md,
"The floors of lgrep-core").
"""
