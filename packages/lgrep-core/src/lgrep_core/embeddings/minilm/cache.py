"""The ONNX graphs of all-MiniLM-L6-v2, built once per cache dir and loaded from it afterwards.

The first use of a cache dir writes the float32 graph (graph.py) and, for int8, quantizes a
prepared copy (quantize.py); later processes only load the cached files. A cached graph's name
carries a key of everything that shapes it (this package's code, onnxruntime's version, the
weights), so a change to any of them builds anew. Builds hold a lock, write atomically, and keep
large tensors in a data file beside the graph that onnxruntime maps rather than copies.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

import onnxruntime as ort

from lgrep_core.domain.errors import ProviderUnavailableError
from lgrep_core.embeddings.minilm import graph as _graph_module
from lgrep_core.embeddings.minilm import quantize as _quantize_module
from lgrep_core.embeddings.minilm.files import (
    INSTALL_HINT,
    MODEL_NAME,
    MODEL_SUBDIR,
    WEIGHTS_DISTRIBUTION,
    Variant,
)
from lgrep_core.embeddings.minilm.graph import build_graph
from lgrep_core.embeddings.minilm.quantize import calibrate, calibration_session, quantize, smoothing_scales

if TYPE_CHECKING:
    import onnx

__all__ = ["ensure_models"]

logger = logging.getLogger(__name__)

# Bump when the graph changes in a way the modules' bytes do not show (they are hashed too).
_GRAPH_FORMAT: Final = 2  # 2: large tensors in a mapped data file beside the graph
_STALE_BUILD_S: Final = 3600.0
# Tensors of at least this size are stored beside the graph and mapped (`_publish`): the embedding
# tables; weight matrices are smaller and onnxruntime repacks them into its own memory anyway.
_MAPPED_TENSOR_BYTES: Final = 4 << 20
_MAP_ALIGNMENT: Final = 64 << 10  # onnxruntime maps data at offsets aligned to the allocation granularity
# The modules whose code shapes a graph: their bytes are part of the cache key.
_SHAPING: Final = (_graph_module, _quantize_module)


def _cache_key(weights: Path) -> str:
    """Changes whenever the graph this module would build changes."""
    digest = hashlib.sha256()
    digest.update(f"format={_GRAPH_FORMAT};onnxruntime={ort.__version__};".encode())
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        digest.update(importlib.metadata.version(WEIGHTS_DISTRIBUTION).encode())
    digest.update(str((weights / "model.safetensors").stat().st_size).encode())
    for source in (*(module.__file__ for module in _SHAPING), __file__):
        if source is None:  # no source file (zipapp): the format number keys the cache
            continue
        with contextlib.suppress(OSError):
            digest.update(Path(source).read_bytes())
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
        import onnxruntime.quantization  # noqa: F401  (checked here, used by quantize())
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
        graph, matmul_inputs = build_graph(weights, smoothing=None)
        del weights
        fp32_path = _model_path(model_dir, key, "fp32")
        if not _complete(fp32_path):
            onnx.save_model(graph, str(work / "fp32.onnx"))
            _publish(onnx.load(str(work / "fp32.onnx")), work, fp32_path)
        if variant == "int8":
            session = calibration_session(graph, matmul_inputs)
            del graph
            maxima = calibrate(session, matmul_inputs, weights_dir)
            del session
            weights = load_file(safetensors)
            prequant, _ = build_graph(weights, smoothing=smoothing_scales(weights, maxima))
            del weights
            onnx.save_model(prequant, str(work / "prequant.onnx"))
            del prequant
            quantize(work / "prequant.onnx", work / "int8.onnx")
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
