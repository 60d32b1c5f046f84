"""pool -> AMR graphs -> chains -> Ê: attaches each choice's reasoning chains and Ê (the facts
of its best chains) to each example, the middle of the data flow; the pool stays as retrieved
and cgr.evidence.selection turns pool + Ê into the facts read."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from tqdm.auto import tqdm

from cgr.amr.parsers import AMRConfig, CachedParser
from cgr.chains.concepts import AMRConcepts, amr_concepts
from cgr.chains.graph import build_semantic_graph, question_concepts
from cgr.chains.search import ChainSearchConfig, chain_evidence, find_chains
from cgr.errors import ConfigError
from cgr.reader.examples import ReaderExample
from cgr.validation import at_least, positive

log = logging.getLogger(__name__)


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
    merge_roots: bool = True
    pad_evidence: bool = True
    # Snowball-stem every concept ("collection" meets "collect"); off here so checkpoints saved
    # before this option read their chains as they were trained; configs/chains turns it on
    stem_concepts: bool = False
    # concepts that more than this share of a hypothesis' pool facts mention do not link facts
    # (1.0: every concept links, the paper; README: chains)
    max_link_share: float = 1.0
    # N > 0: the kept chains (export, explanations, CGR's losses) use only a hypothesis's N most
    # relevant pool facts (the reader's order); Ê still comes from all chains. Why: wrong answers
    # find chains through weak facts as often as right ones (README: chains); 0 is the paper
    explain_top_facts: int = 0

    def __post_init__(self) -> None:
        for name in ("max_facts", "max_chains", "evidence_chains"):
            at_least(f"data.chains.{name}", getattr(self, name), 1)
        at_least("data.chains.explain_top_facts", self.explain_top_facts, 0)
        positive("data.chains.time_budget_s", self.time_budget_s)
        positive("data.chains.max_link_share", self.max_link_share)
        if self.max_link_share > 1.0:
            raise ConfigError(
                f"data.chains.max_link_share must be <= 1, not {self.max_link_share!r}"
            )


class ChainBuilder:
    def __init__(self, cfg: ChainConfig, progress: bool = True):
        self.cfg, self.progress = cfg, progress
        self.parser = CachedParser(cfg.amr, progress=progress)
        self.search = ChainSearchConfig(
            cfg.max_facts,
            max(cfg.max_chains, cfg.evidence_chains),
            cfg.time_budget_s,
            max_link_share=cfg.max_link_share,
        )
        self.counters: Counter[str] = Counter()
        self.search_seconds: list[float] = []

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
        concepts = {
            s: amr_concepts(g, self.cfg.merge_roots, self.cfg.stem_concepts)
            for s, g in graphs.items()
        }
        self.counters["facts_without_concepts"] += sum(
            not concepts[f.text].concepts for ex in examples for pool in ex.pool for f in pool
        )
        keys = relevance or [None] * len(examples)
        for ex, ex_keys in tqdm(
            zip(examples, keys, strict=True), total=len(examples), desc="searching chains",
            unit="q", disable=not self.progress,
        ):  # fmt: skip
            self._attach_one(ex, concepts, ex_keys)
        log.info("chains: %s", dict(self.counters))

    def _attach_one(
        self,
        ex: ReaderExample,
        concepts: dict[str, AMRConcepts],
        relevance: list[dict[str, float]] | None,
    ) -> None:
        hyps = [concepts[h] for h in ex.hypotheses]
        q_nodes = question_concepts(hyps)
        ex.chains, ex.chain_facts, any_chain = [], [], False
        for i, (hyp, pool) in enumerate(zip(hyps, ex.pool, strict=True)):
            start = time.perf_counter()
            facts = {f.fact_id: concepts[f.text] for f in pool}
            graph = build_semantic_graph(hyp, q_nodes, facts)
            if not graph.answer_nodes:
                self.counters["hypotheses_without_answer_nodes"] += 1
            chains, complete = find_chains(graph, {f.fact_id: f.score for f in pool}, self.search)
            self.search_seconds.append(time.perf_counter() - start)
            self.counters["searches_cut_by_budget"] += not complete
            self.counters["hypotheses"] += 1
            self.counters["hypotheses_with_chains"] += bool(chains)
            any_chain |= bool(chains)
            text = {f.fact_id: f.text for f in pool}
            kept = self._explained(chains, pool, relevance[i] if relevance else None)
            ex.chains.append([replace(c, texts=tuple(text[f] for f in c.facts)) for c in kept])
            chosen = chain_evidence(chains[: self.cfg.evidence_chains], [f.fact_id for f in pool])
            ex.chain_facts.append([text[f] for f in chosen])
        self.counters["questions_without_chains"] += not any_chain

    def _explained(self, chains: list, pool: list, relevance: dict[str, float] | None) -> list:
        """The chains kept for export and the losses: the best `max_chains`, through the
        hypothesis's `explain_top_facts` most relevant facts only when that is set."""
        n = self.cfg.explain_top_facts
        if n > 0:
            key = relevance or {f.fact_id: f.score for f in pool}
            top = {f.fact_id for f in sorted(pool, key=lambda f: -key.get(f.fact_id, 0.0))[:n]}
            found, chains = bool(chains), [c for c in chains if set(c.facts) <= top]
            self.counters["hypotheses_with_chains_only_beyond_top_facts"] += found and not chains
        return chains[: self.cfg.max_chains]
