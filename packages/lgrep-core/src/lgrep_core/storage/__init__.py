"""The storage floor: what lgrep keeps on disk. The index (its schema and safe LanceDB access:
`store`, `reader`, `layout`, `schema`, the versions index) and two ledgers beside it, small files
that import nothing of the index: what cloud providers billed (`spend`) and the answers' receipts
(`receipts`).

It may import settings, runtime and domain; embeddings beside it is independent of it
(docs/architecture.md, "The floors of lgrep-core").
"""
