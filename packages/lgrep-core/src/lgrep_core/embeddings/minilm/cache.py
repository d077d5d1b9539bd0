"""The ONNX graphs of all-MiniLM-L6-v2, built once per cache dir and loaded from it afterwards.

The first use of a cache dir writes the float32 graph (graph.py) and, for int8, quantizes a
prepared copy (quantize.py); later processes only load the cached files. A cached graph's name
carries a key of everything that shapes it (this package's code, onnxruntime's version, the
weights), so a change to any of them builds anew. Builds hold a lock, write atomically, and keep
large tensors in a data file beside the graph that onnxruntime maps rather than copies. A build runs
in the process that asked for the model (an indexer, under its memory ceiling), so it holds as
little at a time as it can (`_build`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import logging
import math
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

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
from lgrep_core.embeddings.minilm.quantize import (
    calibrate,
    calibration_session,
    quantize,
    smoothing_scales,
    write_calibration_graph,
)
from lgrep_core.runtime.memory import release_free_heap

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import onnx

__all__ = ["ensure_models"]

logger = logging.getLogger(__name__)

# Bump when the graph changes in a way the modules' bytes do not show (they are hashed too).
_GRAPH_FORMAT: Final = 2  # 2: large tensors in a mapped data file beside the graph
_STALE_BUILD_S: Final = 3600.0
# Tensors of at least this size are stored beside the graph and mapped (`_DataFile`): the embedding
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
        import onnxruntime.quantization  # noqa: F401  (checked here, used by quantize())
        from onnx import save_model
        from safetensors import safe_open
    except ImportError as exc:  # imported here: ~0.5 s and 30 MB that only a first build needs
        raise ProviderUnavailableError(
            f"building the {MODEL_NAME} graph needs onnx and safetensors: {INSTALL_HINT}"
        ) from exc

    logger.info("building the %s ONNX graph (%s) in %s, once per cache dir", MODEL_NAME, variant, model_dir)
    started = time.perf_counter()
    safetensors = str(weights_dir / "model.safetensors")
    fp32_path = _model_path(model_dir, key, "fp32")
    publish_fp32 = not _complete(fp32_path)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=model_dir))
    # The first build runs in the process that indexes, under its memory ceiling (index.memory_budget_mb,
    # ADR 0028), and the weights, a graph and its serialized bytes are ~90 MB apiece. So the weights
    # are read a tensor at a time, the tables go to the data file as the graph is written (not into
    # it), onnxruntime reads the graphs from their files, the quantizer sees the tables as stand-ins,
    # and the heap is handed back between the steps: peak RSS 531 -> 258 MB (docs/benchmarks.md).
    try:
        with safe_open(safetensors, framework="numpy") as handle, _DataFile(work, fp32_path.name) as data:
            graph, matmul_inputs = build_graph(_Weights(handle), smoothing=None, store_data=data)
        if publish_fp32:
            save_model(graph, str(work / fp32_path.name))
        if variant == "int8":  # beside the fp32 graph, whose data file it reads
            write_calibration_graph(graph, matmul_inputs, work / "calibration.onnx")
        del graph
        release_free_heap()
        maxima = None
        if variant == "int8":
            maxima = calibrate(calibration_session(work / "calibration.onnx"), matmul_inputs, weights_dir)
            release_free_heap()  # the session is gone
        if publish_fp32:
            _move_into_place(work, fp32_path)
        if maxima is not None:
            _build_int8(safetensors, maxima, work, _model_path(model_dir, key, "int8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        release_free_heap()
    logger.info("built the %s graph (%s) in %.1f s", MODEL_NAME, variant, time.perf_counter() - started)


def _build_int8(safetensors: str, maxima: Mapping[str, npt.NDArray[np.float32]], work: Path, target: Path) -> None:
    """Quantize the graph prepared with the calibration's SmoothQuant scales, and publish it as `target`."""
    from onnx import save_model
    from safetensors import safe_open

    with safe_open(safetensors, framework="numpy") as handle, _DataFile(work, target.name) as data:
        weights = _Weights(handle)
        prequant, _ = build_graph(weights, smoothing=smoothing_scales(weights, maxima), store_data=data)
    tables = _stand_in_tables(prequant)
    save_model(prequant, str(work / "prequant.onnx"))
    del prequant
    release_free_heap()
    quantize(work / "prequant.onnx", work / "int8.onnx")
    release_free_heap()
    _restore_tables(work / "int8.onnx", tables, work / target.name)
    _move_into_place(work, target)


