"""What the reader reads for one question: per choice, its hypothesis and its evidence facts."""

from __future__ import annotations

from dataclasses import dataclass, field

from cgr.retrieval.base import RetrievedFact


@dataclass
class ReaderExample:
    question_id: str
    question: str
    labels: list[str]
    choices: list[str]
    hypotheses: list[str]
    facts: list[list[RetrievedFact]] = field(default_factory=list)  # per choice, reader order
    answer_index: int | None = None
    # per choice, the reasoning chains found for its hypothesis (Chain.to_dict()), if any
    chains: list[list[dict]] = field(default_factory=list)
    gold_facts: list[str] = field(default_factory=list)  # ordered gold chain (texts), for L_S
    # per choice, the texts of Ê (the facts of its best `evidence_chains` chains), if chains ran
    chain_facts: list[list[str]] = field(default_factory=list)
