"""One scored question: the answer, every choice's score, the facts the reader read and the
reasoning chains behind each choice. `to_dict` is the predictions-jsonl record that `cgr eval`
writes and the chain export reads."""

from __future__ import annotations

from dataclasses import dataclass, field

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
        cls, example: ReaderExample, scores: list[float], support: list[list[float]] | None = None
    ) -> Prediction:
        """`example` as the reader module's predict_step returns it (facts = the facts read);
        `support`: per choice, its chains' support (cgr.evaluation.support), chains in order."""
        from cgr.evaluation.support import contrast

        best = max(range(len(scores)), key=scores.__getitem__)
        chains = example.chains or [[] for _ in example.choices]
        support = support or [[] for _ in example.choices]
        choices = [
            ChoicePrediction(label, text, score, hyp, list(facts), list(ch), list(sup))
            for label, text, score, hyp, facts, ch, sup in zip(
                example.labels,
                example.choices,
                scores,
                example.hypotheses,
                example.facts,
                chains,
                support,
                strict=True,
            )
        ]
        gold = None if example.answer_index is None else example.labels[example.answer_index]
        why = None
        if any(support):
            read = [[f.text for f in facts] for facts in example.facts]
            why = contrast(example.labels, scores, chains, support, read)
        return cls(example.question_id, example.question, example.labels[best], choices, gold, why)

    def to_dict(self) -> dict:
        from cgr.evaluation.support import margins

        margin = margins([c.support for c in self.choices])
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
                        {**ch.to_dict(), **_support_fields(c.support, m, k)}
                        for k, ch in enumerate(c.chains)
                    ],
                }
                for c, m in zip(self.choices, margin, strict=True)
            ],
            **({"contrast": self.contrast} if self.contrast else {}),
        }


def _support_fields(support: list[float], margin: list[float], k: int) -> dict:
    """A chain's support, its margin over the other choices' best chains, and whether it is
    shown as supporting (none when it was not scored)."""
    from cgr.evaluation.support import supported

    if k >= len(support):
        return {}
    return {"support": round(support[k], 4), "margin": round(margin[k], 4),
            "supports": supported(support[k])}  # fmt: skip


def predictions(reader, scored: list[tuple[ReaderExample, list[float]]], order: str | None = None,
                candidates: int = SCORED_CHAINS, judge=None) -> list:  # fmt: skip
    """Prediction records' objects for (example, scores) pairs as predict_step returns them:
    every choice's first `candidates` chains scored for support (by `judge`, a support reader
    (cgr.reader.support_reader), else by `reader`) and, with order "support" or
    "supported_first", ranked by it (None: DEFAULT_ORDER). The one place training's eval,
    `cgr eval`, the API, explain and serve meet."""
    from cgr.evaluation.support import DEFAULT_ORDER, ORDERS, chain_support, rank_by_support

    order = order or DEFAULT_ORDER
    if order not in ORDERS:
        raise ValueError(f"chain order must be one of {ORDERS}, not {order!r}")
    examples = [ex for ex, _ in scored]
    support = (chain_support(judge or reader, examples, candidates)
               if candidates and any(ex.chains for ex in examples) else [None] * len(examples))  # fmt: skip
    out = []
    for (example, scores), sup in zip(scored, support, strict=True):
        if sup is not None and order != "search":
            sup = rank_by_support(example, sup, order)
        out.append(Prediction.from_example(example, scores, sup))
    return out
