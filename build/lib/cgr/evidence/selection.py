"""The facts each choice offers the reader, best first (the reader then reads whole facts while
they fit in max_length; see cgr.reader.packing).

`order`: `retrieval` keeps the pool's order (retrieval score; chain facts first when chains are
on); `hypothesis` ranks by cosine(hypothesis, fact) and `question_choice` (default) by
cosine("question choice", fact) (cgr.evidence.relevance), chain facts still first unless
`chain_facts_first: false` (then chains shape only CGR's losses and the explanation). On OBQA
dev's beam pools, the gold fact's rank among the gold answer's facts (R@1 / R@10): retrieval
12.0 / 44.0, hypothesis 20.2 / 54.0, question_choice 23.4 / 59.0 (README). `shared_facts`:
`keep`, or `drop` the facts offered to every choice of a question (they cannot tell choices
apart, and they take the room of facts that can). `open_book_first: N` offers a choice's N best
open-book facts before its other facts (after Ê's): the open book is the curated source OBQA's
gold facts come from, and in the 55-fact beam pool corpus facts push the gold fact out of the
first 15 (gold R@15 64 % against 85 % in the 20-fact dense pool). With N = 5 the gold fact is
read for 84 % of OBQA dev instead of 57 %, yet MiniLM's accuracy did not rise (README), so it is
off by default. Near-duplicates (same words
after lower-casing and removing punctuation) are always read once.

`retriever` is the authors' pathway (wwxu21/CGR: sort_with_AMR.py's retrieve_para over the pool
data_obqa.py retrieves): the *current* query encoder (the snapshot the reader trains and is
scored with; the base encoder before the first refresh) ranks each choice's pool, the open
book's facts first (the authors' pool indices 1-10 are the open book's top 10), then the
others, each by cosine(current encoder(hypothesis), fact). A choice reads Ê's best-ranked
facts (at most max_evidence), padded with the best-ranked other facts to max_evidence, all in
rank order, so the trained retriever decides what is read first. One departure: the authors
keep corpus facts in retrieval-step order; here they are ranked by the same cosine, so two
encoders order the same pool differently throughout. `chain_facts_first` does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.data.records import text_key
from cgr.errors import ConfigError
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact

ORDERS = ("retrieval", "hypothesis", "question_choice", "retriever")
SHARED = ("keep", "drop")


@dataclass
class EvidenceConfig:
    """`data.evidence`."""

    order: Literal["question_choice", "hypothesis", "retrieval", "retriever"] = "question_choice"
    shared_facts: Literal["keep", "drop"] = "keep"
    chain_facts_first: bool = True  # with chains on: Ê's facts before the other pool facts
    open_book_first: int = 0  # a choice's N best open-book facts before its other facts

    def __post_init__(self) -> None:
        if not isinstance(self.open_book_first, int) or self.open_book_first < 0:
            raise ConfigError(
                f"data.evidence.open_book_first must be a whole number >= 0, not {self.open_book_first!r}"
            )
        if self.order not in ORDERS:
            raise ConfigError(f"data.evidence.order must be one of {ORDERS}, not {self.order!r}")
        if self.shared_facts not in SHARED:
            raise ConfigError(
                f"data.evidence.shared_facts must be one of {SHARED}, not {self.shared_facts!r}"
            )


def relevance_queries(examples: list[ReaderExample], order: str) -> list[str]:
    """One query per choice, examples in turn: what `order` ranks a choice's facts by."""
    if order in ("hypothesis", "retriever"):
        return [h for ex in examples for h in ex.hypotheses]
    return [f"{ex.question} {c}" for ex in examples for c in ex.choices]


def fact_relevance(
    examples: list[ReaderExample], order: str, relevance
) -> list[list[dict[str, float]]]:
    """Per example and choice, each pool fact's relevance (higher first) under `order`:
    the cosine to the choice's query, or the retrieval score for `retrieval`."""
    if order == "retrieval":
        return [[{f.fact_id: f.score for f in pool} for pool in ex.pool] for ex in examples]
    pools = [pool for ex in examples for pool in ex.pool]
    sims = iter(relevance.scores(relevance_queries(examples, order), pools))
    return [
        [{f.fact_id: s for f, s in zip(pool, next(sims), strict=True)} for pool in ex.pool]
        for ex in examples
    ]


