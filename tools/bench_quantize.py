"""How close the int8 model stays to float32 under each quantizer setting, on this machine's CPU.

    uv run --frozen python tools/bench_quantize.py {base,reduce,u8}

base: int8 weights (before 586ebdd); reduce: int8 weights in 7 bits (`reduce_range`); u8: uint8
weights (what lgrep ships since 586ebdd). Prints the worst and mean cosine to sentence-transformers'
own vectors (the test reference set), batched and one text at a time. Without VNNI, onnxruntime's
u8s8 kernel saturates (docs/benchmarks.md, session 36).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from lgrep_core.embeddings.local import LocalMiniLMProvider
from lgrep_core.embeddings.minilm import cache as model_cache
from lgrep_core.embeddings.minilm import quantize as quantizer
from onnxruntime.quantization import QuantType, quantize_dynamic

REFERENCE = (
    Path(__file__).resolve().parents[1] / "packages/lgrep-core/tests/embeddings/data/minilm-l6-v2-reference.json"
)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "u8"
    if mode not in ("base", "reduce", "u8"):
        raise SystemExit(__doc__)
    cases = json.loads(REFERENCE.read_text(encoding="utf-8"))["cases"]
    texts = [c["text"] for c in cases]
    ref = np.asarray([c["embedding"] for c in cases], dtype=np.float32)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)

    def quantize(prequant: Path, target: Path) -> None:
        options: dict[str, Any] = {
            "op_types_to_quantize": ["MatMul"],
            "per_channel": True,
            "weight_type": QuantType.QUInt8 if mode == "u8" else QuantType.QInt8,
            "nodes_to_exclude": [quantizer.matmul_node(n) for n in quantizer._FLOAT_MATMULS],  # pyright: ignore[reportPrivateUsage]
            "reduce_range": mode == "reduce",
        }
        with quantizer._quiet_quantizer():  # pyright: ignore[reportPrivateUsage]
            quantize_dynamic(prequant, target, **options)

    model_cache.quantize = quantize  # the cache builds its int8 graph with this quantizer
    provider = LocalMiniLMProvider(Path(tempfile.mkdtemp(prefix="lgquant-")))
    batched = provider.embed_documents(texts)
    alone = np.stack([provider.embed_query(t) for t in texts])
    for name, vectors in (("batched", batched), ("one at a time", alone)):
        cos = (vectors * ref).sum(1) / np.linalg.norm(vectors, axis=1)
        print(f"{mode} {name}: worst {cos.min():.4f}, mean {cos.mean():.4f}")


if __name__ == "__main__":
    main()
