"""One scored question: the answer, every choice's score, the facts the reader read and the
reasoning chains behind each choice. `to_dict` is the predictions-jsonl record that `cgr eval`
writes and the chain export reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from cgr.data.records import Chain
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact


@dataclass
class ChoicePrediction:
    label: str
    text: str
    score: float
    hypothesis: str
    facts: list[RetrievedFact] = field(default_factory=list)  # the facts read, in reading order
    chains: list[Chain] = field(default_factory=list)  # best first

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
    def from_example(cls, example: ReaderExample, scores: list[float]) -> Prediction:
        """`example` as the reader module's predict_step returns it (facts = the facts read)."""
        best = max(range(len(scores)), key=scores.__getitem__)
        chains = example.chains or [[] for _ in example.choices]
        choices = [
            ChoicePrediction(label, text, score, hyp, list(facts), list(ch))
            for label, text, score, hyp, facts, ch in zip(
                example.labels,
                example.choices,
                scores,
                example.hypotheses,
                example.facts,
                chains,
                strict=True,
            )
        ]
        gold = None if example.answer_index is None else example.labels[example.answer_index]
        return cls(example.question_id, example.question, example.labels[best], choices, gold)

    def to_dict(self) -> dict:
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
                    "chains": [ch.to_dict() for ch in c.chains],
                }
                for c in self.choices
            ],
        }