class _Weights(Mapping[str, "npt.NDArray[Any]"]):
    """The installed weights, each tensor read from the file when asked for: the graph writer holds
    one or two at a time instead of all 90 MB."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self._handle.get_tensor(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._handle.keys())

    def __len__(self) -> int:
        return len(self._handle.keys())


class _DataFile:
    """The data file beside a graph being written (`build_graph`'s `store_data`): tensors of at least
    `_MAPPED_TENSOR_BYTES` go there rather than into the graph, each at an offset that onnxruntime can
    map rather than copy. The 47 MB word-embedding table is then read from the page cache, and only
    the rows of the words a process has embedded stay resident (a daemon that only answers queries
    touches a few hundred of its 30,522 rows). Its numbers are the same: the graph computes exactly
    what one file would (tests/embeddings/test_local.py)."""

    def __init__(self, work: Path, graph_name: str) -> None:
        self._name = f"{graph_name}.data"
        self._file = (work / self._name).open("wb")

    def __enter__(self) -> _DataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def __call__(self, tensor: onnx.TensorProto, array: npt.NDArray[Any]) -> bool:
        from onnx import TensorProto

        if array.nbytes < _MAPPED_TENSOR_BYTES:
            return False
        end = self._file.tell()
        offset = -(-end // _MAP_ALIGNMENT) * _MAP_ALIGNMENT
        self._file.write(b"\0" * (offset - end))
        self._file.write(array.data)  # C-contiguous and little-endian (the graph writer's arrays are)
        # What onnx.external_data_helper.set_external_data writes (it wants the values in the tensor).
        for entry_key, value in (("location", self._name), ("offset", offset), ("length", array.nbytes)):
            entry = tensor.external_data.add()
            entry.key = entry_key
            entry.value = str(value)
        tensor.data_location = TensorProto.EXTERNAL
        return True


def _stand_in_tables(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """Replace each tensor whose values are in a data file with a stand-in of one row of zeros, and
    return the tensors as they were.

    For the quantizer: it holds a graph's tensors two and three times over (its shape inference saves
    and loads a copy), and the tables are not among what it quantizes (only MatMul weights), nor does
    their length count in a shape it infers (a Gather's output is as wide as the table's rows,
    whatever their number). With the 47 MB word table a stand-in, quantizing peaks ~150 MB lower."""
    from onnx import TensorProto, helper

    tables: dict[str, onnx.TensorProto] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        table = TensorProto()
        table.CopyFrom(tensor)
        tables[tensor.name] = table
        row = [1, *tensor.dims[1:]]
        tensor.ClearField("external_data")
        tensor.ClearField("data_location")
        del tensor.dims[:]
        tensor.dims.extend(row)
        tensor.raw_data = bytes(math.prod(row) * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize)
    return tables


def _restore_tables(quantized: Path, tables: Mapping[str, onnx.TensorProto], target: Path) -> None:
    """Write the `quantized` graph as `target` with the tensors `_stand_in_tables` stood in for put
    back (the quantizer keeps every initializer it does not quantize as it was, in its place)."""
    import onnx

    model = onnx.load(str(quantized))
    restored = 0
    for tensor in model.graph.initializer:
        table = tables.get(tensor.name)
        if table is not None:
            tensor.CopyFrom(table)
            restored += 1
    if restored != len(tables):
        raise RuntimeError(f"the quantizer dropped {len(tables) - restored} of the graph's tables")
    onnx.save_model(model, str(target))


def _move_into_place(work: Path, target: Path) -> None:
    """Publish the graph `work`/<target.name> and its data file as `target`: the data file first and
    the graph last, each atomically, so `target` existing means both are complete."""
    data_name = f"{target.name}.data"
    (work / data_name).replace(target.parent / data_name)
    (work / target.name).replace(target)  # atomic: readers never see a partial file
