"""The domain floor: lgrep's vocabulary, knowing no process, file format or wire. The error tree
(`errors`), the types and requests every package shares (`models`), what serves the use cases
(`engine`), the analyzer of code text (`text`), the stored code structure (`structure`), rank
fusion and the merge of several projects' answers (`rrf`, `merge`), the secret scanner (`secrets`),
file names that are not UTF-8 (`pathnames`), release versions (`versions`).

It imports no other floor of lgrep_core (docs/architecture.md, "The floors of lgrep-core").
"""
