"""pool -> AMR graphs -> chains -> Ê: attaches reasoning chains and the reader's evidence to
each example (the middle of the data flow)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from cgr.amr.parsers import AMRConfig, CachedParser
from cgr.chains.concepts import AMRConcepts, amr_concepts
from cgr.chains.graph import build_semantic_graph, question_concepts
from cgr.chains.search import ChainSearchConfig, chain_evidence, find_chains
from cgr.reader.examples import ReaderExample
from cgr.validation import at_least, positive

log = logging.getLogger(__name__)


@dataclass
class ChainConfig:
    """`data.chains`. `pad_evidence: true` (default, as the authors' code) fills Ê up to the
    reader's `max_evidence` with the best pool facts, chain facts first: a small reader then never
    reads an empty context when no chain exists. `false` gives the paper's Ê (chain facts only).

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

    def __post_init__(self) -> None:
        for name in ("max_facts", "max_chains", "evidence_chains"):
            at_least(f"data.chains.{name}", getattr(self, name), 1)
        positive("data.chains.time_budget_s", self.time_budget_s)


class ChainBuilder:
    def __init__(self, cfg: ChainConfig, progress: bool = True):
        self.cfg, self.progress = cfg, progress
        self.parser = CachedParser(cfg.amr, progress=progress)
        self.search = ChainSearchConfig(
            cfg.max_facts, max(cfg.max_chains, cfg.evidence_chains), cfg.time_budget_s
        )
        self.counters: Counter[str] = Counter()
        self.search_seconds: list[float] = []

    def attach(self, examples: list[ReaderExample], max_evidence: int | None) -> None:
        """Sets each example's chains and its facts to Ê (chain facts first, in pool order,
        padded with the other pool facts when `pad_evidence`), cut at `max_evidence` (None:
        uncut; cgr.evidence.selection orders and cuts afterwards)."""
        sentences = sorted(
            {h for ex in examples for h in ex.hypotheses}
            | {f.text for ex in examples for pool in ex.facts for f in pool}
        )
        graphs = dict(zip(sentences, self.parser.parse(sentences), strict=True))
        self.counters["failed_parses"] += sum(g is None for g in graphs.values())
        concepts = {s: amr_concepts(g, self.cfg.merge_roots) for s, g in graphs.items()}
        self.counters["facts_without_concepts"] += sum(
            not concepts[f.text].concepts for ex in examples for pool in ex.facts for f in pool
        )
        for ex in tqdm(examples, desc="searching chains", unit="q", disable=not self.progress):
            self._attach_one(ex, concepts, max_evidence)
        log.info("chains: %s", dict(self.counters))

    def _attach_one(
        self, ex: ReaderExample, concepts: dict[str, AMRConcepts], max_evidence: int | None
    ) -> None:
        hyps = [concepts[h] for h in ex.hypotheses]
        q_nodes = question_concepts(hyps)
        ex.chains, ex.chain_facts, evidence, any_chain = [], [], [], False
        for hyp, pool in zip(hyps, ex.facts, strict=True):
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
            by_id = {f.fact_id: f for f in pool}
            ex.chains.append(
                [
                    {**c.to_dict(), "texts": [by_id[f].text for f in c.facts]}
                    for c in chains[: self.cfg.max_chains]
                ]
            )
            chosen = chain_evidence(chains[: self.cfg.evidence_chains], [f.fact_id for f in pool])
            ex.chain_facts.append([by_id[f].text for f in chosen])
            if self.cfg.pad_evidence:
                in_chains = set(chosen)  # built once: the pool has ~100 facts per hypothesis
                chosen += [f.fact_id for f in pool if f.fact_id not in in_chains]
            evidence.append([by_id[f] for f in chosen[:max_evidence]])
        self.counters["questions_without_chains"] += not any_chain
        ex.facts = evidence
