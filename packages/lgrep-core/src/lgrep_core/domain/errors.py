"""The one error tree of lgrep. Every expected failure is an LgrepError with a readable message.

Each class has an lgrep.v1.ErrorCode (lgrep_core.rpc.wire) and a gRPC status code (lgrep_core.rpc.grpc_support),
so an error raised in a server reaches the client as the same class with the same message.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConfigError",
    "ContractMismatchError",
    "DeadlineExceededError",
    "EmbeddingError",
    "IndexBusyError",
    "IndexMismatchError",
    "IndexingError",
    "InvalidRequestError",
    "LgrepError",
    "NotFoundError",
    "ProviderUnavailableError",
    "SchemaVersionMismatchError",
    "SearchError",
    "ServerUnavailableError",
    "StorageError",
]


class LgrepError(Exception):
    """Base of every error lgrep raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(LgrepError):
    """A setting is invalid; the message names the key and the file (or variable) it came from."""


class StorageError(LgrepError):
    """The index on disk cannot be opened or written."""


class SchemaVersionMismatchError(StorageError):
    """The index was written by an incompatible version of lgrep."""


class IndexMismatchError(StorageError):
    """The index was built with another provider/model/dimension/chunker than the configuration asks for."""


class IndexBusyError(StorageError):
    """Another process holds the project's write lock."""


class EmbeddingError(LgrepError):
    """The embedding provider failed."""


class ProviderUnavailableError(EmbeddingError):
    """The embedding provider cannot be reached or loaded."""


class IndexingError(LgrepError):
    """Indexing failed."""


class SearchError(LgrepError):
    """A search failed."""


class NotFoundError(LgrepError):
    """A project, index, version or file does not exist."""


class InvalidRequestError(LgrepError):
    """The request itself is malformed."""


class ServerUnavailableError(LgrepError):
    """The lgrep server cannot be reached: not running, another socket or port, or shutting down."""


class DeadlineExceededError(LgrepError):
    """A call to the lgrep server did not finish within its deadline."""


class AuthenticationError(LgrepError):
    """A call over TCP came without the server's bearer token, or with another one."""


class ContractMismatchError(LgrepError):
    """Client and server were built with different revisions of the lgrep.v1 contract."""
