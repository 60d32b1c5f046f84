"""Retrieval on the trainer's device: the search backend chosen per device, exact search as a
torch matmul giving FAISS's hits, and the device handed from the Trainer to the retriever.
CUDA cases skip on a machine without a GPU."""

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from cgr.data.corpus import Corpus
from cgr.retrieval.fact_vectors import FactVectors
from cgr.retrieval.factory import RetrievalConfig, build_retriever
from cgr.retrieval.index import (
    DeviceFlatIndex,
    FaissIndex,
    IndexSpec,
    gpu_available,
    search_backend,
)
from tests.conftest import SAMPLE

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_search_backend_by_device_and_index():
    flat, ivf = IndexSpec("flat"), IndexSpec("ivf")
    assert search_backend(flat, None) == "faiss-cpu"
    assert search_backend(flat, torch.device("cpu")) == "faiss-cpu"
    assert search_backend(flat, "cuda", use_gpu=False) == "faiss-cpu"
    expected_gpu = "faiss-gpu" if gpu_available() else "torch"
    assert search_backend(flat, torch.device("cuda", 1)) == expected_gpu
    # an approximate index has no torch version: FAISS's GPU build or the CPU
    assert search_backend(ivf, "cuda") == ("faiss-gpu" if gpu_available() else "faiss-cpu")


def test_device_flat_index_finds_what_faiss_finds():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[[3, 77, 420]] + 0.01
    faiss_scores, faiss_hits = FaissIndex(vectors, use_gpu=False).search(queries, 10)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scores, hits = DeviceFlatIndex(vectors, device).search(queries, 10)
    np.testing.assert_array_equal(hits, faiss_hits)
    np.testing.assert_allclose(scores, faiss_scores, atol=1e-5)
    assert hits.dtype == np.int64 and scores.shape == (3, 10)
    assert DeviceFlatIndex(vectors, device).search(queries, 900)[1].shape == (3, 500)


@pytest.mark.slow
def test_trainer_device_reaches_the_retriever(tmp_path):
    """QADataModule.setup hands the Trainer's root device to the evidence pipeline, whose
    retriever then encodes there (here the CPU)."""
    from cgr.training.datamodule import QADataModule

    retrieval = RetrievalConfig(method="dense", corpus=[str(SAMPLE / "facts.txt")],
                                cache_dir=str(tmp_path / "emb"), beam_size=2)  # fmt: skip
    dm = QADataModule(str(SAMPLE / "train.jsonl"), str(SAMPLE / "dev.jsonl"), retrieval=retrieval,
                      pool_cache_dir=str(tmp_path / "pools"), max_train_questions=4)  # fmt: skip
    dm.pipeline.chains.enabled = False
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False)
    dm.trainer = trainer
    dm.setup("validate")
    assert str(dm.pipeline.device) == "cpu"
    assert dm.pipeline.retriever.encoder.model.device.type == "cpu"
    # the frozen fact vectors of CGR come from the cache the retrieval just wrote
    sources = dm.pipeline.fact_vector_sources()
    assert len(sources) == 1 and len(sources[0][1]) == len(sources[0][0])
    corpus = sources[0][0]
    looked_up = FactVectors(lambda texts: None, 384, sources)(corpus.texts[:3])
    np.testing.assert_allclose(
        looked_up, dm.pipeline.retriever.encoder.encode(corpus.texts[:3]), atol=1e-5
    )


@cuda
@pytest.mark.slow
def test_retriever_built_for_cuda_encodes_and_searches_there(tmp_path):
    cfg = RetrievalConfig(method="beam", corpus=[str(SAMPLE / "facts.txt")],
                          cache_dir=str(tmp_path / "emb"), beam_size=2)  # fmt: skip
    retriever = build_retriever(cfg, "cuda")
    assert retriever.encoder.model.device.type == "cuda"
    assert retriever.corpus.index.on_gpu
    on_cpu = build_retriever(cfg, "cpu").retrieve(["Copper conducts electricity."])[0]
    on_gpu = retriever.retrieve(["Copper conducts electricity."])[0]
    assert [f.fact_id for f in on_gpu] == [f.fact_id for f in on_cpu]


def test_fact_vectors_read_sources_and_encode_the_rest_once():
    corpus = Corpus(["a", "b", "c"])
    vectors = np.eye(3, 4, dtype=np.float32)
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.full((len(texts), 4), 7.0, dtype=np.float32)

    facts = FactVectors(encode, 4, [(corpus, vectors)])
    out = facts(["c", "zz", "a", "zz"])
    row = {f.text: i for i, f in enumerate(corpus.facts)}  # the corpus orders facts by id
    np.testing.assert_array_equal(out[0], vectors[row["c"]])
    np.testing.assert_array_equal(out[2], vectors[row["a"]])
    assert (out[[1, 3]] == 7.0).all()
    facts(["zz", "b"])
    assert calls == [["zz"]] and facts.encoded_texts == 1
