import numpy as np
import pytest

from cgr.errors import ConfigError
from cgr.retrieval.index import FaissIndex


def unit_vectors(n, dim=32, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype("float32")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_each_kind_finds_the_vector_itself_first(kind):
    vectors = unit_vectors(400)
    index = FaissIndex(vectors, kind=kind, nlist=8, nprobe=8, use_gpu=False)
    scores, positions = index.search(vectors[:20], 3)
    assert positions.shape == (20, 3)
    assert (positions[:, 0] == np.arange(20)).mean() >= 0.95
    assert np.allclose(scores[:, 0][positions[:, 0] == np.arange(20)], 1.0, atol=1e-4)


def test_flat_scores_are_exact_inner_products():
    vectors = unit_vectors(50)
    queries = unit_vectors(4, seed=1)
    scores, positions = FaissIndex(vectors, use_gpu=False).search(queries, 5)
    exact = queries @ vectors.T
    assert np.allclose(scores, np.take_along_axis(exact, positions, 1), atol=1e-5)
    assert (positions[:, 0] == exact.argmax(1)).all()


def test_k_larger_than_corpus_is_clipped():
    scores, positions = FaissIndex(unit_vectors(3), use_gpu=False).search(
        unit_vectors(2, seed=2), 10
    )
    assert positions.shape == (2, 3)


def test_empty_corpus_and_unknown_kind_are_config_errors():
    with pytest.raises(ConfigError, match="empty corpus"):
        FaissIndex(np.zeros((0, 8), dtype="float32"))
    with pytest.raises(ConfigError, match="flat, ivf or hnsw"):
        FaissIndex(unit_vectors(5), kind="lsh")
