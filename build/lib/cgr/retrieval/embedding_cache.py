"""Corpus embeddings cached on disk, keyed by evidence-encoder and corpus hash.

Encoding the ~70k-fact corpus takes minutes on a CPU, so it is done in chunks; each chunk is
written to a temporary file and renamed into place, so a killed run leaves only whole chunks and
the next run resumes after the last one. A cache whose metadata does not match the corpus is
refused with a message instead of being silently reused or overwritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from cgr.data.corpus import Corpus
from cgr.errors import CacheMismatchError
from cgr.files import atomic_write
from cgr.retrieval.encoders import TextEncoder
from cgr.retrieval.index import ExactVectors

log = logging.getLogger(__name__)


def cache_folder(root: str | Path, model_name: str, corpus: Corpus) -> Path:
    model_key = hashlib.sha1(model_name.encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() else "-" for c in Path(model_name).name)[-40:]
    return Path(root) / f"{safe}-{model_key}" / f"corpus-{corpus.content_hash}-{len(corpus)}"


class EmbeddingCache:
    def __init__(self, folder: str | Path, model_name: str, corpus: Corpus, chunk_size: int = 2048):
        self.folder = Path(folder)
        self.model_name = model_name
        self.corpus = corpus
        self.chunk_size = chunk_size
        self.meta = {
            "model": model_name,
            "corpus_hash": corpus.content_hash,
            "num_facts": len(corpus),
            "chunk_size": chunk_size,
        }

    def _check_meta(self) -> None:
        meta_path = self.folder / "meta.json"
        if not meta_path.exists():
            return
        try:
            found = json.loads(meta_path.read_text(encoding="utf-8"))
            if not isinstance(found, dict):
                raise ValueError("not an object")
        except (ValueError, UnicodeDecodeError) as e:  # a crash or a bad disk: rebuild it
            log.warning("embedding cache %s: meta.json unreadable (%s); its chunks are "
                        "removed and encoded again", self.folder, str(e).splitlines()[0][:80])  # fmt: skip
            for chunk in self.folder.glob("chunk-*.npy"):
                chunk.unlink()
            meta_path.unlink()
            return
        diff = {k: (found.get(k), v) for k, v in self.meta.items() if found.get(k) != v}
        if diff:
            detail = ", ".join(
                f"{k}: cache has {a!r}, corpus needs {b!r}" for k, (a, b) in diff.items()
            )
            raise CacheMismatchError(
                f"embedding cache {self.folder} does not match this corpus/model ({detail}); "
                "point retrieval.cache_dir elsewhere or delete that folder"
            )

    def _chunk_path(self, n: int) -> Path:
        return self.folder / f"chunk-{n:05d}.npy"

    def prepare(self) -> None:
        """Refuses a folder written for another corpus or model, then records this one."""
        self._check_meta()
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_bytes = json.dumps(self.meta, indent=1).encode()
        if not (self.folder / "meta.json").exists():
            atomic_write(
                self.folder / "meta.json", binary=True, write=lambda f: f.write(meta_bytes)
            )

    @property
    def num_chunks(self) -> int:
        return (len(self.corpus) + self.chunk_size - 1) // self.chunk_size

    def chunk_texts(self, n: int) -> list[str]:
        return [f.text for f in self.corpus.facts[n * self.chunk_size : (n + 1) * self.chunk_size]]

    def todo(self) -> list[int]:
        """Chunks not on disk yet (a killed run resumes after its last whole chunk); a chunk
        that is cut or holds the wrong number of vectors is removed, with a warning, and
        encoded again."""
        return [n for n in range(self.num_chunks) if not self._chunk_ok(n)]

    def _chunk_ok(self, n: int) -> bool:
        path = self._chunk_path(n)
        if not path.exists():
            return False
        try:  # the header and the file's length, memory-mapped: no vectors read
            array = np.load(path, mmap_mode="r")
            ok = array.ndim == 2 and len(array) == len(self.chunk_texts(n))
        except (ValueError, OSError, EOFError):
            ok = False
        if not ok:
            log.warning("embedding cache chunk %s is damaged (cut or the wrong shape); "
                        "encoding it again", path)  # fmt: skip
            path.unlink()
        return ok

    def write_chunk(self, n: int, vectors: np.ndarray) -> None:
        atomic_write(self._chunk_path(n), binary=True, write=lambda f: np.save(f, vectors))

    def load(self, dim: int | None = None) -> np.ndarray:
        """All chunks joined, checked against the corpus size and the encoder's dimension."""
        parts = [np.load(self._chunk_path(n)) for n in range(self.num_chunks)]
        dim = dim or (parts[0].shape[1] if parts else 0)
        vectors = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
        if vectors.ndim != 2 or vectors.shape != (len(self.corpus), dim):
            raise CacheMismatchError(
                f"embedding cache {self.folder} holds {vectors.shape}, expected "
                f"({len(self.corpus)}, {dim}); delete that folder to rebuild it"
            )
        return vectors

    def exact_vectors(self) -> ExactVectors:
        """The cached vectors memory-mapped, not loaded (an approximate index re-ranks its
        candidates with them); checked against the corpus size like `load`."""
        missing = self.todo()
        if missing:
            raise CacheMismatchError(
                f"embedding cache {self.folder} misses {len(missing)} of {self.num_chunks} chunks; "
                "run `cgr encode` (or any dense retrieval) to write them"
            )
        chunks = [np.load(self._chunk_path(n), mmap_mode="r") for n in range(self.num_chunks)]
        if sum(len(c) for c in chunks) != len(self.corpus):
            raise CacheMismatchError(
                f"embedding cache {self.folder} does not hold {len(self.corpus)} vectors; "
                "delete that folder to rebuild it"
            )
        return ExactVectors(chunks)

    def load_or_build(self, encoder: TextEncoder, progress: bool = True) -> np.ndarray:
        """Encodes the missing chunks in this process (`cgr encode` spreads them over ranks)."""
        self.prepare()
        todo = self.todo()
        done = len(self.corpus) - sum(len(self.chunk_texts(n)) for n in todo)
        bar = tqdm(
            total=len(self.corpus),
            initial=done,
            desc=f"encoding corpus ({len(self.corpus)} facts)",
            unit="fact",
            disable=not progress or not todo,
        )
        for n in todo:
            chunk = self.chunk_texts(n)
            self.write_chunk(n, encoder.encode(chunk))
            bar.update(len(chunk))
        bar.close()
        return self.load(encoder.dim)
