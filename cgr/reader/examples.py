"""What the reader reads for one question: per choice, its hypothesis and its evidence facts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cgr.data.records import Chain
from cgr.retrieval.base import RetrievedFact


@dataclass
class ReaderExample:
    """Each stage fills its own field and leaves the earlier ones as they were: retrieval the
    `pool`, the chain search `chains` and `chain_facts` (Ê), evidence selection `facts`."""

    question_id: str
    question: str
    labels: list[str]
    choices: list[str]
    hypotheses: list[str]
    facts: list[list[RetrievedFact]] = field(default_factory=list)  # per choice, what is read
    answer_index: int | None = None
    chains: list[list[Chain]] = field(default_factory=list)  # per choice, best first, if searched
    gold_facts: list[str] = field(default_factory=list)  # ordered gold chain (texts), for L_S
    # per choice, the texts of Ê (the facts of its best `evidence_chains` chains), if chains ran
    chain_facts: list[list[str]] = field(default_factory=list)
    pool: list[list[RetrievedFact]] = field(default_factory=list)  # per choice, as retrieved


# chains per choice a chain's support is computed for (the search's best; support ranks these)
# and the chain reading term draws from
SCORED_CHAINS = 10


def reading_only(example: ReaderExample, chain: Chain) -> ReaderExample | None:
    """The example with one chain's facts, and nothing else, offered to every choice: what
    the reader's support for a chain reads (cgr/evaluation/support.py) and what the chain
    reading term trains it on. None for a chain not tied to its pool's texts."""
    facts = [RetrievedFact(fid, text, 1.0, 1, "chain")
             for fid, text in zip(chain.facts, chain.texts, strict=False)]  # fmt: skip
    return replace(example, facts=[facts] * len(example.choices)) if facts else None
