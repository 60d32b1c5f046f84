"""Chain search (paper §2.3): DFS from question nodes to answer nodes through nodes outside the
hypothesis graph, mapped to evidence-level chains (ordered fact lists).

A step moves from a concept node through one fact to another concept of that fact (inside a fact
its AMR connects all its concepts), so a node path q -> n1 -> ... -> a with every n_i outside the
hypothesis graph is exactly a fact sequence whose neighbours share n_i; a path ends at the first
fact that holds an answer node (it is not extended past it). Bounded and
deterministic: at most `max_facts` facts per chain, `max_chains` chains, `time_budget_s`
seconds; facts and concepts are visited in sorted order and chains are ranked by length, then
by their facts' scores (or by the mean score first, `order: relevance`), then by fact ids, so the
result does not depend on pool order.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

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
    # shortest first, then by summed score; "relevance", by their facts' mean score first
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
) -> tuple[list[Chain], bool]:
    """(chains, complete): `complete` is False when the time or expansion budget cut the search."""
    cfg = cfg or ChainSearchConfig()
    scores = scores or {}
    if not graph.question_nodes or not graph.answer_nodes:
        return [], True
    deadline = time.perf_counter() + cfg.time_budget_s
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    expansions = 0
    complete = True
    outside = {c for f in graph.fact_concepts.values() for c in f} - graph.hypothesis_nodes
    outside -= hub_concepts(graph, cfg.max_link_share)
    answer_nodes = sorted(graph.answer_nodes)

    def dfs(node: str, facts: tuple[str, ...], links: tuple[str, ...]) -> None:
        nonlocal expansions, complete
        for fid in sorted(graph.facts_of(node)):
            if fid in facts:
                continue
            expansions += 1
            if expansions > cfg.max_expansions or time.perf_counter() > deadline:
                complete = False
                return
            concepts = graph.fact_concepts[fid]
            path = facts + (fid,)
            answer = next((a for a in answer_nodes if a in concepts), None)
            if answer is not None:  # a path ends at its first answer node (paper §2.2)
                found.setdefault(path, links + (answer,))
            elif len(path) < cfg.max_facts:
                for nxt in sorted(concepts & outside):
                    if nxt != node:
                        dfs(nxt, path, links + (nxt,))
                        if not complete:
                            return

    for q in sorted(graph.question_nodes):
        dfs(q, (), (q,))
        if not complete:
            break

    def key(kv):
        facts = kv[0]
        total = sum(scores.get(f, 0.0) for f in facts)
        if cfg.order == "relevance":
            return (-total / len(facts), len(facts), facts)
        return (len(facts), -total, facts)

    ranked = sorted(found.items(), key=key)
    return [Chain(facts, links) for facts, links in ranked[: cfg.max_chains]], complete


def chain_evidence(chains: list[Chain], pool_order: list[str]) -> list[str]:
    """Ê (Eq. 4): the union of chain facts, in retrieval-rank order."""
    used = {f for c in chains for f in c.facts}
    return [f for f in pool_order if f in used]
