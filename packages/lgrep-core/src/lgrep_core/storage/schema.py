"""The on-disk layout of one project's index: Arrow schemas, table names, metadata and its checks."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from lgrep_core.domain.models import EMBEDDING_TEXT_VERSION
from lgrep_core.storage.engine import pyarrow
from lgrep_core.storage.layout import project_dir

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CHUNKS_TABLE",
    "CHUNK_COLUMNS",
    "SCHEMA_VERSION",
    "VECTORS_TABLE",
    "IndexIdentity",
    "chunks_schema",
    "path_key",
    "project_dir",
    "vectors_schema",
]

# Bump when the tables change shape; an older index then asks for `lgrep index --force`.
SCHEMA_VERSION = 2
"""2: the chunks table gained `refs` (lgrep_core.domain.structure)."""
CHUNKS_TABLE = "chunks"
# Vectors are stored once per distinct embedding key (content-addressed), not per chunk: copies,
# renames and reverted edits reuse them, and the table doubles as the embedding cache.
VECTORS_TABLE = "vectors"


def path_key(path: str) -> str:
    """A hex key for a project-relative path. Every delete and replace filters on it, so no
    user-controlled text ever reaches a predicate (a path like `x' OR 1=1 --` is just bytes here)."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]


# The chunks table's columns, in order; writers hand the store one list per column.
CHUNK_COLUMNS = (
    "id",
    "path",
    "path_key",
    "language",
    "content_type",
    "kind",
    "symbol",
    "scope",
    "signature",
    "start_line",
    "end_line",
    "content",
    "search_text",
    "vec_key",
    "file_hash",
    "refs",
)


def chunks_schema() -> pa.Schema:
    pa = pyarrow()
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("path_key", pa.string(), nullable=False),
            pa.field("language", pa.string()),
            pa.field("content_type", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("symbol", pa.string()),
            pa.field("scope", pa.list_(pa.string())),
            pa.field("signature", pa.string()),
            pa.field("start_line", pa.int32()),
            pa.field("end_line", pa.int32()),
            pa.field("content", pa.string()),
            # text that `content` leaves out (the rest of lines longer than the chunker's cap): searched
            # by BM25, never shown
            pa.field("search_text", pa.string()),
            pa.field("vec_key", pa.string(), nullable=False),
            pa.field("file_hash", pa.string()),
            # what the chunk defines and references, as text (lgrep_core.domain.structure)
            pa.field("refs", pa.string()),
        ]
    )


def vectors_schema(dimension: int) -> pa.Schema:
    pa = pyarrow()
    return pa.schema(
        [
            pa.field("vec_key", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


@dataclass(frozen=True, slots=True)
class IndexIdentity:
    """What an index was built with. Any difference makes its vectors or chunks incomparable."""

    provider: str
    model: str
    dimension: int
    chunker_version: str
    chunking: str  # "max_tokens/overlap_tokens/use_ast"
    schema_version: int = SCHEMA_VERSION
    embedding_text: str = EMBEDDING_TEXT_VERSION  # how a chunk is turned into the text the model reads

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        return (
            f"{self.provider}/{self.model} ({self.dimension} d), chunker {self.chunker_version} "
            f"[{self.chunking}], schema {self.schema_version}, embedding text {self.embedding_text}"
        )
