"""`data.retrieval`: how evidence facts are found. Its own module, free of torch, so `cgr train`
can check these settings before any model library loads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from cgr.errors import ConfigError
from cgr.retrieval.index import KINDS, IndexSpec
from cgr.validation import at_least, at_most, one_of

METHODS = ("none", "bm25", "tfidf", "dense", "beam", "gold")


# the papers use T = 2 and K = 10; beyond these a query's beam search runs for minutes
MAXIMUMS = {"steps": 8, "beam_size": 1000, "open_book_k": 1000}


@dataclass
class RetrievalConfig:
    """How evidence facts are found. `dense` is `beam` with one step; `gold` is the oracle: every
    choice reads the question's gold facts (OBQA's `fact1`), the ceiling evidence can give."""

    method: Literal["none", "bm25", "tfidf", "dense", "beam", "gold"] = "beam"
    corpus: list[str] = field(default_factory=lambda: ["data/sample/facts.txt"])
    open_book: str | None = None
    encoder: str = "minilm"
    beam_size: int = 10
    steps: int = 2
    open_book_k: int = 10
    open_book_first_hop: bool = True
    beam_score: Literal["sum", "last"] = "sum"
    index: Literal["flat", "ivf", "ivfpq", "hnsw"] = "flat"  # saved next to the embeddings
    index_nlist: int = 1024  # IVF cells (~4-16 sqrt(corpus size), FAISS's rule of thumb)
    index_nprobe: int = 32  # IVF cells searched per query
    index_pq_m: int = 48  # PQ bytes per vector (ivfpq; divides the dimension)
    index_hnsw_m: int = 32  # HNSW neighbours per node
    index_ef_search: int = 16  # HNSW search depth (FAISS's default; higher: better recall)
    index_rerank: int = 0  # approximate indexes: re-score this many candidates exactly
    use_gpu: Literal["auto", "true", "false"] = "auto"  # a string: "true" needs a GPU
    cache_dir: str = ".cache/cgr/embeddings"
    encode_batch_size: int = 64
    max_query_length: int = 128

    def __post_init__(self) -> None:
        one_of("data.retrieval.method", self.method, METHODS)
        one_of("data.retrieval.beam_score", self.beam_score, ("sum", "last"))
        one_of("data.retrieval.index", self.index, KINDS)
        one_of("data.retrieval.use_gpu", str(self.use_gpu).lower(), ("auto", "true", "false"))
        for name in ("beam_size", "steps", "open_book_k", "encode_batch_size"):
            at_least(f"data.retrieval.{name}", getattr(self, name), 1)
        for name, most in MAXIMUMS.items():  # a query's work grows with beam_size ** steps
            at_most(f"data.retrieval.{name}", getattr(self, name), most)
        at_least("data.retrieval.max_query_length", self.max_query_length, 8)
        self.index_spec()  # validates the index_* values
        if self.method not in {"none", "gold"} and not self.corpus:
            raise ConfigError(
                f"data.retrieval.corpus is empty (method {self.method!r} needs facts)"
            )

    def index_spec(self) -> IndexSpec:
        return IndexSpec(
            self.index,
            nlist=self.index_nlist,
            nprobe=self.index_nprobe,
            pq_m=self.index_pq_m,
            hnsw_m=self.index_hnsw_m,
            ef_search=self.index_ef_search,
            rerank=self.index_rerank,
        )

    def pool_settings(self) -> dict:
        """The settings a retrieved pool depends on (its cache key): the index tuning only
        when the index is approximate, so exact (flat) pools keep their keys."""
        drop = {"cache_dir", "use_gpu"}
        if self.index == "flat":
            drop |= {k for k in asdict(self) if k.startswith("index_")}
        return {k: v for k, v in asdict(self).items() if k not in drop}
