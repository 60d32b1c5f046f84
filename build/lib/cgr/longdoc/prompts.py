"""D3's prompts (paper §3.3, worded as the paper gives them) and the readers of their answers.

A small LM rarely answers in the exact format, so the readers are lenient: section names are
matched after normalising case and punctuation, by whole name, last heading, or containment;
paragraph ids are any integers in the answer that name a paragraph shown."""

from __future__ import annotations

import re
import string

SECTIONS_INSTRUCTION = (
    "Document section structure:\n{outline}\n\nQuestion:\n{question}\n\n"
    "List all section names that may be relevant for answering the question. Respond with "
    "comma-separated section name list. Provide an empty response if none of the sections are "
    "relevant."
)
PARAGRAPHS_INSTRUCTION = (
    "{paragraphs}\n\nQuestion:\n{question}\n\n"
    "Find paragraph ids that contains relevant information for answering the question. Respond "
    "with comma-separated id list. Provide an empty response if none of the paragraphs are "
    "relevant."
)
ANSWER_INSTRUCTION = (
    "Evidence from a research paper:\n{evidence}\n\nQuestion:\n{question}\n\n"
    "Answer the question from the evidence in a few words. Answer Yes or No for a yes/no "
    'question, and "Unanswerable" if the evidence does not answer it.'
)

_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalise(name: str) -> str:
    return " ".join(name.lower().translate(_PUNCT).split())


def outline(names: list[str], summaries: list[str]) -> str:
    """The condensed document: "* Section: <name> <summary>" per section, in reading order."""
    return "\n".join(f"* Section: {n} {s}".rstrip() for n, s in zip(names, summaries, strict=True))


def numbered(paragraphs: list[tuple[int, str]]) -> str:
    """Paragraphs marked with their ids, one per line (BASE's input)."""
    return "\n".join(f"[{i}] {text}" for i, text in paragraphs)


def read_sections(answer: str, names: list[str]) -> list[int]:
    """Positions of the sections an answer names, in the order named, without repeats."""
    keys = [normalise(n) for n in names]
    lasts = [normalise(n.split(" > ")[-1]) for n in names]
    chosen: list[int] = []
    for item in re.split(r"[,\n;]", answer):
        item = normalise(re.sub(r"^\s*[*\-•\d.)]*\s*(section\s*:)?", "", item, flags=re.I))
        if not item:
            continue
        hit = next((i for i, k in enumerate(keys) if k == item), None)
        if hit is None:
            hit = next((i for i, k in enumerate(lasts) if k == item), None)
        if hit is None and len(item) >= 4:  # "Method: Polarity" for "Method > Polarity Function"
            hit = next((i for i, k in enumerate(keys) if item in k or (len(k) >= 4 and k in item)), None)  # fmt: skip
        if hit is not None and hit not in chosen:
            chosen.append(hit)
    return chosen


def read_ids(answer: str, shown: set[int]) -> list[int]:
    """The paragraph ids an answer lists, among those shown, in order, without repeats."""
    out: list[int] = []
    for token in re.findall(r"\d+", answer):
        i = int(token)
        if i in shown and i not in out:
            out.append(i)
    return out
