import numpy as np
import pytest

from cgr.errors import ConfigError
from cgr.retrieval.index import FaissIndex, IndexSpec


def unit_vectors(n, dim=32, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype("float32")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "ivf", "ivfpq", "hnsw"])
def test_each_kind_finds_the_vector_itself_first(kind):
    vectors = unit_vectors(400)
    index = FaissIndex(vectors, kind=kind, nlist=8, nprobe=8, pq_m=8, use_gpu=False)
    scores, positions = index.search(vectors[:20], 3)
    assert positions.shape == (20, 3)
    assert (positions[:, 0] == np.arange(20)).mean() >= 0.95
    # PQ stores compressed codes: its scores approximate the inner products
    atol = 0.15 if kind == "ivfpq" else 1e-4
    assert np.allclose(scores[:, 0][positions[:, 0] == np.arange(20)], 1.0, atol=atol)


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
    with pytest.raises(ConfigError, match="must be one of"):
        FaissIndex(unit_vectors(5), kind="lsh")


def _never():
    raise AssertionError("vectors loaded although the saved index should have been used")


@pytest.mark.parametrize("kind", ["flat", "ivf", "ivfpq", "hnsw"])
def test_an_index_is_built_once_then_loaded_with_the_same_results(tmp_path, kind):
    vectors, queries = unit_vectors(600), unit_vectors(10, seed=3)
    spec = IndexSpec(kind, nlist=8, nprobe=4, pq_m=8)
    built = FaissIndex.load_or_build(tmp_path, lambda: vectors, spec, use_gpu=False)
    loaded = FaissIndex.load_or_build(tmp_path, _never, spec, use_gpu=False)
    assert [p.name for p in tmp_path.glob("*.faiss")] == [f"index-{kind}-{spec.key()}.faiss"]
    for a, b in zip(built.search(queries, 5), loaded.search(queries, 5), strict=True):
        assert np.array_equal(a, b)
    # nprobe is a search setting: another value reads the same file
    wider = FaissIndex.load_or_build(
        tmp_path, _never, IndexSpec(kind, nlist=8, nprobe=8, pq_m=8), use_gpu=False
    )
    assert wider.size == 600


