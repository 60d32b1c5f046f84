"""FAISS inner-product index over normalised fact vectors: flat, IVF, IVF-PQ or HNSW; built once,
saved next to the embedding cache and loaded afterwards; on every GPU FAISS sees when there is one.

Why persisted: an IVF index is re-trained (k-means) at every build, and on the 14M-sentence ARC
corpus the build takes far longer than loading. The file is keyed by the vectors it was built from
(corpus hash and count in the embedding cache folder) and by the index settings; a file whose
description does not match, or that FAISS cannot read (truncated), is rebuilt, never used."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import faiss
import numpy as np

from cgr.errors import ConfigError
from cgr.files import atomic_replace, atomic_write

log = logging.getLogger(__name__)

KINDS = ("flat", "ivf", "ivfpq", "hnsw")


def gpu_available() -> bool:
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


@dataclass(frozen=True)
class IndexSpec:
    """What is built. nlist: IVF cells (capped at one per 39 vectors, FAISS's minimum for
    k-means); nprobe: cells visited per query; pq_m: PQ sub-quantisers (must divide the
    dimension; 8 bits each); hnsw_m: HNSW neighbours per node."""

    kind: str = "flat"
    nlist: int = 1024
    nprobe: int = 32
    pq_m: int = 48
    hnsw_m: int = 32

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"retrieval index kind must be one of {KINDS}, not {self.kind!r}")

    def built(self) -> dict:
        """The settings the built index depends on (nprobe is chosen at search time)."""
        return {k: v for k, v in asdict(self).items() if k != "nprobe"}

    def key(self) -> str:
        return hashlib.sha1(json.dumps(self.built(), sort_keys=True).encode()).hexdigest()[:10]


def build_cpu_index(vectors: np.ndarray, spec: IndexSpec) -> faiss.Index:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape
    if spec.kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif spec.kind in {"ivf", "ivfpq"}:
        nlist = max(1, min(spec.nlist, n // 39))
        quantizer = faiss.IndexFlatIP(dim)
        if spec.kind == "ivf":
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        else:
            if dim % spec.pq_m:
                raise ConfigError(f"index pq_m {spec.pq_m} must divide the dimension {dim}")
            index = faiss.IndexIVFPQ(
                quantizer, dim, nlist, spec.pq_m, 8, faiss.METRIC_INNER_PRODUCT
            )
        index.train(vectors)
        index.nprobe = min(spec.nprobe, nlist)
    else:
        index = faiss.IndexHNSWFlat(dim, spec.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.add(vectors)
    return index


def _to_gpus(index: faiss.Index, kind: str) -> tuple[faiss.Index, bool]:
    if kind == "hnsw":
        log.info("HNSW has no FAISS GPU implementation; keeping it on the CPU")
        return index, False
    options = faiss.GpuMultipleClonerOptions()
    options.shard = True  # each GPU holds a share of the vectors, not a copy of all of them
    return faiss.index_cpu_to_all_gpus(index, options), True


class FaissIndex:
    """Exact search by default (`flat`); `ivf`, `ivfpq` and `hnsw` trade recall for speed and
    memory on big corpora (benchmarks/index_scale.py). `FaissIndex(vectors, kind, **params)`
    builds in memory; `FaissIndex.load_or_build(folder, ...)` keeps the built index on disk."""

    def __init__(
        self, vectors: np.ndarray, kind: str = "flat", use_gpu: bool | str = "auto", **params
    ):
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ConfigError("cannot build an index over an empty corpus")
        self._place(build_cpu_index(vectors, IndexSpec(kind, **params)), kind, use_gpu)

    def _place(self, index: faiss.Index, kind: str, use_gpu: bool | str) -> None:
        self.on_gpu = False
        if use_gpu is True or (use_gpu == "auto" and gpu_available()):
            if not gpu_available():
                raise ConfigError("use_gpu=true but faiss has no GPU support or sees no GPU")
            index, self.on_gpu = _to_gpus(index, kind)
        self.index = index
        self.size = index.ntotal

    @classmethod
    def load_or_build(
        cls,
        folder: str | Path,
        vectors: Callable[[], np.ndarray],
        spec: IndexSpec,
        use_gpu: bool | str = "auto",
    ) -> FaissIndex:
        """The index saved in `folder` for `spec`, else built from `vectors()` and saved there.
        `folder` is the embedding cache folder, whose name holds the corpus hash and size."""
        path = Path(folder) / f"index-{spec.kind}-{spec.key()}.faiss"
        index = _read_saved(path, spec)
        if index is None:
            data = vectors()
            if data.ndim != 2 or len(data) == 0:
                raise ConfigError("cannot build an index over an empty corpus")
            log.info(
                "building the %s index over %d vectors (saved to %s)", spec.kind, len(data), path
            )
            index = build_cpu_index(data, spec)
            _save(path, index, spec)
        else:
            log.info("loaded the %s index from %s", spec.kind, path)
        if hasattr(index, "nprobe"):
            index.nprobe = min(spec.nprobe, index.nlist)  # a search setting: not in the file's key
        self = cls.__new__(cls)
        self._place(index, spec.kind, use_gpu)
        return self

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each (len(queries), k); missing hits have position -1."""
        k = min(k, self.size)
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)


def _description(path: Path, spec: IndexSpec, index: faiss.Index) -> dict:
    return {"spec": spec.built(), "ntotal": int(index.ntotal), "dim": int(index.d),
            "bytes": path.stat().st_size, "faiss": faiss.__version__}  # fmt: skip


def _save(path: Path, index: faiss.Index, spec: IndexSpec) -> None:
    # a temporary file per process: DDP ranks build the same index beside each other
    atomic_replace(path, lambda tmp: faiss.write_index(index, str(tmp)))
    meta = json.dumps(_description(path, spec, index), indent=1)
    atomic_write(path.with_suffix(".json"), lambda f: f.write(meta + "\n"))


def _read_saved(path: Path, spec: IndexSpec) -> faiss.Index | None:
    """The saved index, or None (with the reason logged) when it is missing, does not match its
    description, or cannot be read; IVF indexes are memory-mapped (their lists stay on disk)."""
    meta_path = path.with_suffix(".json")
    if not path.exists() or not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("spec") != spec.built() or meta.get("bytes") != path.stat().st_size:
            raise ValueError(f"{path} does not match {meta_path} (size or settings)")
        flags = faiss.IO_FLAG_MMAP if spec.kind in {"ivf", "ivfpq"} else 0
        index = faiss.read_index(str(path), flags)
        if index.ntotal != meta.get("ntotal") or index.d != meta.get("dim"):
            raise ValueError(f"{path} holds {index.ntotal} x {index.d} vectors, not as described")
        return index
    except (ValueError, RuntimeError, json.JSONDecodeError) as e:
        log.warning("saved index unusable, rebuilding it: %s", str(e).splitlines()[0])
        return None
