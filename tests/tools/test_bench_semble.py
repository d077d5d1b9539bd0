"""The semble comparison tool (tools/bench_semble.py): the pieces of the Model2Vec folder it builds for
semble from lgrep's MiniLM (the tensor file, the PCA, the token weights), on small hand-made arrays."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.tools.conftest import load_tool


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("bench_semble")


@pytest.mark.parametrize("shape", [(3, 4), (5, 1), (7, 3)])
def test_the_tensor_file_reads_back_with_safetensors(tool: ModuleType, tmp_path: Path, shape: tuple[int, int]) -> None:
    array = np.arange(shape[0] * shape[1], dtype=np.float32).reshape(shape) / 7
    path = tmp_path / "model.safetensors"
    tool.write_safetensors(path, "embeddings", array)
    loaded = load_file(str(path))
    assert list(loaded) == ["embeddings"]
    assert loaded["embeddings"].dtype == np.float32
    np.testing.assert_array_equal(loaded["embeddings"], array)


def test_pca_keeps_the_largest_directions_first_and_signs_them(tool: ModuleType) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 3)) * np.array([10.0, 1.0, 0.1])
    reduced = tool.pca(x, 2)
    assert reduced.shape == (200, 2)
    variances = reduced.var(axis=0)
    assert variances[0] > 50 * variances[1] > 0
    for column in reduced.T:  # Model2Vec's rule: each component's largest projection is positive
        assert column[np.argmax(np.abs(column))] > 0


def test_token_weights_follow_zipf_and_sif(tool: ModuleType) -> None:
    weights = tool.sif_weights(1000, coefficient=1e-4)
    ranks = np.arange(2, 1002)
    proba = (1 / ranks) / (1 / ranks).sum()
    np.testing.assert_allclose(weights, 1e-4 / (1e-4 + proba))
    assert np.all(np.diff(weights) > 0)  # frequent (low-rank) tokens weigh least
    assert weights.max() < 1
