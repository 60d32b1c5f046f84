"""A support reader: a multiple-choice reader trained to judge one chain, so that a chain's
support (cgr/evaluation/support.py) is the judgement of a model that learned what a fact
that answers a question looks like, and what one that only shares its words looks like.

Why a reader of its own: the support of a chain is p(choice | the chain's facts alone), and
the trained reader learned to answer from a choice's 15–25 facts, not from one chain's one or
two; it separates right from wrong choices with AUC 0.71 on OBQA dev and 0.56 on ARC dev
(benchmarks/chain_support.py). The support reader reads what support offers it, one chain's
facts offered to every choice, and is trained on the training file's questions:

* a gold fact of the question (OBQA's fact1, WorldTree's explanation rows), read by every
  choice, with the answer as the target: a fact that answers the question;
* for `negatives` wrong choices, a book fact near "question wrong choice" (the base encoder)
  that leans to the wrong choice over the answer and is none of the question's gold facts,
  read by every choice, with every choice equally likely as the target (soft cross-entropy):
  a fact that shares a wrong choice's words and answers nothing, as link-word chains do.

`cgr support-reader --config CFG --out DIR` (cgr.training.support_reader) saves a Hugging
Face multiple-choice folder and SUPPORT_FILE (what it was trained on, and the held-out
training questions a threshold is calibrated on: benchmarks/chain_verifier.py
--support-reader); cgr.pretrained.support_reader opens one (checked before torch loads).
Measured (docs/chains.md#support): one epoch of MiniLM judging OBQA dev's default chains
tells right from wrong choices with AUC 0.68, below the trained reader's own support (0.71),
so nothing uses it unless `--support-reader` names one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cgr.data.records import Question, text_key
from cgr.validation import at_least, positive

if TYPE_CHECKING:
    from cgr.reader.examples import ReaderExample

SUPPORT_FILE = "support_reader.json"  # beside the model's files: how it was trained


@dataclass
class SupportReaderConfig:
    epochs: int = 1
    batch_size: int = 16
    lr: float = 5e-5
    max_length: int = 128  # question + choice + one chain's facts
    seed: int = 0
    negatives: int = 1  # wrong choices per question read with their best non-gold fact
    # gold facts per question read as answering it: the ones closest to "question answer"
    # (WorldTree lists ~6 per question, most of which ground a word rather than answer; a
    # chain shows one or two facts; OBQA has one)
    max_gold: int = 2
    hold_out: int = 400  # training questions left out, to calibrate a threshold on

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "max_length"):
            at_least(f"support reader {name}", getattr(self, name), 1)
        at_least("support reader max_gold", self.max_gold, 1)
        for name in ("negatives", "hold_out"):
            at_least(f"support reader {name}", getattr(self, name), 0)
        positive("support reader lr", self.lr)


Row = tuple["ReaderExample", list[float]]  # what every choice reads, and the target over choices


def _reading(q: Question, fact: str) -> ReaderExample:
    """`fact` alone offered to every choice of `q`, as support offers a chain's facts."""
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    choices = [c.text for c in q.choices]
    read = [RetrievedFact(f"{q.id}:support", fact, 1.0, 1, "chain")]
    return ReaderExample(q.id, q.stem, [c.label for c in q.choices], choices, choices,
                         facts=[read] * len(choices), answer_index=q.answer_index)  # fmt: skip


def support_rows(
    questions: list[Question], book: list[str], encode, negatives: int, seed: int = 0,
    max_gold: int = SupportReaderConfig.max_gold,
) -> list[Row]:  # fmt: skip
    """Per question with an answer and gold facts: its `max_gold` gold facts closest to
    "question answer", each with the answer as target, and for `negatives` wrong choices a
    non-gold book fact with a uniform target (`encode`: texts -> unit vectors)."""
    import numpy as np

    rng = random.Random(seed)
    asked = [q for q in questions if q.answer_index is not None and q.gold_facts]
    rows: list[Row] = []
    wrong: list[tuple[Question, str, str]] = []
    for q in asked:
        n = len(q.choices)
        for fact in closest_gold(q, encode, max_gold):
            rows.append((_reading(q, fact), [float(i == q.answer_index) for i in range(n)]))
        others = [i for i in range(n) if i != q.answer_index]
        right = f"{q.stem} {q.choices[q.answer_index].text}"
        for i in rng.sample(others, min(negatives, len(others))):
            wrong.append((q, f"{q.stem} {q.choices[i].text}", right))
    if wrong and book:
        facts = np.asarray(encode(book))
        to_wrong = np.asarray(encode([w for _, w, _ in wrong])) @ facts.T
        to_right = np.asarray(encode([r for _, _, r in wrong])) @ facts.T
        for (q, _, _), w, r in zip(wrong, to_wrong, to_right, strict=True):
            rows.append(
                (_reading(q, link_fact(q, book, w, r)), [1.0 / len(q.choices)] * len(q.choices))
            )
    rng.shuffle(rows)
    return rows


def closest_gold(q: Question, encode, count: int) -> list[str]:
    """The question's `count` gold facts closest to "question answer" (all when no more)."""
    gold = list(dict.fromkeys(q.gold_facts))
    if len(gold) <= count:
        return gold
    import numpy as np

    vectors = np.asarray(encode([f"{q.stem} {q.choices[q.answer_index].text}", *gold]))
    near = (vectors[1:] @ vectors[0]).argsort()[::-1][:count]
    return [gold[i] for i in sorted(near)]


def link_fact(q: Question, book: list[str], to_wrong, to_right, top: int = 20) -> str:
    """Of the `top` non-gold facts closest to "question wrong choice", the one that leans most
    to the wrong choice over the right (cosine to it minus cosine to "question answer"): a
    fact that shares the wrong choice's words, as a link-word chain does. The closest fact
    alone is often one that answers the question (the stem dominates the query) without
    being listed as gold."""
    gold = {text_key(f) for f in q.gold_facts}
    near = [i for i in to_wrong.argsort()[::-1][: top + len(gold)] if text_key(book[i]) not in gold]
    return book[max(near[:top], key=lambda i: to_wrong[i] - to_right[i])]


def held_out(questions: list[Question], count: int, seed: int) -> set[str]:
    """The ids of `count` answered questions with gold facts the reader does not train on."""
    ids = [q.id for q in questions if q.answer_index is not None and q.gold_facts]
    return set(random.Random(seed).sample(ids, min(count, len(ids))))