def _dedupe(facts: list[RetrievedFact]) -> list[RetrievedFact]:
    seen, out = set(), []
    for f in facts:
        key = text_key(f.text)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _chain_texts(ex: ReaderExample, choice: int) -> set[str]:
    """Ê of one choice: all its chain facts (ex.chain_facts), else those of the kept chains."""
    if ex.chain_facts and choice < len(ex.chain_facts):
        return set(ex.chain_facts[choice])
    if not ex.chains or choice >= len(ex.chains):
        return set()
    return {t for c in ex.chains[choice] for t in c.texts}


def candidates(ex: ReaderExample, chain_facts_only: bool = False) -> list[list[RetrievedFact]]:
    """Per choice, the facts it may offer: its pool, or only Ê's facts with `chain_facts_only`
    (the paper's Ê, `data.chains.pad_evidence: false`)."""
    if not chain_facts_only:
        return ex.pool
    offered = []
    for c, pool in enumerate(ex.pool):
        in_chain = _chain_texts(ex, c)  # once per choice, not per fact
        offered.append([f for f in pool if f.text in in_chain])
    return offered


def _best_open_book(
    pool: list[RetrievedFact], keys: dict[int, float], n: int, open_book: frozenset[str]
) -> set[int]:
    """ids of the pool's n best open-book facts (lowest key first, pool order on ties). A fact
    is the open book's by its text (`text_key`): the corpus may hold the same sentence."""
    if n <= 0:
        return set()
    open_book = [f for f in pool if f.in_open_book(open_book)]
    return {id(f) for f in sorted(open_book, key=lambda f: keys[id(f)])[:n]}


def select_evidence(
    examples: list[ReaderExample],
    cfg: EvidenceConfig,
    max_evidence: int,
    relevance=None,
    chain_facts_only: bool = False,
    open_book: frozenset[str] = frozenset(),
) -> None:
    """In place: each example's `facts[c]` becomes the at most `max_evidence` facts offered to
    choice c, best first, drawn from its pool (`pool` itself is left as retrieved).
    `relevance` (HypothesisRelevance) ranks for the orders but `retrieval`; `open_book` holds
    the open book's facts as `text_key`s (for `open_book_first`)."""
    offered = [candidates(ex, chain_facts_only) for ex in examples]
    rerank = cfg.order != "retrieval" and any(p for pools in offered for p in pools)
    if rerank:
        if relevance is None:
            raise ConfigError(f"data.evidence.order {cfg.order} needs a relevance scorer")
        hyps = relevance_queries(examples, cfg.order)
        scores = iter(relevance.scores(hyps, [pool for pools in offered for pool in pools]))
    for ex, pools in zip(examples, offered, strict=True):
        ranked = []
        for c, pool in enumerate(pools):
            if cfg.order == "retriever":
                sims = next(scores) if rerank else [0.0] * len(pool)
                ranked.append(
                    _by_retriever(pool, sims, _chain_texts(ex, c), max_evidence, open_book)
                )
                continue
            in_chain = _chain_texts(ex, c) if cfg.chain_facts_first else set()
            if rerank:
                sims = next(scores)
                keys = {id(f): -s for f, s in zip(pool, sims, strict=True)}
            else:  # pool order (the sorts are stable)
                keys = {id(f): 0.0 for f in pool}
            best_open = _best_open_book(pool, keys, cfg.open_book_first, open_book)
            pool = sorted(
                pool, key=lambda f: (f.text not in in_chain, id(f) not in best_open, keys[id(f)])
            )
            ranked.append(_dedupe(pool))
        if cfg.shared_facts == "drop" and len(ranked) > 1:
            tops = [{text_key(f.text) for f in r[:max_evidence]} for r in ranked]
            shared = set.intersection(*tops)
            ranked = [[f for f in r if text_key(f.text) not in shared] for r in ranked]
        ex.facts = [r[:max_evidence] for r in ranked]


def _by_retriever(
    pool: list[RetrievedFact],
    sims: list[float],
    in_chain: set[str],
    max_evidence: int,
    open_book: frozenset[str],
) -> list[RetrievedFact]:
    """The authors' reading order (order `retriever`): Ê's best-ranked facts padded with the
    best-ranked others to max_evidence, all in rank order (open book first, then cosine)."""
    keys = {id(f): (not f.in_open_book(open_book), -s) for f, s in zip(pool, sims, strict=True)}
    ranked = _dedupe(sorted(pool, key=lambda f: keys[id(f)]))
    chain = [f for f in ranked if f.text in in_chain][:max_evidence]
    others = [f for f in ranked if f.text not in in_chain][: max_evidence - len(chain)]
    return sorted(chain + others, key=lambda f: keys[id(f)])
