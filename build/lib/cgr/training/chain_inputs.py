"""What CGR's chain losses read from a batch, built once per batch on the CPU: the gold
hypotheses, the gold chains for L_S, the sampled chains for L_mle / L_rl laid out as a fixed
number of rows per hypothesis (equal shapes on every DDP rank), and Ê for L_global (`ChainInputs`,
plain Python); and each group of rows as the index tensors the losses gather with (`ChainRows`),
so a step moves a few small tensors to the device instead of writing it element by element."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from cgr.reader.examples import ReaderExample


@dataclass
class ChainInputs:
    hypotheses: list[str]  # the gold answer's hypothesis, per question
    gold: list[list[str]]  # per question, its gold facts (L_S), at most max_chain_facts
    rows: list[list[str]]  # chains_per_hypothesis rows per question; [] pads a missing chain
    row_question: list[int]  # the question each row belongs to
    row_weights: list[float]  # 1 / (chains sampled for its question); 0 for padding
    evidence: list[list[str]]  # per question, Ê of the gold answer (sorted texts), L_global

    @property
    def questions_with_chains(self) -> int:
        return len({q for q, w in zip(self.row_question, self.row_weights, strict=True) if w})

    @property
    def fact_texts(self) -> list[str]:
        """Every fact text some loss term encodes (duplicates included)."""
        return (
            [t for r in self.rows for t in r]
            + [t for e in self.evidence for t in e]
            + [t for g in self.gold for t in g]
        )

    @classmethod
    def from_batch(
        cls,
        batch: list[ReaderExample],
        max_chain_facts: int,
        chains_per_hypothesis: int,
        seed: str,
    ) -> ChainInputs:
        """`seed` (e.g. sample seed and epoch) makes the chains sampled for a question the same
        on every rank and after a resume."""
        rows, row_question, row_weights = [], [], []
        for i, ex in enumerate(batch):
            sampled = sample_chains(ex, max_chain_facts, chains_per_hypothesis, seed)
            for j in range(chains_per_hypothesis):
                rows.append(sampled[j] if j < len(sampled) else [])
                row_question.append(i)
                row_weights.append(1.0 / len(sampled) if j < len(sampled) else 0.0)
        return cls(
            hypotheses=[ex.hypotheses[ex.answer_index] for ex in batch],
            gold=[ex.gold_facts[:max_chain_facts] for ex in batch],
            rows=rows,
            row_question=row_question,
            row_weights=row_weights,
            evidence=[sorted(set(gold_evidence(ex))) for ex in batch],
        )


def gold_chains(ex: ReaderExample) -> list:
    return ex.chains[ex.answer_index] if ex.chains else []


def gold_evidence(ex: ReaderExample) -> list[str]:
    """Ê of the gold answer as Eq. 4 defines it and the reader reads it: the facts of all its
    chains (`chain_facts`), not only of the chains kept for export and sampling."""
    if ex.chain_facts and ex.answer_index < len(ex.chain_facts):
        return list(ex.chain_facts[ex.answer_index])
    return [t for c in gold_chains(ex) for t in c.texts]


def sample_chains(ex: ReaderExample, max_facts: int, n: int, seed: str) -> list[list[str]]:
    """Up to `n` of the gold answer's chains (fact texts, cut at `max_facts`), drawn without
    replacement when it has more."""
    texts = [list(c.texts[:max_facts]) for c in gold_chains(ex) if c.texts]
    if len(texts) <= n:
        return texts
    return random.Random(f"{seed}:{ex.question_id}").sample(texts, n)


@dataclass
class ChainRows:
    """Rows of chains as the chain losses read them (Eq. 5): q_1 = h, q_t = [q_{t-1}; SEP; e_{t-1}].

    query_texts: every step's query, row by row; positions (n, 2): the (row, step) of each;
    facts (rows, T): the row of each step's fact in the batch's fact vectors, -1 past the end."""

    query_texts: list[str]
    positions: torch.Tensor
    facts: torch.Tensor

    @classmethod
    def build(
        cls,
        hypotheses: list[str],
        rows: list[list[str]],
        index: dict[str, int],
        max_facts: int,
        sep: str,
        reverse: bool = False,
    ) -> ChainRows:
        """`reverse`: each chain read from its answer end (the backward term of L_mle / L_rl)."""
        texts, positions = [], []
        facts = torch.full((len(rows), max_facts), -1, dtype=torch.long)
        for i, (h, chain) in enumerate(zip(hypotheses, rows, strict=True)):
            chain = list(reversed(chain)) if reverse else list(chain)
            query = h
            for t, fact in enumerate(chain):
                texts.append(query)
                positions.append((i, t))
                query = f"{query} {sep} {fact}"
            if chain:
                facts[i, : len(chain)] = torch.tensor([index[f] for f in chain])
        pos = torch.tensor(positions, dtype=torch.long).view(-1, 2)
        return cls(texts, pos, facts)
