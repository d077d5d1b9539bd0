"""The local MiniLM provider against sentence-transformers' own output.

data/minilm-l6-v2-reference.json was computed by us with sentence-transformers 6.2 on torch (CPU) from
the same safetensors; its input_ids lists are cut to 24 entries, n_tokens has the full count.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from lgrep_core.domain.errors import EmbeddingError, ProviderUnavailableError
from lgrep_core.embeddings import local
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.embeddings.local import LocalMiniLMProvider
from lgrep_core.embeddings.minilm import cache as model_cache
from lgrep_core.embeddings.minilm import files as model_files

REFERENCE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "minilm-l6-v2-reference.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = REFERENCE["cases"]
TEXTS: list[str] = [case["text"] for case in CASES]


def reference_vectors() -> npt.NDArray[np.float32]:
    vectors = np.asarray([case["embedding"] for case in CASES], dtype=np.float32)
    # stored rounded to 7 decimals, so renormalise before taking cosines
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cosines(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache") / "models"


@pytest.fixture(scope="module")
def int8(cache_dir: Path) -> LocalMiniLMProvider:
    return LocalMiniLMProvider(cache_dir)


@pytest.fixture(scope="module")
def fp32(cache_dir: Path) -> LocalMiniLMProvider:
    return LocalMiniLMProvider(cache_dir, quantized=False)


# --- without the model -------------------------------------------------------------------------


def test_construction_is_cheap_and_satisfies_the_protocol(tmp_path: Path) -> None:
    provider = LocalMiniLMProvider(tmp_path / "models")
    assert isinstance(provider, EmbeddingProvider)
    assert (provider.provider, provider.model, provider.dimension) == ("local", "all-MiniLM-L6-v2", 384)
    assert provider.variant == "int8"
    assert LocalMiniLMProvider(tmp_path / "models", quantized=False).variant == "fp32"
    assert provider.max_tokens == 256
    assert not (tmp_path / "models").exists()


def test_empty_input_needs_no_model(tmp_path: Path) -> None:
    provider = LocalMiniLMProvider(tmp_path / "models")
    vectors = provider.embed_documents([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32
    assert provider.count_tokens([]) == []
    assert not (tmp_path / "models").exists()


def test_a_bare_string_is_refused(tmp_path: Path) -> None:
    provider = LocalMiniLMProvider(tmp_path)
    with pytest.raises(TypeError):
        provider.embed_documents("one text")
    with pytest.raises(TypeError):
        provider.count_tokens("one text")


@pytest.mark.parametrize("kwargs", [{"max_tokens": 1}, {"max_tokens": 513}, {"batch_tokens": 0}, {"threads": 0}])
def test_invalid_arguments(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LocalMiniLMProvider(tmp_path, **kwargs)


def test_missing_weights_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "_WEIGHTS_PACKAGE", "lgrep_test_no_such_weights_package")
    with pytest.raises(ProviderUnavailableError, match="weights are not installed"):
        LocalMiniLMProvider(tmp_path).embed_query("x")


def test_graph_build_failure_is_a_provider_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("no such tensor")

    monkeypatch.setattr(model_cache, "build_graph", broken)
    with pytest.raises(ProviderUnavailableError, match=r"cannot build .*no such tensor"):
        LocalMiniLMProvider(tmp_path).embed_query("x")
    leftovers = [p.name for p in (tmp_path / "minilm-l6-v2").iterdir() if p.name != ".build.lock"]
    assert leftovers == []


def test_cache_key_follows_the_graph_format(monkeypatch: pytest.MonkeyPatch) -> None:
    weights = model_files.weights_dir()
    before = model_cache._cache_key(weights)
    assert before == model_cache._cache_key(weights)
    monkeypatch.setattr(model_cache, "_GRAPH_FORMAT", model_cache._GRAPH_FORMAT + 1)
    assert model_cache._cache_key(weights) != before


def _check_plan(lengths: list[int], batch_tokens: int) -> list[list[int]]:
    batches = local._plan_batches(lengths, batch_tokens)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) == 1 or len(batch) * width <= batch_tokens
    return batches


def test_batches_fill_the_token_budget() -> None:
    assert [len(b) for b in _check_plan([256] * 20, 2048)] == [8, 8, 4]
    assert [len(b) for b in _check_plan([64] * 40, 2048)] == [32, 8]


def test_batches_are_sorted_and_keep_similar_lengths_together() -> None:
    lengths = [40, 2, 256, 3, 38, 2, 250, 7]
    batches = _check_plan(lengths, 2048)
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(lengths)
    assert [[lengths[i] for i in b] for b in batches] == [[2, 2, 3], [7], [38, 40], [250, 256]]


def test_a_text_longer_than_the_budget_gets_a_batch_of_its_own() -> None:
    assert _check_plan([300, 5, 300], 256) == [[1], [0], [2]]


# --- with the model ----------------------------------------------------------------------------


@pytest.mark.model
def test_tokenizer_matches_the_reference(int8: LocalMiniLMProvider) -> None:
    tokenizer = model_files.load_tokenizer(model_files.weights_dir(), int8.max_tokens)
    for case, encoding in zip(CASES, tokenizer.encode_batch(TEXTS), strict=True):
        assert len(encoding.ids) == case["n_tokens"], case["text"][:40]
        assert encoding.ids[: len(case["input_ids"])] == case["input_ids"], case["text"][:40]
        assert encoding.ids[-1] == 102  # [SEP] survives truncation


@pytest.mark.model
def test_count_tokens_counts_before_truncation(int8: LocalMiniLMProvider) -> None:
    counts = int8.count_tokens(TEXTS)
    for case, count in zip(CASES, counts, strict=True):
        if case["n_tokens"] < int8.max_tokens:
            assert count == case["n_tokens"]
        else:
            assert count > int8.max_tokens


@pytest.mark.model
def test_fp32_matches_sentence_transformers(fp32: LocalMiniLMProvider) -> None:
    vectors = fp32.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = cosines(vectors, reference_vectors())
    assert cos.min() >= 0.9999, cos


@pytest.mark.model
def test_int8_stays_close_to_sentence_transformers(int8: LocalMiniLMProvider) -> None:
    vectors = int8.embed_documents(TEXTS)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = cosines(vectors, reference_vectors())
    assert cos.min() >= 0.99, cos
    assert cos.mean() >= 0.995, cos


@pytest.mark.model
def test_int8_queries_one_at_a_time(int8: LocalMiniLMProvider) -> None:
    vectors = np.stack([int8.embed_query(text) for text in TEXTS])
    assert cosines(vectors, reference_vectors()).min() >= 0.99


@pytest.mark.model
def test_int8_queries_together_are_each_what_it_is_alone(int8: LocalMiniLMProvider) -> None:
    """A task question's windows are embedded in one call (over the threads): each row equals the
    query embedded alone, exactly."""
    together = int8.embed_queries(TEXTS)
    np.testing.assert_array_equal(together, np.stack([int8.embed_query(text) for text in TEXTS]))


@pytest.mark.model
def test_output_order_is_the_input_order(fp32: LocalMiniLMProvider) -> None:
    order = np.random.default_rng(7).permutation(len(TEXTS))
    shuffled = fp32.embed_documents([TEXTS[i] for i in order])
    np.testing.assert_allclose(shuffled, fp32.embed_documents(TEXTS)[order], atol=1e-5)


@pytest.mark.model
def test_an_int8_vector_depends_on_its_text_alone(cache_dir: Path) -> None:
    """One activation range per run: batched, a text's vector moved with its neighbours (cosine
    ~0.996), so a team store's vectors and a member's own build of the same chunk disagreed."""
    provider = LocalMiniLMProvider(cache_dir, threads=2)
    target = "class LRUCache:\n    def evict(self):\n        self.items.popitem(last=False)\n"
    alone = provider.embed_documents([target])[0]
    crowd = [f"def f{i}(x):\n    return x * {i}\n" * (1 + i % 5) for i in range(12)]
    for texts in ([target, *crowd], [*crowd[:3], target], [*crowd[::-1], target, "x"]):
        vectors = provider.embed_documents(texts)
        assert np.array_equal(vectors[texts.index(target)], alone)


@pytest.mark.model
def test_batches_run_at_once_give_the_vectors_of_one_at_a_time(cache_dir: Path) -> None:
    texts = [*TEXTS, *(f"{text} {i}" for i, text in enumerate(TEXTS))]
    one = LocalMiniLMProvider(cache_dir, threads=1, batch_tokens=256)
    several = LocalMiniLMProvider(cache_dir, threads=3, batch_tokens=256)
    assert len(local._plan_batches([len(t) for t in one._load().tokenizer.encode_batch(texts)], 256)) > 3
    np.testing.assert_allclose(several.embed_documents(texts), one.embed_documents(texts), atol=1e-6)


@pytest.mark.model
def test_a_failed_batch_among_several_fails_the_call(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = LocalMiniLMProvider(cache_dir, threads=2, batch_tokens=256)
    run = local._Runtime.run
    calls: list[int] = []
    lock = threading.Lock()

    def flaky(self: Any, input_ids: Any, mask: Any) -> Any:
        with lock:
            calls.append(len(calls))
            third = len(calls) == 3
        if third:
            raise EmbeddingError("inference failed on a batch")
        return run(self, input_ids, mask)

    monkeypatch.setattr(local._Runtime, "run", flaky)
    with pytest.raises(EmbeddingError, match="inference failed"):
        provider.embed_documents([*TEXTS, *TEXTS[::-1]])


@pytest.mark.model
def test_query_is_a_single_document(fp32: LocalMiniLMProvider) -> None:
    query = fp32.embed_query("retry a failed request")
    assert query.shape == (384,)
    assert query.dtype == np.float32
    np.testing.assert_allclose(query, fp32.embed_documents(["retry a failed request"])[0], atol=1e-6)


@pytest.mark.model
def test_empty_and_long_texts(fp32: LocalMiniLMProvider) -> None:
    reference = reference_vectors()
    empty = TEXTS.index("")
    assert float(fp32.embed_query("") @ reference[empty]) >= 0.9999
    long_case = next(i for i, case in enumerate(CASES) if case["n_tokens"] == 256)
    longer = TEXTS[long_case] + " tail" * 500  # past the cut: must not change the vector
    assert float(fp32.embed_query(longer) @ reference[long_case]) >= 0.9999


@pytest.mark.model
def test_cache_holds_both_graphs_written_once(
    int8: LocalMiniLMProvider, fp32: LocalMiniLMProvider, cache_dir: Path
) -> None:
    int8.embed_query("x")
    fp32.embed_query("x")
    model_dir = cache_dir / "minilm-l6-v2"
    files = sorted(p.name for p in model_dir.iterdir() if p.name != ".build.lock")
    key = model_cache._cache_key(model_files.weights_dir())
    graphs = [f"minilm-l6-v2-{key}-fp32.onnx", f"minilm-l6-v2-{key}-int8.onnx"]
    assert files == [graphs[0], f"{graphs[0]}.data", graphs[1], f"{graphs[1]}.data"]
    mtimes = {name: (model_dir / name).stat().st_mtime_ns for name in files}

    again = LocalMiniLMProvider(cache_dir)
    again.embed_query("x")
    assert {name: (model_dir / name).stat().st_mtime_ns for name in files} == mtimes

    graph = onnx.load(str(model_dir / graphs[0]))
    onnx.checker.check_model(graph)
    assert [o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert [i.name for i in graph.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in graph.graph.output] == ["last_hidden_state"]
    for tensor in graph.graph.input:
        assert tensor.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in tensor.type.tensor_type.shape.dim] == ["batch", "sequence"]


@pytest.mark.model
def test_concurrent_first_use_loads_once(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = local._Runtime.open

    def counting_open(*args: Any, **kwargs: Any) -> local._Runtime:
        opened.append(threading.current_thread().name)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(local._Runtime, "open", counting_open)
    provider = LocalMiniLMProvider(cache_dir)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(provider.embed_documents, [TEXTS[:5]] * 4))
    assert len(opened) == 1
    for result in results[1:]:
        np.testing.assert_allclose(result, results[0], atol=1e-6)


@pytest.mark.model
def test_loaded_count_follows_the_inference_session(cache_dir: Path) -> None:
    # What a server reports as `models_loaded`: sessions open now, not providers configured.
    before = local.loaded_count()
    provider = LocalMiniLMProvider(cache_dir)
    assert local.loaded_count() == before
    provider.embed_query("load the model")
    assert local.loaded_count() == before + 1
    provider.embed_query("a second query loads nothing more")
    assert local.loaded_count() == before + 1
    provider.release_memory()
    assert local.loaded_count() == before


@pytest.mark.model
@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_the_mapped_tables_compute_what_one_file_does(
    int8: LocalMiniLMProvider, fp32: LocalMiniLMProvider, cache_dir: Path, tmp_path: Path, variant: str
) -> None:
    import onnxruntime as ort

    (int8 if variant == "int8" else fp32).embed_query("x")
    key = model_cache._cache_key(model_files.weights_dir())
    path = cache_dir / "minilm-l6-v2" / f"minilm-l6-v2-{key}-{variant}.onnx"
    stored = onnx.load(str(path), load_external_data=False)
    mapped = {t.name: {e.key: e.value for e in t.external_data} for t in stored.graph.initializer if t.external_data}
    assert "word_table" in mapped  # the 47 MB table is read from the data file, not the graph
    assert all(int(e["offset"]) % (64 << 10) == 0 for e in mapped.values())

    whole = onnx.load(str(path))  # the tables read in, saved as one file
    onnx.save_model(whole, str(tmp_path / "whole.onnx"))
    assert not any(t.external_data for t in onnx.load(str(tmp_path / "whole.onnx")).graph.initializer)
    ids = np.asarray([[101, 2054, 2003, 1037, 19204, 102, 0, 0], [101, 7592, 2088, 102, 0, 0, 0, 0]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": (ids > 0).astype(np.int64)}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    outputs = [
        ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        for p in (path, tmp_path / "whole.onnx")
    ]
    assert np.array_equal(outputs[0], outputs[1])


@pytest.mark.model
def test_a_graph_whose_data_file_is_gone_is_built_again(tmp_path: Path) -> None:
    LocalMiniLMProvider(tmp_path / "models").embed_query("x")
    key = model_cache._cache_key(model_files.weights_dir())
    data = tmp_path / "models" / "minilm-l6-v2" / f"minilm-l6-v2-{key}-int8.onnx.data"
    first = LocalMiniLMProvider(tmp_path / "models").embed_query("where is the session opened")
    data.unlink()
    again = LocalMiniLMProvider(tmp_path / "models").embed_query("where is the session opened")
    assert data.is_file() and np.array_equal(first, again)
