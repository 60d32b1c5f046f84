"""FAISS inner-product index over normalised fact vectors: flat, IVF, IVF-PQ or HNSW; built once,
saved next to the embedding cache and loaded afterwards; on every GPU FAISS sees when there is one.

Why persisted: an IVF index is re-trained (k-means) at every build, and on the 14M-sentence ARC
corpus the build takes far longer than loading. The file is keyed by the vectors it was built from
(corpus hash and count in the embedding cache folder) and by the index settings; a file whose
description does not match, or that FAISS cannot read (truncated), is rebuilt, never used.

Why re-ranking: product quantisation keeps the true nearest neighbour in its top 10 but reorders
close neighbours (about 77 % of the exact top 10 at 1M vectors). `rerank=N` fetches N candidates
and scores them exactly with the float vectors, read from the embedding cache on disk through a
memory map, so a corpus whose floats do not fit in RAM still gets exact top-k scores."""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import faiss
import numpy as np

from cgr.errors import ConfigError
from cgr.files import atomic_replace, atomic_write
from cgr.validation import at_least

log = logging.getLogger(__name__)

KINDS = ("flat", "ivf", "ivfpq", "hnsw")
SEARCH_TIME = ("nprobe", "ef_search", "rerank")


def gpu_available() -> bool:
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


@dataclass(frozen=True)
class IndexSpec:
    """What is built and how it is searched. nlist: IVF cells (capped at one per 39 vectors,
    FAISS's minimum for k-means); pq_m: PQ sub-quantisers (must divide the dimension; 8 bits
    each); hnsw_m: HNSW neighbours per node. Search-time settings (not part of the saved file):
    nprobe: IVF cells visited per query; ef_search: HNSW's search depth (FAISS's default 16);
    rerank: candidates re-scored exactly from the float vectors (0: off)."""

    kind: str = "flat"
    nlist: int = 1024
    nprobe: int = 32
    pq_m: int = 48
    hnsw_m: int = 32
    ef_search: int = 16
    rerank: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"retrieval index kind must be one of {KINDS}, not {self.kind!r}")
        for name in ("nlist", "nprobe", "pq_m", "hnsw_m", "ef_search"):
            at_least(f"data.retrieval.index_{name}", getattr(self, name), 1)
        at_least("data.retrieval.index_rerank", self.rerank, 0)

    @property
    def candidates_reranked(self) -> int:
        """`rerank`, or 0 for a flat index, whose scores are exact already."""
        return self.rerank if self.kind != "flat" else 0

    def built(self) -> dict:
        """The settings the built index depends on (the others are chosen at search time)."""
        return {k: v for k, v in asdict(self).items() if k not in SEARCH_TIME}

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
            if n < 256:  # each sub-quantiser trains 2^8 centroids
                raise ConfigError(f"an ivfpq index needs at least 256 vectors, not {n}: use flat")
            index = faiss.IndexIVFPQ(
                quantizer, dim, nlist, spec.pq_m, 8, faiss.METRIC_INNER_PRODUCT
            )
        index.train(vectors)
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
        self,
        vectors: np.ndarray,
        kind: str = "flat",
        use_gpu: bool | str = "auto",
        exact: ExactVectors | None = None,
        **params,
    ):
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ConfigError("cannot build an index over an empty corpus")
        spec = IndexSpec(kind, **params)
        self._place(build_cpu_index(vectors, spec), spec, use_gpu, exact)

    def _place(
        self, index: faiss.Index, spec: IndexSpec, use_gpu: bool | str, exact: ExactVectors | None
    ) -> None:
        _search_settings(index, spec)
        self.on_gpu = False
        if use_gpu is True or (use_gpu == "auto" and gpu_available()):
            if not gpu_available():
                raise ConfigError("use_gpu=true but faiss has no GPU support or sees no GPU")
            index, self.on_gpu = _to_gpus(index, spec.kind)
        self.index = index
        self.size = index.ntotal
        self.rerank = spec.candidates_reranked
        if self.rerank and exact is None:
            raise ConfigError("index rerank needs the float vectors (exact=...) to score with")
        if self.rerank and len(exact) != self.size:
            raise ConfigError(f"rerank vectors hold {len(exact)} rows, the index {self.size}")
        self.exact = exact if self.rerank else None

    @classmethod
    def load_or_build(
        cls,
        folder: str | Path,
        vectors: Callable[[], np.ndarray],
        spec: IndexSpec,
        use_gpu: bool | str = "auto",
        exact: Callable[[], ExactVectors] | None = None,
    ) -> FaissIndex:
        """The index saved in `folder` for `spec`, else built from `vectors()` and saved there.
        `folder` is the embedding cache folder, whose name holds the corpus hash and size;
        `exact()` opens the float vectors that `spec.rerank` scores candidates with."""
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
        self = cls.__new__(cls)
        reranking = spec.candidates_reranked and exact is not None
        self._place(index, spec, use_gpu, exact() if reranking else None)
        return self

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each (len(queries), k); missing hits have position -1."""
        k = min(k, self.size)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if not self.rerank:
            return self.index.search(queries, k)
        _, candidates = self.index.search(queries, max(k, min(self.rerank, self.size)))
        return exact_top_k(queries, candidates, self.exact, k)


class DeviceFlatIndex:
    """Exact inner-product search as one matmul + top-k on a torch device (a GPU), for a flat
    index when FAISS has no GPU build: 65k x 384 floats are 100 MB of GPU memory, and a batch
    of queries is searched in one kernel instead of on the CPU's cores. Same `search` as
    FaissIndex; scores agree with FAISS's up to float rounding."""

    rerank = 0
    on_gpu = True

    def __init__(self, vectors: np.ndarray, device):
        import torch

        if vectors.ndim != 2 or len(vectors) == 0:
            raise ConfigError("cannot build an index over an empty corpus")
        self.device = torch.device(device)
        self.vectors = torch.from_numpy(np.ascontiguousarray(vectors, np.float32)).to(self.device)
        self.size = len(vectors)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import torch

        k = min(k, self.size)
        with torch.no_grad():
            q = torch.from_numpy(np.ascontiguousarray(queries, np.float32)).to(self.device)
            scores, positions = (q @ self.vectors.T).topk(k, dim=1)
        return scores.cpu().numpy(), positions.cpu().numpy().astype(np.int64)


