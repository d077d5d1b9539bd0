"""int8 by dynamic quantization (per-channel 8-bit weights, per-tensor uint8 activations computed at
run time), with the counter-measures that keep it close to float32.

MiniLM's hidden states carry a few outlier channels (|x| up to 30 where the median channel peaks
near 1.5), and a per-tensor activation scale sized for them costs the small values their
precision: plain quantization measured cosine 0.96-0.98 to float32 on short texts. Three measured
counter-measures bring the worst case above 0.99:
  - SmoothQuant: divide each MatMul input channel by s and multiply the weight row by s (exact in
    float32), which moves the outliers into the per-channel weight scales. s comes from the
    activation maxima of a fixed calibration set run through the float32 graph at build time.
  - padding rows are zeroed before every quantized MatMul, so they never widen the range;
  - the first FFN output MatMul, whose input has the largest outliers, stays float32.
The provider (`local.py`) adds the last one: texts of very different lengths are not batched together
(one activation range per batch).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from lgrep_core.embeddings.minilm.files import default_threads, load_tokenizer
from lgrep_core.embeddings.minilm.graph import LAYERS, matmul_node

if TYPE_CHECKING:
    import onnx

__all__ = ["calibrate", "calibration_session", "quantize", "smoothing_scales", "write_calibration_graph"]

# SmoothQuant migration strength (0: all difficulty stays in the activations, 1: all in the weights).
# Measured on 120 held-out code windows and the reference set: 0.6 for both kinds of input gave the best
# worst case (0.995 / 0.994); 0.5 and 0.7 were 0.001-0.004 lower, 0.3 on FFN inputs collapsed to 0.68.
_SMOOTH_ALPHA_LN: Final = 0.6  # inputs fed by a LayerNorm (QKV, FFN in)
_SMOOTH_ALPHA_FFN: Final = 0.6  # inputs fed by GELU (FFN out)
# Kept float32 in the int8 graph: its GELU input peaks near 25 in a single channel. Costs ~5% speed,
# lifts the worst code-window cosine from 0.992 to 0.995.
_FLOAT_MATMULS: Final = frozenset({"l0.ffn_out"})

# Fixed calibration inputs for the SmoothQuant statistics. Changing them changes the int8 graph, which
# the module hash in the cache key picks up. None of them is in the test reference set.
_CALIBRATION_TEXTS: Final[tuple[str, ...]] = (
    "",
    "x",
    "parse command line arguments",
    "where is the database connection pool configured",
    "The quick brown fox jumps over the lazy dog while the build server restarts.",
    "def parse_args(argv: list[str]) -> argparse.Namespace:\n"
    "    parser = argparse.ArgumentParser(prog='tool')\n"
    "    parser.add_argument('--verbose', action='store_true')\n"
    "    parser.add_argument('paths', nargs='*', type=Path)\n"
    "    return parser.parse_args(argv)\n",
    "public static void main(String[] args) {\n"
    "    Map<String, Integer> counts = new HashMap<>();\n"
    "    for (String a : args) counts.merge(a, 1, Integer::sum);\n"
    "    System.out.println(counts);\n}\n",
    'fn main() {\n    let v: Vec<i32> = (0..10).filter(|x| x % 2 == 0).collect();\n    println!("{:?}", v);\n}\n',
    "SELECT u.country, count(*) AS n FROM orders o JOIN users u ON u.id = o.user_id "
    "WHERE o.created_at > now() - interval '7 days' GROUP BY u.country ORDER BY n DESC;",
    '<div class="container"><ul>{items.map(i => <li key={i.id}>{i.name}</li>)}</ul></div>',
    "class RateLimiter:\n"
    '    """Token bucket shared by all workers of one process."""\n\n'
    "    def __init__(self, rate: float, burst: int) -> None:\n"
    "        self._rate = rate\n"
    "        self._tokens = float(burst)\n"
    "        self._burst = burst\n"
    "        self._last = time.monotonic()\n"
    "        self._lock = threading.Lock()\n\n"
    "    def acquire(self) -> bool:\n"
    "        with self._lock:\n"
    "            now = time.monotonic()\n"
    "            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)\n"
    "            self._last = now\n"
    "            if self._tokens >= 1:\n"
    "                self._tokens -= 1\n"
    "                return True\n"
    "            return False\n",
    "# Installation\n\nRun `make install`, then start the daemon with `svc start --port 8080`. "
    "Logs go to /var/log/svc.log; set LOG_LEVEL=debug for more detail. Configuration lives in "
    "config.yaml next to the binary and is reloaded on SIGHUP.",
)


def quantize(prequant: Path, target: Path) -> None:
    """Quantize the prepared float32 graph in `prequant` to int8 in `target` (its MatMuls, but those
    kept float32), the quantizer's chatter silenced."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_quantizer():
        quantize_dynamic(
            prequant,
            target,
            op_types_to_quantize=["MatMul"],
            per_channel=True,  # per-tensor weights measured cosine 0.95-0.97 to float32
            # uint8 weights (u8u8 kernels), not int8: on x86 without VNNI (AVX2 only) onnxruntime's u8s8
            # kernel adds pairs of products in int16 (vpmaddubsw), which saturates; int8 weights
            # measured worst cosine 0.978 there (one query at a time) against 0.994 with uint8, at the
            # same speed. On VNNI machines both measured above 0.99.
            weight_type=QuantType.QUInt8,
            nodes_to_exclude=[matmul_node(name) for name in _FLOAT_MATMULS],
        )


