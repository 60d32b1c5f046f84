import json

import numpy as np
import pytest

from cgr.data.corpus import Corpus
from cgr.errors import CacheMismatchError
from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder

TEXTS = [
    f"fact number {i} is about {w}"
    for i, w in enumerate(["ice", "fire", "rain", "sand", "wind", "rock", "leaf"])
]


class CountingEncoder:
    """The real encoder, counting what it is asked to encode."""

    def __init__(self, real):
        self.real, self.encoded = real, 0

    @property
    def dim(self):
        return self.real.dim

    def encode(self, texts, progress=False):
        self.encoded += len(texts)
        return self.real.encode(texts)


def test_build_then_reuse_without_encoding(tmp_path, encoder):
    corpus = Corpus(TEXTS)
    folder = cache_folder(tmp_path, "minilm", corpus)
    first = CountingEncoder(encoder)
    vectors = EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(
        first, progress=False
    )
    assert vectors.shape == (7, encoder.dim) and first.encoded == 7
    assert np.allclose(vectors, encoder.encode(corpus.texts), atol=1e-5)
    again = CountingEncoder(encoder)
    EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(again, progress=False)
    assert again.encoded == 0


def test_killed_run_resumes_from_whole_chunks(tmp_path, encoder):
    corpus = Corpus(TEXTS)
    folder = tmp_path / "cache"
    EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(encoder, progress=False)
    # what a kill leaves: the last chunk missing and a half-written temporary file
    (folder / "chunk-00002.npy").unlink()
    (folder / "chunk-00001.npy.tmp123").write_bytes(b"partial")
    resumed = CountingEncoder(encoder)
    vectors = EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(
        resumed, progress=False
    )
    assert resumed.encoded == 1 and vectors.shape[0] == 7  # only the missing chunk (1 fact)


def test_cache_of_another_corpus_is_refused_and_kept(tmp_path, encoder):
    folder = tmp_path / "cache"
    EmbeddingCache(folder, "minilm", Corpus(TEXTS), chunk_size=3).load_or_build(
        encoder, progress=False
    )
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(CacheMismatchError, match="does not match"):
        EmbeddingCache(folder, "minilm", Corpus(TEXTS[:5]), chunk_size=3).load_or_build(encoder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert json.loads((folder / "meta.json").read_text())["num_facts"] == 7


def test_a_cut_chunk_and_a_garbled_meta_are_rebuilt_with_a_warning(tmp_path, encoder, caplog):
    """What a crash or a bad disk leaves in a cache the package wrote: never a traceback,
    never silent reuse."""
    corpus = Corpus(TEXTS)
    folder = tmp_path / "cache"
    EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(encoder, progress=False)
    good = np.load(folder / "chunk-00001.npy")
    cut = folder / "chunk-00001.npy"
    cut.write_bytes(cut.read_bytes()[:-100])
    resumed = CountingEncoder(encoder)
    vectors = EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(
        resumed, progress=False
    )
    assert resumed.encoded == 3 and np.allclose(vectors[3:6], good, atol=1e-6)
    assert "chunk-00001.npy is damaged" in caplog.text
    (folder / "meta.json").write_bytes(b"\x00garbage{")
    again = CountingEncoder(encoder)
    EmbeddingCache(folder, "minilm", corpus, chunk_size=3).load_or_build(again, progress=False)
    assert again.encoded == 7 and "meta.json unreadable" in caplog.text
    assert json.loads((folder / "meta.json").read_text())["num_facts"] == 7
