"""The one error tree of lgrep. Every expected failure is an LgrepError with a readable message."""

from __future__ import annotations

__all__ = [
    "ConfigError",
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
