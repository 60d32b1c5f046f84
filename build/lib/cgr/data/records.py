"""Plain records that every later stage (retrieval, chains, reader, export) passes along."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field

_SPACES = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalize_fact_text(text: str) -> str:
    """Collapse white space so that the same fact written twice gets the same id."""
    return _SPACES.sub(" ", text).strip()


def text_key(text: str) -> str:
    """A fact's text without case and punctuation: the same sentence in two files (the open
    book and the science corpus, a gold `fact1` and the corpus) compares equal."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def fact_id(text: str) -> str:
    """A stable content hash: the same text gets the same id whatever file or order it came from."""
    return hashlib.sha1(normalize_fact_text(text).lower().encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Fact:
    id: str
    text: str


@dataclass
class Choice:
    label: str
    text: str


@dataclass
class Question:
    """A multiple-choice question. `answer_index` is None for unlabelled (test) files."""

    id: str
    stem: str
    choices: list[Choice]
    answer_index: int | None
    gold_facts: list[str] = field(default_factory=list)
    source: str = ""

    @property
    def answer_label(self) -> str | None:
        return None if self.answer_index is None else self.choices[self.answer_index].label


@dataclass
class Paragraph:
    title: str
    text: str
    is_supporting: bool = False


@dataclass
class OpenQuestion:
    """A question without choices (HotpotQA style): answered by generation, scored by EM/F1."""

    id: str
    question: str
    answers: list[str]
    paragraphs: list[Paragraph] = field(default_factory=list)
    source: str = ""
    # the dataset's own question type, where it labels one: HotpotQA / 2Wiki `type` (bridge,
    # comparison, ...), MuSiQue's hop count from its id (2hop, 3hop, 4hop); "" otherwise
    kind: str = ""


@dataclass
class Chain:
    """A reasoning chain: facts from the question side to the answer side, each sharing a
    concept with the next. `links`: len(facts) + 1 concepts (question concept, the shared
    concepts, answer concept); `texts`: the facts' sentences, once the chain is tied to a pool.
    Not frozen: Lightning walks (and rebuilds) the dataclasses inside a batch."""

    facts: tuple[str, ...]
    links: tuple[str, ...]
    texts: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {k: list(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, row: dict) -> Chain:
        return cls(tuple(row["facts"]), tuple(row["links"]), tuple(row.get("texts", ())))
