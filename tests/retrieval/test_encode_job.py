"""`cgr encode`: the corpus embeddings as a Lightning predict job. Two CPU processes (DDP over
gloo) write byte-identical chunks to one process, the same vectors `cgr train` would encode, and
a second run encodes nothing and loads the saved index."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # subprocesses loading MiniLM


def encode(cache_dir, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "cgr.cli", "encode", "--config", "configs/default.yaml",
           f"data.retrieval.cache_dir={cache_dir}", *overrides]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # the same arithmetic in every process
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def chunks(cache_dir) -> dict[str, bytes]:
    return {str(p.relative_to(cache_dir)): p.read_bytes() for p in cache_dir.rglob("chunk-*.npy")}


def test_two_processes_write_the_vectors_one_process_writes(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    first = encode(one, "trainer.devices=1")
    assert first.returncode == 0, first.stderr[-2000:]
    ddp = encode(two, "trainer.devices=2", "trainer.strategy=ddp")
    assert ddp.returncode == 0, ddp.stderr[-2000:]
    assert len(chunks(one)) == 2  # the quickstart corpus and its open book, one chunk each
    assert chunks(one) == chunks(two)
    assert len(list(two.rglob("index-flat-*.faiss"))) == 2

    # the vectors `cgr train` encodes in-process for the same corpus
    from cgr.data.corpus import Corpus
    from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder
    from cgr.retrieval.encoders import TextEncoder

    model = yaml.safe_load((ROOT / "configs" / "default.yaml").read_text())["data"]["retrieval"]
    name = model["encoder"]  # the cache is keyed by the name the config gives
    corpus = Corpus.from_files([ROOT / "data" / "quickstart" / "facts.txt"])
    folder = cache_folder(tmp_path / "train", name, corpus)
    in_process = EmbeddingCache(folder, name, corpus).load_or_build(TextEncoder(name))
    encoded = EmbeddingCache(cache_folder(one, name, corpus), name, corpus).load()
    assert np.allclose(in_process, encoded, atol=1e-6)

    again = encode(one)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "encoding 0 chunks" in again.stderr and "loaded the flat index" in again.stderr


def test_fewer_chunks_than_processes_still_encode(tmp_path):
    """One chunk to write and two ranks (a small corpus, or a job resumed with one chunk left):
    Lightning's predict sampler needs an item per rank, so the chunk is encoded by both."""
    result = encode(
        tmp_path, "trainer.devices=2", "trainer.strategy=ddp", "data.retrieval.open_book=null"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(chunks(tmp_path)) == 1 and "encoding 1 chunks" in result.stderr


def test_a_cache_written_for_another_corpus_is_refused(tmp_path):
    assert encode(tmp_path).returncode == 0
    meta = next(tmp_path.rglob("meta.json"))
    found = json.loads(meta.read_text())
    meta.write_text(json.dumps({**found, "corpus_hash": "0" * 16}))
    result = encode(tmp_path)
    assert result.returncode == 2
    assert "does not match this corpus" in result.stderr and str(meta.parent) in result.stderr


def test_sigterm_stops_at_a_chunk_and_keeps_the_chunks_written(tmp_path):
    """`kill -TERM` during `cgr encode`: it stops before the next chunk, exits 143 with one
    line, and the chunks written stay for the next run, which encodes only the rest."""
    import signal
    import time

    corpus = tmp_path / "facts.txt"
    corpus.write_text(
        "".join(f"fact {i} says a plant in pot {i % 97} needs light\n" for i in range(8 * 2048))
    )
    cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "cgr.cli", "encode", "--config", "configs/default.yaml",
           f"data.retrieval.cache_dir={cache}", f"data.retrieval.corpus=[{corpus}]",
           "data.retrieval.open_book=null"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 300
    while not chunks(cache) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert chunks(cache), "no chunk written before the deadline"
    at_signal = len(chunks(cache))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)  # no wall-clock bound: the cores may be shared
    assert proc.returncode == 143
    # it stops at a chunk: at most the chunk in progress at the signal is finished after it
    assert len(chunks(cache)) <= at_signal + 1
    assert "stopped by SIGTERM" in err and "running the same command again" in err
    written = len(chunks(cache))
    assert 1 <= written < 8
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"encoding {8 - written} chunks" in again.stderr and len(chunks(cache)) == 8