def test_a_truncated_or_mismatched_index_file_is_rebuilt_not_used(tmp_path, caplog):
    vectors = unit_vectors(300)
    spec = IndexSpec("ivf", nlist=4)
    FaissIndex.load_or_build(tmp_path, lambda: vectors, spec, use_gpu=False)
    path = next(tmp_path.glob("*.faiss"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    calls = []
    rebuilt = FaissIndex.load_or_build(
        tmp_path, lambda: calls.append(1) or vectors, spec, use_gpu=False
    )
    assert calls == [1] and rebuilt.size == 300 and "rebuilding" in caplog.text
    assert path.read_bytes() == data  # the rebuilt file replaced the broken one

    # same size, other vectors (a description from another build): FaissIndex's count check
    meta = path.with_suffix(".json")
    meta.write_text(meta.read_text().replace('"ntotal": 300', '"ntotal": 301'))
    calls.clear()
    FaissIndex.load_or_build(tmp_path, lambda: calls.append(1) or vectors, spec, use_gpu=False)
    assert calls == [1]

    # changed in place at the same size (a bad disk, a crash mid-write): the checksum catches it
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    calls.clear()
    FaissIndex.load_or_build(tmp_path, lambda: calls.append(1) or vectors, spec, use_gpu=False)
    assert calls == [1] and "does not match the checksum" in caplog.text


SAVE_MANY = """
import sys
import numpy as np
from cgr.retrieval.index import IndexSpec, _save, build_cpu_index
spec = IndexSpec("flat")
index = build_cpu_index(np.ones((2000, 64), dtype="float32"), spec)
for _ in range(40):
    _save(__import__("pathlib").Path(sys.argv[1]), index, spec)
"""


def test_two_processes_saving_the_same_index_both_succeed(tmp_path):
    """DDP ranks build the same index beside each other; each writes its own partial file."""
    import subprocess
    import sys

    name = f"index-flat-{IndexSpec('flat').key()}"
    path = tmp_path / f"{name}.faiss"
    procs = [subprocess.Popen([sys.executable, "-c", SAVE_MANY, str(path)], stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]  # fmt: skip
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert FaissIndex.load_or_build(tmp_path, _never, IndexSpec("flat"), use_gpu=False).size == 2000
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.faiss", f"{name}.json"]


def clustered_vectors(n=3000, dim=32, seed=4):
    """Near neighbours that PQ's compressed distances reorder: tight groups of 10."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n // 10, dim)).astype("float32")
    v = np.repeat(centres, 10, axis=0) + 0.15 * rng.normal(size=(n, dim)).astype("float32")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_rerank_gives_the_exact_top_k_from_vectors_on_disk(tmp_path):
    """IVF-PQ alone reorders close neighbours; re-scoring its 50 best candidates with the float
    vectors (memory-mapped chunk files, as in the embedding cache) gives exact scores and,
    here, the exact top 10."""
    from cgr.retrieval.index import ExactVectors

    vectors, queries = clustered_vectors(), clustered_vectors(20, seed=5)
    for n, start in enumerate(range(0, len(vectors), 1024)):
        np.save(tmp_path / f"chunk-{n}.npy", vectors[start : start + 1024])
    chunks = [np.load(p, mmap_mode="r") for p in sorted(tmp_path.glob("chunk-*.npy"))]
    params = dict(kind="ivfpq", nlist=16, nprobe=16, pq_m=4, use_gpu=False)
    pq = FaissIndex(vectors, **params)
    reranked = FaissIndex(vectors, exact=ExactVectors(chunks), rerank=50, **params)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]

    def overlap(found):
        return np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact, strict=True)])

    scores, positions = reranked.search(queries, 10)
    assert overlap(positions) == 1.0 > overlap(pq.search(queries, 10)[1])
    assert np.allclose(scores, np.take_along_axis(queries @ vectors.T, positions, 1), atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first


def test_exact_vectors_take_rows_across_chunks_in_the_given_order():
    from cgr.retrieval.index import ExactVectors

    vectors = unit_vectors(10, dim=4)
    exact = ExactVectors([vectors[:4], vectors[4:8], vectors[8:]])
    positions = np.array([9, 0, 5, 4, 9, 3])
    assert len(exact) == 10
    assert np.array_equal(exact.take(positions), vectors[positions])


def test_rerank_without_vectors_and_bad_search_settings_are_config_errors():
    with pytest.raises(ConfigError, match="rerank needs the float vectors"):
        FaissIndex(unit_vectors(200), kind="ivf", nlist=4, rerank=10, use_gpu=False)
    with pytest.raises(ConfigError, match="index_rerank"):
        IndexSpec("ivfpq", rerank=-1)
    with pytest.raises(ConfigError, match="index_nprobe"):
        IndexSpec("ivf", nprobe=0)
    with pytest.raises(ConfigError, match="at least 256 vectors, not 200: use flat"):
        FaissIndex(unit_vectors(200), kind="ivfpq", nlist=2, pq_m=8, use_gpu=False)


def test_search_settings_are_applied_after_loading_and_not_part_of_the_file_key(tmp_path):
    vectors = unit_vectors(500)
    spec = IndexSpec("hnsw", ef_search=64)
    FaissIndex.load_or_build(tmp_path, lambda: vectors, IndexSpec("hnsw"), use_gpu=False)
    loaded = FaissIndex.load_or_build(tmp_path, _never, spec, use_gpu=False)  # same file
    assert loaded.index.hnsw.efSearch == 64
    ivf = IndexSpec("ivf", nlist=8, nprobe=3)
    FaissIndex.load_or_build(tmp_path, lambda: vectors, ivf, use_gpu=False)
    assert FaissIndex.load_or_build(tmp_path, _never, ivf, use_gpu=False).index.nprobe == 3
