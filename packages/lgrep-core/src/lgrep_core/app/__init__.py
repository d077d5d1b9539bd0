"""The application floor: lgrep's use cases as every shell calls them (`api.Lgrep`), which project a
path belongs to (`scope`), the one JSON vocabulary of every answer (`serialize`) and how a command
line program ends (`cli_support`).

It may import every floor below it (rpc, storage, embeddings, settings, runtime, domain); nothing
in lgrep_core imports it (docs/architecture.md, "The floors of lgrep-core").
"""
