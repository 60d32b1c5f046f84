"""Chain search (paper §2.3): DFS from question nodes to answer nodes through nodes outside the
hypothesis graph, mapped to evidence-level chains (ordered fact lists).

A step moves from a concept node through one fact to another concept of that fact (inside a fact
its AMR connects all its concepts), so a node path q -> n1 -> ... -> a with every n_i outside the
hypothesis graph is exactly a fact sequence whose neighbours share n_i; a path ends at the first
fact that holds an answer node (it is not extended past it). Bounded and
deterministic: at most `max_facts` facts per chain, `max_chains` chains, `time_budget_s`
seconds; facts and concepts are visited in sorted order and chains are ranked by length, then
by their facts' scores (or by the mean score first, `order: relevance`, after the best score of
an open-book fact on the chain, `order: open_book`), then by fact ids, so the result does not
depend on pool order.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from cgr.chains.graph import SemanticGraph
from cgr.data.records import Chain

__all__ = ["Chain", "ChainSearchConfig", "chain_evidence", "find_chains"]  # Chain: re-exported


@dataclass
class ChainSearchConfig:
    """`max_link_share`: a concept outside the hypothesis that more than this share of the
    pool's facts mention (a hub such as "energy" or "water" in a science pool) cannot link two
    facts; 1.0 lets every concept link (the paper)."""

    max_facts: int = 3
    max_chains: int = 20
    time_budget_s: float = 0.5
    max_expansions: int = 200_000
    max_link_share: float = 1.0
    # how chains rank (which is shown first, which make Ê when it takes the best N): "length",
    # shortest first, then by summed score; "relevance", by their facts' mean score first;
    # "open_book", by the best score of a `preferred` (open-book) fact on the chain, then as
    # "relevance"; chains without one come last
    order: str = "length"


def hub_concepts(graph: SemanticGraph, max_share: float) -> set[str]:
    """Concepts outside the hypothesis mentioned by more than `max_share` of the pool's facts."""
    if max_share >= 1.0 or not graph.fact_concepts:
        return set()
    limit = max_share * len(graph.fact_concepts)
    counts = Counter(
        c for concepts in graph.fact_concepts.values() for c in concepts - graph.hypothesis_nodes
    )
    return {c for c, n in counts.items() if n > limit}


def find_chains(
    graph: SemanticGraph,
    scores: dict[str, float] | None = None,
    cfg: ChainSearchConfig | None = None,
    preferred: frozenset[str] | set[str] = frozenset(),
) -> tuple[list[Chain], bool]:
    """(chains, complete): `complete` is False when the time or expansion budget cut the search.
    `preferred`: fact ids that put a chain first under `order: open_book` (the open book's).

    The paper's DFS over concept nodes, searched by fact paths: a node path q -> n1 -> ... -> a
    is a fact path f1 .. fk with q in f1, each n_i shared by f_i and f_i+1 outside the
    hypothesis, n_i != n_i-1 (a step leaves a fact by another concept than it came in by), and
    the answer node in fk only. Each fact path is visited once, with the set of concepts it can
    have been entered by, instead of once per link sequence (the node DFS visited a path once
    per combination of shared concepts: ~4,000 calls per OBQA hypothesis); its links are the
    ones the node DFS finds first (the smallest in sorted order). Same chains, same links."""
    cfg = cfg or ChainSearchConfig()
    scores = scores or {}
    if not graph.question_nodes or not graph.answer_nodes:
        return [], True
    deadline = time.perf_counter() + cfg.time_budget_s
    concepts = graph.fact_concepts
    outside = {c for f in concepts.values() for c in f} - graph.hypothesis_nodes
    outside -= hub_concepts(graph, cfg.max_link_share)
    answer_nodes = sorted(graph.answer_nodes)
    answer_of = {f: next((a for a in answer_nodes if a in c), None) for f, c in concepts.items()}
    neighbours: dict[
        str, dict[str, set[str]]
    ] = {}  # fact -> next fact -> the concepts linking them

    def linked(fid: str) -> dict[str, set[str]]:
        if fid not in neighbours:
            out: dict[str, set[str]] = {}
            for c in concepts[fid] & outside:
                for g in graph.facts_of(c):
                    if g != fid:
                        out.setdefault(g, set()).add(c)
            neighbours[fid] = out
        return neighbours[fid]

    found: list[tuple[str, ...]] = []
    expansions, complete = 0, True
    # a path not yet at an answer -> the concepts its last fact can have been entered by (None:
    # from a question node, which is never a link, so every link out of it is open)
    level: dict[tuple[str, ...], set[str] | None] = {}
    for fid in sorted({f for q in graph.question_nodes for f in graph.facts_of(q)}):
        expansions += 1
        if answer_of[fid] is not None:
            found.append((fid,))
        elif cfg.max_facts > 1:
            level[(fid,)] = None
    for _ in range(2, cfg.max_facts + 1):
        following: dict[tuple[str, ...], set[str] | None] = {}
        for path, entered in level.items():
            for g, shared in sorted(linked(path[-1]).items()):
                if g in path:
                    continue
                # leaving by concept c needs an entry other than c
                links = shared - entered if entered is not None and len(entered) == 1 else shared
                if not links:
                    continue
                expansions += 1
                if expansions > cfg.max_expansions or time.perf_counter() > deadline:
                    complete = False
                    break
                new = path + (g,)
                if answer_of[g] is not None:
                    found.append(new)
                elif len(new) < cfg.max_facts:
                    following[new] = links
            if not complete:
                break
        if not complete:
            break
        level = following

    def key(facts: tuple[str, ...]):
        total = sum(scores.get(f, 0.0) for f in facts)
        if cfg.order in ("relevance", "open_book"):
            # open_book: by the best score of an open-book fact on the chain (none: last)
            book = [
                scores.get(f, 0.0) for f in facts if f in preferred and cfg.order == "open_book"
            ]
            return (-max(book, default=-math.inf), -total / len(facts), len(facts), facts)
        return (len(facts), -total, facts)

    ranked = sorted(found, key=key)[: cfg.max_chains]
    return [Chain(facts, _first_links(graph, facts, outside)) for facts in ranked], complete


def _first_links(
    graph: SemanticGraph, facts: tuple[str, ...], outside: set[str]
) -> tuple[str, ...]:
    """The node path the node DFS meets first for a fact path: the smallest question node of
    the first fact, then the smallest links in order with no link repeating the one before,
    then the smallest answer node of the last fact (a node the fact reached by similarity
    only where it states none: "disease ≈ illness")."""
    concepts = graph.fact_concepts
    start = graph.node_label(facts[0], graph.question_nodes)
    options = [sorted(concepts[a] & concepts[b] & outside) for a, b in pairwise(facts)]

    def pick(i: int, before: str) -> tuple[str, ...] | None:
        if i == len(options):
            return ()
        for c in options[i]:
            if c != before and (rest := pick(i + 1, c)) is not None:
                return (c, *rest)
        return None

    end = graph.node_label(facts[-1], graph.answer_nodes)
    return (start, *(pick(0, start) or ()), end)


def chain_evidence(chains: list[Chain], pool_order: list[str]) -> list[str]:
    """Ê (Eq. 4): the union of chain facts, in retrieval-rank order."""
    used = {f for c in chains for f in c.facts}
    return [f for f in pool_order if f in used]
