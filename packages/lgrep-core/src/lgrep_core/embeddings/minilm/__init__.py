"""all-MiniLM-L6-v2 on disk, for the local provider (local.py): the installed weights and tokenizer
(files), the encoder written as an ONNX graph (graph), its int8 quantization (quantize), and the
graphs built once per cache dir (cache)."""

from lgrep_core.embeddings.minilm.cache import ensure_models
from lgrep_core.embeddings.minilm.files import (
    INSTALL_HINT,
    MAX_POSITIONS,
    MODEL_NAME,
    MODEL_SUBDIR,
    Variant,
    default_threads,
    load_tokenizer,
    weights_dir,
)

__all__ = [
    "INSTALL_HINT",
    "MAX_POSITIONS",
    "MODEL_NAME",
    "MODEL_SUBDIR",
    "Variant",
    "default_threads",
    "ensure_models",
    "load_tokenizer",
    "weights_dir",
]
