"""The RPC floor: the lgrep.v1 contract in Python. Conversions between domain types and wire messages
(`wire`), the daemon's clients (`client` over grpcio, `lite_client` over h2, `daemon_client` that
finds or starts the daemon, `endpoints` that read where it listens), what every server shares
(`server`, `grpc_*`).

It may import storage, embeddings, settings, runtime and domain, never the application floor above
it (docs/architecture.md, "The floors of lgrep-core").
"""
