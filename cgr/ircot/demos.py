"""Demonstrations in the IRCoT annotation format, and prompt building.

A file is a JSON list of `{question_id, question_text, reasoning_steps: [{paragraphs: [{title,
text_substring}], cot_sent}]}` (IRCoT's cot_annotations). IRCoT's own files name paragraphs by a
substring only; our files may add the full paragraph `text`, which is used when present
(otherwise the supporting snippet or the substring stands for the paragraph).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from cgr.data import jsonio
from cgr.data.loaders import read_utf8, require_file
from cgr.data.records import Paragraph
from cgr.errors import DataFormatError

# the answer must hold a letter or digit, on the line of "answer is" or the next: a bare
# "The answer is:" is no answer (it was read as ":")
ANSWER = re.compile(r"answer is:?\s*([^\n]*?\w[^\n]*?)\s*\.?\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass
class Demonstration:
    question: str
    paragraphs: list[Paragraph]
    cot: list[str]
    answer: str = field(default="")


def extract_answer(text: str) -> str | None:
    match = ANSWER.search(text)
    return match.group(1).strip().rstrip(".").strip() if match else None


def load_demonstrations(path: str | Path) -> list[Demonstration]:
    p = require_file(path, "demonstrations")
    try:
        records = jsonio.loads(read_utf8(p, "demonstrations"))
    except json.JSONDecodeError as e:
        raise DataFormatError(str(p), e.lineno, "<json>", f"invalid JSON ({e.msg})") from None
    demos = []
    for i, r in enumerate(records):
        if "question_text" not in r or not r.get("reasoning_steps"):
            raise DataFormatError(str(p), None, f"[{i}].question_text/reasoning_steps", "missing")
        paragraphs, seen = [], set()
        for step in r["reasoning_steps"]:
            for para in step.get("paragraphs") or []:
                title = para.get("title")
                text = (
                    para.get("text") or para.get("supporting_snippet") or para.get("text_substring")
                )
                if title and text and (title, text) not in seen:
                    seen.add((title, text))
                    paragraphs.append(Paragraph(title, text, True))
        cot = [s["cot_sent"].strip() for s in r["reasoning_steps"] if s.get("cot_sent", "").strip()]
        demos.append(
            Demonstration(
                r["question_text"].strip(), paragraphs, cot, extract_answer(cot[-1]) or ""
            )
        )
    if not demos:
        raise DataFormatError(str(p), None, "<records>", "no demonstrations")
    return demos


def clip_words(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " ..."


def format_paragraphs(paragraphs: list[Paragraph], max_words: int) -> str:
    return "\n\n".join(
        f"Wikipedia Title: {p.title}\n{clip_words(p.text, max_words)}" for p in paragraphs
    )


def format_example(
    paragraphs: list[Paragraph], question: str, answer_part: str, max_words: int
) -> str:
    context = format_paragraphs(paragraphs, max_words)
    return (context + "\n\n" if context else "") + f"Q: {question}\nA: {answer_part}".rstrip()


class PromptBuilder:
    """Packs demonstrations (gold paragraphs + M distractors from the other demonstrations) into a
    token budget, then appends the test question with its paragraphs and the CoT so far."""

    def __init__(self, demos: list[Demonstration], count_tokens, reader: str = "cot", distractors: int = 1,
                 token_budget: int = 1200, paragraph_words: int = 350, with_context: bool = True, seed: int = 0):  # fmt: skip
        self.paragraph_words = paragraph_words
        rng = random.Random(seed)
        blocks, used = [], 0
        for i, demo in enumerate(demos):
            paragraphs = list(demo.paragraphs) if with_context else []
            if with_context and distractors:
                others = [p for j, d in enumerate(demos) if j != i for p in d.paragraphs]
                paragraphs += rng.sample(others, min(distractors, len(others)))
                rng.shuffle(paragraphs)
            answer = " ".join(demo.cot) if reader == "cot" else demo.answer
            block = format_example(paragraphs, demo.question, answer, paragraph_words)
            cost = count_tokens(block)
            if blocks and used + cost > token_budget:
                break
            blocks.append(block)
            used += cost
        self.prefix = "\n\n\n".join(blocks) + "\n\n\n"
        self.prefix_tokens = used

    def build(self, question: str, paragraphs: list[Paragraph], cot_so_far: str = "") -> str:
        return (
            self.prefix
            + format_example(paragraphs, question, cot_so_far, self.paragraph_words).rstrip()
            + (" " if cot_so_far else "")
        )