class _QuantizerChatter(logging.Filter):
    """Drops the quantizer's per-tensor INFO/DEBUG records and its pre-processing advice.

    onnxruntime.quantization logs on the root logger, tens of lines per build. The advice ("run
    pre-processing") is about symbolic shape inference and fusions for exported graphs; it needs sympy,
    and our graph is already written in the form onnxruntime fuses at load time.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if "onnxruntime" not in record.pathname or "quantization" not in record.pathname:
            return True
        if record.levelno <= logging.INFO:
            return False
        return not record.getMessage().startswith("Please consider to run pre-processing")


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    chatter = _QuantizerChatter()
    root = logging.getLogger()
    root.addFilter(chatter)
    try:
        yield
    finally:
        root.removeFilter(chatter)


def write_calibration_graph(graph: onnx.ModelProto, matmul_inputs: Mapping[str, str], path: Path) -> None:
    """Save the float32 `graph` as `path`, with every weight MatMul's input as an output too."""
    import onnx
    from onnx import TensorProto, helper

    outputs = graph.graph.output
    outputs.extend(helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in matmul_inputs.values())
    try:
        onnx.save_model(graph, str(path))
    finally:
        del outputs[1:]


def calibration_session(path: Path) -> ort.InferenceSession:
    """A session over the calibration graph in `path` (`write_calibration_graph`), read from the file:
    from serialized bytes, onnxruntime would hold them and its own copy of the weights at once."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = default_threads()
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def calibrate(
    session: ort.InferenceSession, matmul_inputs: Mapping[str, str], weights_dir: Path
) -> dict[str, npt.NDArray[np.float32]]:
    """Per channel, the largest |activation| entering each weight MatMul over the calibration texts."""
    names = sorted(matmul_inputs)
    tensors = [matmul_inputs[name] for name in names]
    tokenizer = load_tokenizer(weights_dir, 256)
    maxima = {name: np.zeros(0, dtype=np.float32) for name in names}
    # One text per run: no padding rows in the statistics.
    for encoding in tokenizer.encode_batch(list(_CALIBRATION_TEXTS)):
        ids = np.asarray([encoding.ids], dtype=np.int64)
        values = session.run(tensors, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        for name, value in zip(names, values, strict=True):
            array = np.asarray(value, dtype=np.float32)
            peak = np.abs(array.reshape(-1, array.shape[-1])).max(axis=0)
            maxima[name] = peak if maxima[name].size == 0 else np.maximum(maxima[name], peak)
    return maxima


def smoothing_scales(
    weights: Mapping[str, npt.NDArray[Any]], maxima: Mapping[str, npt.NDArray[np.float32]]
) -> dict[str, npt.NDArray[np.float32]]:
    """SmoothQuant scales s = max|x|^a / max|W|^(1-a) per input channel of the quantized MatMuls."""
    scales: dict[str, npt.NDArray[np.float32]] = {}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        qkv = np.concatenate([weights[f"{p}.attention.self.{part}.weight"] for part in ("query", "key", "value")])
        inputs = {
            f"l{i}.qkv": (qkv, _SMOOTH_ALPHA_LN),
            f"l{i}.ffn_in": (weights[f"{p}.intermediate.dense.weight"], _SMOOTH_ALPHA_LN),
            f"l{i}.ffn_out": (weights[f"{p}.output.dense.weight"], _SMOOTH_ALPHA_FFN),
        }
        for name, (weight, alpha) in inputs.items():
            act = np.maximum(maxima[name], 1e-5)
            # torch layout (out, in): the max over outputs of each input channel
            wmax = np.maximum(np.abs(weight).max(axis=0), 1e-5)
            scales[name] = (act**alpha / wmax ** (1.0 - alpha)).astype(np.float32)
    return scales
