"""Retrieval keys: the corpus units RICHES may decode verbatim, each mapped back to its paragraph.

Kinds (paper §3.4, Table 3): `sentence` (each sentence of a paragraph), `paragraph` (its whole
text), `title` (its title; the paragraph is what the title names). The paper's best key,
propositions, needs an LM that rewrites paragraphs into atomic facts; SmolLM2-135M cannot write
them reliably and no proposition model is available offline, so it is not offered."""

from __future__ import annotations

from dataclasses import dataclass

from cgr.nlp import split_sentences
from cgr.retrieval.paragraphs import CorpusParagraph

KINDS = ("sentence", "paragraph", "title")
# the markers and the index's own separators never occur inside a key
RESERVED = ("\x02", "\x03", "«", "»")


@dataclass(frozen=True)
class Key:
    text: str
    paragraph: int  # position in the paragraph corpus


def clean(text: str) -> str:
    """One line, single spaces, no reserved characters (they delimit keys in the index)."""
    for ch in RESERVED:
        text = text.replace(ch, " ")
    return " ".join(text.split())


def build_keys(paragraphs: list[CorpusParagraph], kind: str = "sentence") -> list[Key]:
    """The keys of `paragraphs`, in corpus order; a text shared by several paragraphs is one key
    per paragraph (the index maps a decoded key to all of them)."""
    if kind not in KINDS:
        raise ValueError(f"riches key kind must be one of {KINDS}, not {kind!r}")
    keys = []
    for n, p in enumerate(paragraphs):
        if kind == "title":
            texts = [p.title]
        elif kind == "paragraph":
            texts = [p.text]
        else:
            texts = split_sentences(p.text)
        keys.extend(Key(t, n) for t in map(clean, texts) if t)
    return keys
