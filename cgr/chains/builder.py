"""pool -> AMR graphs -> chains -> Ê: attaches each choice's reasoning chains and Ê (the facts
of its best chains) to each example, the middle of the data flow; the pool stays as retrieved
and cgr.evidence.selection turns pool + Ê into the facts read."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from tqdm.auto import tqdm

from cgr.amr.parsers import AMRConfig, CachedParser
from cgr.chains.concepts import AMRConcepts, amr_concepts
from cgr.chains.graph import build_semantic_graph, link_similar, question_concepts
from cgr.chains.search import ChainSearchConfig, chain_evidence, find_chains
from cgr.errors import ConfigError
from cgr.reader.examples import ReaderExample
from cgr.validation import at_least, positive
from cgr.workers import process_pool

log = logging.getLogger(__name__)


CHAIN_ORDERS = ("length", "relevance", "open_book")


@dataclass
class ChainConfig:
    """`data.chains`. `pad_evidence: true` (default, as the authors' code) fills Ê up to the
    reader's `max_evidence` with the best pool facts, chain facts first: a small reader then never
    reads an empty context when no chain exists. `false` gives the paper's Ê (chain facts only);
    cgr.evidence.selection applies it.

    `max_chains` chains per hypothesis are kept (exported, sampled by CGR's losses); Ê is the
    union of the facts of the best `evidence_chains` chains. Why two bounds: with one bound of 20,
    1-fact chains filled it and 122 of the 450 OBQA dev gold facts found in the gold answer's pool
    were on a chain that the bound dropped (100 chains: 47; benchmarks/chains.py --gold-loss)."""

    enabled: bool = True
    amr: AMRConfig = field(default_factory=AMRConfig)
    max_facts: int = 3
    max_chains: int = 20
    evidence_chains: int = 100
    time_budget_s: float = 0.5
    # the paper's graph (§2.2): no inter-AMR link through an AMR's root; true: roots link too
    merge_roots: bool = False
    # a root that is no predicate frame (a copula's class noun, "a whale is a mammal") links;
    # the paper's rule keeps it apart too
    merge_noun_roots: bool = False
    # the paper's nodes: a node with constant attributes is replaced by their values (the
    # authors' code); false keeps its concept beside them
    replace_attributed: bool = True
    pad_evidence: bool = True
    # Snowball-stem every concept ("collection" meets "collect"); off here so checkpoints saved
    # before this option read their chains as they were trained; configs/chains turns it on
    stem_concepts: bool = False
    # concepts that more than this share of a hypothesis' pool facts mention do not link facts
    # (1.0: every concept links, the paper; README: chains)
    max_link_share: float = 1.0
    # how a hypothesis' chains rank (the first is the one `cgr explain` and the chains page
    # show; Ê takes the best evidence_chains): "length" (shortest first, then summed retrieval
    # score) or "relevance" (mean relevance of their facts to "question choice", the reader's
    # order; the paper does not rank chains) or "open_book" (by the relevance of the most
    # relevant open-book fact on the chain, then as "relevance": the authors' beam starts in the
    # open book, and OpenBookQA's gold fact is one of its facts; without an open book the same
    # as "relevance")
    chain_order: str = "length"
    # the files whose facts count as the book for chain_order "open_book" (None: the
    # retrieval's open book, data.retrieval.open_book). ARC retrieves with no open book, but
    # WorldTree's tablestore is its curated science book (configs/chains/worldtree.yaml)
    book: list[str] | None = None
    # N > 0: the kept chains (export, explanations, CGR's losses) use only a hypothesis's N most
    # relevant pool facts (the reader's order); Ê still comes from all chains. Why: wrong answers
    # find chains through weak facts as often as right ones (README: chains); 0 is the paper
    explain_top_facts: int = 0
    # a number in (0, 1]: a fact also reaches a question or answer node through a concept of
    # its own whose base-encoder cosine with the node's is at least this ("increase" for
    # "enhance", "illness" for "disease"); facts still link to each other by equal concepts.
    # None: equal concepts only (the paper). Why: OBQA's gold fact is in the answer's pool for
    # 90 % of dev questions but on none of its kept chains for over a third of those (docs/chains.md)
    link_similarity: float | None = None
    # a sentence-encoder folder or hub name (a chain ranker, `cgr ranker`) whose cosine to
    # "question choice" ranks the chains for chain_order relevance | open_book, instead of the
    # reader's relevance order; None: the reader's order. The pools, Ê and the facts read stay
    rank_encoder: str | None = None
    # processes for the concepts and the chain search (None: every core this process may use;
    # 1: this process); the chains do not depend on it
    workers: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_facts", "max_chains", "evidence_chains"):
            at_least(f"data.chains.{name}", getattr(self, name), 1)
        at_least("data.chains.explain_top_facts", self.explain_top_facts, 0)
        if self.workers is not None:
            at_least("data.chains.workers", self.workers, 1)
        positive("data.chains.time_budget_s", self.time_budget_s)
        if self.chain_order not in CHAIN_ORDERS:
            raise ConfigError(
                f"data.chains.chain_order must be one of {', '.join(CHAIN_ORDERS)}, "
                f"not {self.chain_order!r}"
            )
        if self.book is not None and (
            not isinstance(self.book, list) or not all(isinstance(p, str) for p in self.book)
        ):
            raise ConfigError(
                f"data.chains.book must be a list of files or null, not {self.book!r}"
            )
        positive("data.chains.max_link_share", self.max_link_share)
        if self.rank_encoder is not None and not (
            isinstance(self.rank_encoder, str) and self.rank_encoder.strip()
        ):
            raise ConfigError(
                f"data.chains.rank_encoder must be a model folder or name, or null, not {self.rank_encoder!r}"
            )
        if self.link_similarity is not None and not 0.0 < self.link_similarity <= 1.0:
            raise ConfigError(
                f"data.chains.link_similarity must be in (0, 1] or null, not {self.link_similarity!r}"
            )
        if self.max_link_share > 1.0:
            raise ConfigError(
                f"data.chains.max_link_share must be <= 1, not {self.max_link_share!r}"
            )

    def book_files(self, open_book: str | None) -> list[str]:
        """The files `chain_order: open_book` ranks by: `book`, else the retrieval's open book
        (none: the order is `relevance`)."""
        if self.chain_order != "open_book":
            return []
        return list(self.book or ([open_book] if open_book else []))


def default_workers() -> int:
    """The cores this process may use (the CPU affinity, not every core of the machine)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS
        return max(1, os.cpu_count() or 1)


class ChainBuilder:
    """Parses (through the cache), then searches each question's chains; with `cfg.workers`
    > 1 the AMR concepts and the search run in a pool of worker processes, a share of the
    questions each, with the same output as one process (each search is deterministic and
    keeps its own per-hypothesis time budget)."""

    def __init__(
        self,
        cfg: ChainConfig,
        progress: bool = True,
        open_book: frozenset[str] = frozenset(),
        encode: Callable[[list[str]], np.ndarray] | None = None,
    ):
        """`open_book`: the open book's facts as `text_key`s, for `chain_order: open_book` (a
        pool fact's `source` names only the corpus that scored it first, and the science corpus
        holds some open-book sentences too). `encode`: texts -> unit vectors (the base
        encoder), needed by `link_similarity`."""
        if cfg.link_similarity is not None and encode is None:
            raise ConfigError("data.chains.link_similarity needs an encoder for the concepts")
        self.cfg, self.progress, self.open_book, self.encode = cfg, progress, open_book, encode
        self.parser = CachedParser(cfg.amr, progress=progress, workers=self.workers)
        self.search = ChainSearchConfig(
            cfg.max_facts,
            max(cfg.max_chains, cfg.evidence_chains),
            cfg.time_budget_s,
            max_link_share=cfg.max_link_share,
            order=cfg.chain_order,
        )
        self.counters: Counter[str] = Counter()
        self.search_seconds: list[float] = []

    @property
    def workers(self) -> int:
        return self.cfg.workers if self.cfg.workers is not None else default_workers()

    def attach(
        self,
        examples: list[ReaderExample],
        relevance: list[list[dict[str, float]]] | None = None,
    ) -> None:
        """Sets each example's `chains` (best first, at most `max_chains` per choice) and
        `chain_facts` (Ê: the texts of its best `evidence_chains` chains, in pool order).
        `relevance` (per example and choice, fact id -> score, higher first) ranks the facts
        for `explain_top_facts`; without it the pool's retrieval scores do."""
        sentences = sorted(
            {h for ex in examples for h in ex.hypotheses}
            | {f.text for ex in examples for pool in ex.pool for f in pool}
        )
        graphs = dict(zip(sentences, self.parser.parse(sentences), strict=True))
        self.counters["failed_parses"] += sum(g is None for g in graphs.values())
        keys = relevance or [None] * len(examples)
        workers = min(self.workers, max(1, len(examples) // MIN_SHARE))
        shares = [list(range(len(examples)))[w::workers] for w in range(workers)]
        of, vectors = {}, {}
        if self.cfg.link_similarity is not None:
            of, vectors = self._concept_vectors(graphs)
        jobs = []
        for share in shares:
            mine = {s: graphs[s] for i in share for s in _sentences(examples[i])}
            # the concept vectors this share needs (what a worker is sent)
            needed = {c: vectors[c] for s in mine for c in of.get(s, ())}
            jobs.append((self.cfg, self.search, [(examples[i], keys[i]) for i in share],
                         self.open_book, mine, needed))  # fmt: skip
        bar = tqdm(total=len(examples), desc="searching chains", unit="q",
                   disable=not self.progress)  # fmt: skip
        if workers == 1:
            results = [search_share(*jobs[0])]
            bar.update(len(examples))
        else:
            with process_pool(workers) as pool:
                results = []
                for result in pool.map(search_share, *zip(*jobs, strict=True)):
                    results.append(result)
                    bar.update(len(result[0]))
        bar.close()
        for share, (found, counters, seconds) in zip(shares, results, strict=True):
            for i, (chains, chain_facts) in zip(share, found, strict=True):
                examples[i].chains, examples[i].chain_facts = chains, chain_facts
            self.counters.update(counters)
            self.search_seconds.extend(seconds)
        log.info("chains: %s", dict(self.counters))

    def _concept_vectors(
        self, graphs: dict[str, str | None]
    ) -> tuple[dict[str, set[str]], dict[str, np.ndarray]]:
        """Every concept of these sentences encoded once (`link_similarity`): sentence -> its
        concepts (which vectors a share of the questions needs), concept -> unit vector."""
        of = {s: _concepts_of(self.cfg, g).concepts for s, g in graphs.items()}
        found = sorted({c for cs in of.values() for c in cs})
        return of, dict(zip(found, self.encode(found), strict=True)) if found else {}


# questions per worker below which the search stays in this process: starting a worker (~1 s)
# costs more than searching a hundred questions (~0.1 s on the quickstart)
MIN_SHARE = 100


def _sentences(ex: ReaderExample) -> set[str]:
    return set(ex.hypotheses) | {f.text for pool in ex.pool for f in pool}


def _concepts_of(cfg: ChainConfig, graph: str | None) -> AMRConcepts:
    return amr_concepts(
        graph, cfg.merge_roots, cfg.stem_concepts, cfg.replace_attributed, cfg.merge_noun_roots
    )


def search_share(
    cfg: ChainConfig,
    search: ChainSearchConfig,
    items: list[tuple[ReaderExample, list[dict[str, float]] | None]],
    open_book: frozenset[str],
    graphs: dict[str, str | None],
    vectors: dict[str, np.ndarray] | None = None,
) -> tuple[list[tuple[list, list]], Counter, list[float]]:
    """AMR concepts and chain search for a share of the questions (in a worker process or not):
    per question (its chains per choice, its Ê per choice), the counters and search seconds.
    `vectors`: unit vectors by concept, for `link_similarity`."""
    concepts = {s: _concepts_of(cfg, g) for s, g in graphs.items()}
    counters: Counter[str] = Counter()
    seconds: list[float] = []
    counters["facts_without_concepts"] += sum(
        not concepts[f.text].concepts for ex, _ in items for pool in ex.pool for f in pool
    )
    found = [
        _search_one(ex, concepts, relevance, cfg, search, counters, seconds, open_book, vectors)
        for ex, relevance in items
    ]
    return found, counters, seconds


def _search_one(
    ex: ReaderExample,
    concepts: dict[str, AMRConcepts],
    relevance: list[dict[str, float]] | None,
    cfg: ChainConfig,
    search: ChainSearchConfig,
    counters: Counter,
    seconds: list[float],
    open_book: frozenset[str] = frozenset(),
    vectors: dict[str, np.ndarray] | None = None,
) -> tuple[list, list]:
    hyps = [concepts[h] for h in ex.hypotheses]
    q_nodes = question_concepts(hyps)
    all_chains, all_facts, any_chain = [], [], False
    for i, (hyp, pool) in enumerate(zip(hyps, ex.pool, strict=True)):
        start = time.perf_counter()
        facts = {f.fact_id: concepts[f.text] for f in pool}
        graph = build_semantic_graph(hyp, q_nodes, facts)
        if cfg.link_similarity is not None:
            counters["similar_links"] += link_similar(graph, vectors or {}, cfg.link_similarity)
        if not graph.answer_nodes:
            counters["hypotheses_without_answer_nodes"] += 1
        ranking = {f.fact_id: f.score for f in pool}
        if cfg.chain_order in ("relevance", "open_book") and relevance:
            ranking = relevance[i]
        preferred = set()
        if cfg.chain_order == "open_book":
            preferred = {f.fact_id for f in pool if f.in_open_book(open_book)}
        chains, complete = find_chains(graph, ranking, search, preferred)
        seconds.append(time.perf_counter() - start)
        counters["searches_cut_by_budget"] += not complete
        counters["hypotheses"] += 1
        counters["hypotheses_with_chains"] += bool(chains)
        any_chain |= bool(chains)
        text = {f.fact_id: f.text for f in pool}
        kept = _explained(cfg, chains, pool, relevance[i] if relevance else None, counters)
        all_chains.append([replace(c, texts=tuple(text[f] for f in c.facts)) for c in kept])
        chosen = chain_evidence(chains[: cfg.evidence_chains], [f.fact_id for f in pool])
        all_facts.append([text[f] for f in chosen])
    counters["questions_without_chains"] += not any_chain
    return all_chains, all_facts


def _explained(
    cfg: ChainConfig,
    chains: list,
    pool: list,
    relevance: dict[str, float] | None,
    counters: Counter,
) -> list:
    """The chains kept for export and the losses: the best `max_chains`, through the
    hypothesis's `explain_top_facts` most relevant facts only when that is set."""
    n = cfg.explain_top_facts
    if n > 0:
        key = relevance or {f.fact_id: f.score for f in pool}
        top = {f.fact_id for f in sorted(pool, key=lambda f: -key.get(f.fact_id, 0.0))[:n]}
        found, chains = bool(chains), [c for c in chains if set(c.facts) <= top]
        counters["hypotheses_with_chains_only_beyond_top_facts"] += found and not chains
    return chains[: cfg.max_chains]
