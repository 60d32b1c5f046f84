"""Beam iterative dense retrieval (paper §2.1, Eq. 2, Fig. 3).

q_1 is the hypothesis; q_t = [q_{t-1}; SEP; e_{t-1}]. At each step every query on the beam
retrieves its top-K facts (one FAISS call for the whole batch), the K best (query, fact) paths by
cumulative score form the next beam, and the evidence pool is every fact retrieved at any step.
With `steps=1` this is plain single-step dense retrieval.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgr.data.corpus import Corpus
from cgr.retrieval.base import RetrievedFact, merge_pool, ranked
from cgr.retrieval.encoders import TextEncoder
from cgr.retrieval.index import DeviceFlatIndex, FaissIndex


@dataclass
class _BeamState:
    query: str
    score: float
    path: tuple[str, ...]


@dataclass
class SearchSource:
    """A corpus and its index: the main corpus, or the optional open book (OpenBookQA facts)."""

    name: str
    corpus: Corpus
    index: FaissIndex | DeviceFlatIndex


class BeamIterativeRetriever:
    def __init__(
        self,
        encoder: TextEncoder,
        corpus: SearchSource,
        beam_size: int = 10,
        steps: int = 2,
        open_book: SearchSource | None = None,
        open_book_k: int = 10,
        open_book_first_hop: bool = True,
        beam_score: str = "sum",
    ):
        if steps < 1 or beam_size < 1:
            raise ValueError("steps and beam_size must be >= 1")
        if beam_score not in {"sum", "last"}:
            raise ValueError("beam_score must be 'sum' or 'last'")
        self.encoder = encoder
        self.corpus = corpus
        self.beam_size = beam_size
        self.steps = steps
        self.open_book = open_book
        self.open_book_k = open_book_k
        self.open_book_first_hop = open_book_first_hop
        self.beam_score = beam_score
        tokenizer = getattr(encoder.model, "tokenizer", None)
        self.sep = getattr(tokenizer, "sep_token", None) or "[SEP]"
        self.search_seconds = 0.0  # time spent inside FAISS, for the overhead benchmark
        self.search_calls = 0

    def _search(self, source: SearchSource, vectors, k: int):
        import time

        start = time.perf_counter()
        result = source.index.search(vectors, k)
        self.search_seconds += time.perf_counter() - start
        self.search_calls += 1
        return result

    def _expand(self, source, step, flat, vectors, k, pools, candidates) -> None:
        # over-fetch by the path length so each query still gets k facts that are new to its path
        depth = max(len(state.path) for _, state in flat)
        scores, positions = self._search(source, vectors, k + depth)
        for row, (qi, state) in enumerate(flat):
            taken = 0
            for score, pos in zip(scores[row], positions[row], strict=True):
                if pos < 0 or taken == k:
                    continue
                fact = source.corpus[int(pos)]
                if fact.id in state.path:
                    continue
                taken += 1
                s = float(score)
                merge_pool(pools[qi], RetrievedFact(fact.id, fact.text, s, step, source.name))
                total = state.score + s if self.beam_score == "sum" else s
                new_query = f"{state.query} {self.sep} {fact.text}"
                candidates[qi].append(
                    (_BeamState(new_query, total, state.path + (fact.id,)), source.name)
                )

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list[RetrievedFact]]:
        """Each query's pool (every fact any beam step found), best first; `k` cuts it."""
        pools, _ = self._beam_search(queries)
        return [ranked(p)[:k] for p in pools]

    def retrieve_paths(self, queries: list[str]) -> list[list[tuple[float, tuple[str, ...]]]]:
        """Each query's final paths, (score, fact ids in hop order), best first: the chains the
        beam search ranks (sum or last step's score, `beam_score`)."""
        _, finals = self._beam_search(queries)
        return [
            sorted(((state.score, state.path) for state, _ in cands), key=lambda c: (-c[0], c[1]))
            for cands in finals
        ]

    def _beam_search(self, queries: list[str]):
        beams = [[_BeamState(q, 0.0, ())] for q in queries]
        pools: list[dict[str, RetrievedFact]] = [{} for _ in queries]
        for step in range(1, self.steps + 1):
            flat = [(qi, state) for qi, beam in enumerate(beams) for state in beam]
            if not flat:
                break
            vectors = self.encoder.encode([state.query for _, state in flat])
            candidates: list[list[tuple[_BeamState, str]]] = [[] for _ in queries]
            self._expand(self.corpus, step, flat, vectors, self.beam_size, pools, candidates)
            if step == 1 and self.open_book is not None:
                self._expand(
                    self.open_book, step, flat, vectors, self.open_book_k, pools, candidates
                )
                if self.open_book_first_hop:  # the authors' OBQA setting: hop 1 = open-book facts
                    candidates = [
                        [c for c in cands if c[1] == self.open_book.name] or cands
                        for cands in candidates
                    ]
            if step == self.steps:
                return pools, candidates
            beams = []
            for cands in candidates:
                best, seen = [], set()
                for state, _ in sorted(cands, key=lambda c: (-c[0].score, c[0].path)):
                    key = frozenset(state.path)
                    if key not in seen:
                        seen.add(key)
                        best.append(state)
                    if len(best) == self.beam_size:
                        break
                beams.append(best)
        return pools, [[] for _ in queries]
