"""One scored question: the answer, every choice's score, the facts the reader read and the
reasoning chains behind each choice. `to_dict` is the predictions-jsonl record that `cgr eval`
writes and the chain export reads."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache

from cgr.data.records import Chain
from cgr.reader.examples import SCORED_CHAINS, ReaderExample
from cgr.retrieval.base import RetrievedFact


@dataclass
class ChoicePrediction:
    label: str
    text: str
    score: float
    hypothesis: str
    facts: list[RetrievedFact] = field(default_factory=list)  # the facts read, in reading order
    chains: list[Chain] = field(default_factory=list)  # best first
    # the reader's support of each of the first len(support) chains (cgr.evaluation.support)
    support: list[float] = field(default_factory=list)
    # each scored chain's reading: the reader's probabilities over all choices (its label)
    readings: list[list[float]] = field(default_factory=list)

    @property
    def fact_texts(self) -> list[str]:
        return [f.text for f in self.facts]


@dataclass
class Prediction:
    id: str
    question: str
    answer: str  # the predicted label
    choices: list[ChoicePrediction]
    gold: str | None = None  # the answer key's label, when the file has one
    contrast: dict | None = None  # why the answer and not the runner-up (support.contrast)
    threshold: float | None = None  # the margin a supporting chain needs (None: support.MARGIN)

    @property
    def correct(self) -> bool | None:
        return None if self.gold is None else self.answer == self.gold

    @property
    def answer_choice(self) -> ChoicePrediction:
        return next(c for c in self.choices if c.label == self.answer)

    @property
    def scores(self) -> dict[str, float]:
        return {c.label: c.score for c in self.choices}

    @classmethod
    def from_example(
        cls, example: ReaderExample, scores: list[float], support: list[list[float]] | None = None,
        readings: list[list[list[float]]] | None = None, threshold: float | None = None,
    ) -> Prediction:  # fmt: skip
        """`example` as the reader module's predict_step returns it (facts = the facts read);
        `support`: per choice, its chains' support, and `readings` their readings
        (cgr.evaluation.support.chain_readings), chains in order."""
        from cgr.evaluation.support import LEAD, MARGIN, contrast

        threshold = MARGIN if threshold is None else threshold
        best = max(range(len(scores)), key=scores.__getitem__)
        chains = example.chains or [[] for _ in example.choices]
        support = support or [[] for _ in example.choices]
        readings = readings or [[] for _ in example.choices]
        choices = [
            ChoicePrediction(label, text, score, hyp, list(facts), list(ch), list(sup), list(rows))
            for label, text, score, hyp, facts, ch, sup, rows in zip(
                example.labels,
                example.choices,
                scores,
                example.hypotheses,
                example.facts,
                chains,
                support,
                readings,
                strict=True,
            )
        ]
        gold = None if example.answer_index is None else example.labels[example.answer_index]
        why = None
        if any(readings):
            read = [[f.text for f in facts] for facts in example.facts]
            why = contrast(example.labels, scores, chains, readings, read, LEAD)
        return cls(example.question_id, example.question, example.labels[best], choices, gold,
                   why, threshold)  # fmt: skip

    def to_dict(self) -> dict:
        from cgr.evaluation.support import MARGIN, margins

        margin = margins([c.support for c in self.choices])
        labels = [c.label for c in self.choices]
        threshold = MARGIN if self.threshold is None else self.threshold
        return {
            "id": self.id,
            "question": self.question,
            "predicted": self.answer,
            "answer": self.gold,
            "correct": self.correct,
            "choices": [
                {
                    "label": c.label,
                    "text": c.text,
                    "score": c.score,
                    "hypothesis": c.hypothesis,
                    "facts": [f.to_dict() for f in c.facts],
                    "chains": [
                        {**ch.to_dict(), **_support_fields(c, i, m, k, labels, threshold)}
                        for k, ch in enumerate(c.chains)
                    ],
                }
                for i, (c, m) in enumerate(zip(self.choices, margin, strict=True))
            ],
            **({"contrast": self.contrast} if self.contrast else {}),
        }


def _support_fields(choice: ChoicePrediction, index: int, margin: list[float], k: int,
                   labels: list[str], threshold: float) -> dict:  # fmt: skip
    """A chain's support, its margin over the other choices' best chains, and its label with
    the lead of its reading and the margin threshold ("not judged" alone: a chain past the ones
    scored)."""
    from cgr.evaluation.support import chain_label, label_text

    if k >= len(choice.support):
        return {"label": "not judged"} if choice.support else {}
    row = choice.readings[k] if k < len(choice.readings) else []
    label, lead, favoured = chain_label(row, index, margin[k], threshold)
    return {"support": round(choice.support[k], 4), "margin": round(margin[k], 4),
            "label": label_text(label, favoured, labels), "lead": round(lead, 4),
            "threshold": threshold, "supports": label == "supports",
            **({"favours": labels[favoured]} if favoured is not None else {})}  # fmt: skip


def predictions(reader, scored: list[tuple[ReaderExample, list[float]]], order: str | None = None,
                candidates: int = SCORED_CHAINS, judge=None,
                threshold: float | None = None) -> list:  # fmt: skip
    """Prediction records' objects for (example, scores) pairs as predict_step returns them:
    every choice's first `candidates` chains scored for support (by `judge`, a support reader
    (cgr.reader.support_reader), else by `reader`) and, with order "support" or
    "supported_first", ranked by it (None: DEFAULT_ORDER). The one place training's eval,
    `cgr eval`, the API, explain and serve meet."""
    from cgr.evaluation.support import (
        DEFAULT_ORDER,  # fmt: skip
        MARGIN,
        ORDERS,
        chain_readings,
        rank_by_support,
        supports_of,
    )

    order = order or DEFAULT_ORDER
    if threshold is None:
        _say_default_margin(MARGIN)
        threshold = MARGIN
    if order not in ORDERS:
        raise ValueError(f"chain order must be one of {ORDERS}, not {order!r}")
    examples = [ex for ex, _ in scored]
    readings = (chain_readings(judge or reader, examples, candidates)
                if candidates and any(ex.chains for ex in examples) else [None] * len(examples))  # fmt: skip
    out = []
    for (example, scores), rows in zip(scored, readings, strict=True):
        sup = None
        if rows is not None:
            sup = supports_of(rows)
            if order != "search":
                sup = rank_by_support(example, sup, order, rows, threshold)
        out.append(Prediction.from_example(example, scores, sup, rows, threshold))
    return out


@lru_cache(maxsize=1)
def _say_default_margin(margin: float) -> None:
    """Once a process: the labels use the stated default, not a threshold fitted to the model."""
    logging.getLogger(__name__).info(
        "chain labels: a chain supports its choice at a margin of %.2f (the stated default; no "
        "threshold is fitted to this model)", margin)  # fmt: skip
