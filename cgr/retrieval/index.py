"""FAISS inner-product index over normalised fact vectors: flat, IVF or HNSW; GPU when present."""

from __future__ import annotations

import logging

import faiss
import numpy as np

from cgr.errors import ConfigError

log = logging.getLogger(__name__)


def gpu_available() -> bool:
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


class FaissIndex:
    """Exact search by default (`flat`); `ivf` and `hnsw` trade recall for speed on big corpora."""

    def __init__(
        self,
        vectors: np.ndarray,
        kind: str = "flat",
        nlist: int = 1024,
        nprobe: int = 32,
        hnsw_m: int = 32,
        use_gpu: bool | str = "auto",
    ):
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ConfigError("cannot build an index over an empty corpus")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        dim = vectors.shape[1]
        if kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif kind == "ivf":
            nlist = max(1, min(nlist, len(vectors) // 39))  # FAISS wants ~39 points per centroid
            index = faiss.IndexIVFFlat(
                faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT
            )
            index.train(vectors)
            index.nprobe = min(nprobe, nlist)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            raise ConfigError(f"retrieval index kind must be flat, ivf or hnsw, not {kind!r}")
        index.add(vectors)
        self.on_gpu = False
        if use_gpu is True or (use_gpu == "auto" and gpu_available()):
            if not gpu_available():
                raise ConfigError("use_gpu=true but faiss has no GPU support or sees no GPU")
            if kind == "hnsw":
                log.info("HNSW has no FAISS GPU implementation; keeping it on the CPU")
            else:
                self._resources = faiss.StandardGpuResources()
                index = faiss.index_cpu_to_gpu(self._resources, 0, index)
                self.on_gpu = True
        self.index = index
        self.size = len(vectors)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each (len(queries), k); missing hits have position -1."""
        k = min(k, self.size)
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