def search_backend(spec: IndexSpec, device, use_gpu: bool | str = "auto") -> str:
    """Where a dense index searches: "faiss-gpu" (a FAISS GPU build sees a GPU), "torch" (a flat
    index on a torch GPU device without one), else "faiss-cpu". Why torch before the CPU:
    benchmarks/train_speed.py --search measures both on the machine at hand."""
    if use_gpu is False or str(use_gpu).lower() == "false":
        return "faiss-cpu"
    if gpu_available():
        return "faiss-gpu"
    is_gpu = device is not None and str(device).split(":")[0] == "cuda"
    return "torch" if is_gpu and spec.kind == "flat" else "faiss-cpu"


class ExactVectors:
    """Row access to float vectors that may not fit in RAM: the embedding cache's chunk files
    (or one array), memory-mapped with read-ahead off, so a query touches only the pages of its
    candidates. `take(positions)` gathers rows in the given order."""

    def __init__(self, chunks: list[np.ndarray]):
        if not chunks:
            raise ConfigError("no vectors to re-rank with")
        self.chunks = chunks
        self.chunk_size = len(chunks[0])
        self.dim = chunks[0].shape[1]
        self.total = sum(len(c) for c in chunks)
        for chunk in chunks:
            mapped = getattr(chunk, "_mmap", None)
            if mapped is not None and hasattr(mapped, "madvise"):
                mapped.madvise(mmap.MADV_RANDOM)

    def __len__(self) -> int:
        return self.total

    def take(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.dim), dtype=np.float32)
        which, offset = np.divmod(positions, self.chunk_size)
        for n in np.unique(which):
            rows = which == n
            out[rows] = self.chunks[int(n)][offset[rows]]
        return out


def exact_top_k(
    queries: np.ndarray, candidates: np.ndarray, exact: ExactVectors, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of each query's candidates by exact inner product; -1 candidates (fewer hits
    than asked) stay last with score -inf."""
    missing = candidates < 0
    rows = exact.take(np.where(missing, 0, candidates).ravel()).reshape(*candidates.shape, -1)
    scores = np.einsum("qd,qnd->qn", queries, rows)
    scores[missing] = -np.inf
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(candidates, order, 1)


def _search_settings(index: faiss.Index, spec: IndexSpec) -> None:
    """Search-time settings are not in the saved file's key: applied after every build or load."""
    if hasattr(index, "nprobe"):
        index.nprobe = min(spec.nprobe, index.nlist)
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = spec.ef_search


def _description(path: Path, spec: IndexSpec, index: faiss.Index) -> dict:
    return {"spec": spec.built(), "ntotal": int(index.ntotal), "dim": int(index.d),
            "bytes": path.stat().st_size, "sha256": file_sha256(path), "faiss": faiss.__version__}  # fmt: skip


def file_sha256(path: Path) -> str:
    """The index file's checksum (~0.3 s per 100 MB): a file changed in place at the same size
    (a crash mid-write, a bad disk) is rebuilt instead of searched (it returned random facts
    with scores near 1e38)."""
    import hashlib

    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


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
        if meta.get("sha256") != file_sha256(path):
            raise ValueError(f"{path} does not match the checksum in {meta_path}")
        flags = faiss.IO_FLAG_MMAP if spec.kind in {"ivf", "ivfpq"} else 0
        index = faiss.read_index(str(path), flags)
        if index.ntotal != meta.get("ntotal") or index.d != meta.get("dim"):
            raise ValueError(f"{path} holds {index.ntotal} x {index.d} vectors, not as described")
        return index
    except (
        ValueError,
        RuntimeError,
        json.JSONDecodeError,
        UnicodeDecodeError,
        AttributeError,
    ) as e:
        log.warning("saved index unusable, rebuilding it: %s", str(e).splitlines()[0])
        return None
