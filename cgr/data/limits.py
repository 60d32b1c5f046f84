"""The input limits every entry point applies (question files, `cgr.Predictor`, `cgr explain`,
`cgr serve`), with the same numbers and the same words, so a question refused in one place is
refused everywhere.

Why these numbers: the longest benchmark question (ARC) is about 2,000 characters, so 20,000
leaves ten times the room while keeping a hostile input far from spaCy's own 1M-character limit
(a 1M-character question took 52 s before spaCy refused it); two choices is the least a
multiple-choice question has, eight twice what OBQA / ARC use.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from cgr.data.records import Choice, Question
from cgr.errors import ConfigError

MAX_QUESTION_CHARS = 20_000
MAX_CHOICE_CHARS = 5_000
MIN_CHOICES, MAX_CHOICES = 2, 8
MAX_LABEL_CHARS = 16


# letters and symbols that render as nothing: the Hangul fillers and the blank braille pattern
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")


def visible(text: str) -> bool:
    """Whether a text shows anything: not only whitespace, control characters (NUL),
    invisible format characters (zero-width space U+200B, word joiner U+2060, BOM) and the
    blank letters (Hangul filler U+3164, blank braille U+2800)."""
    import unicodedata

    return any(
        not ch.isspace()
        and ch not in BLANK_LETTERS
        and unicodedata.category(ch) not in ("Cc", "Cf")
        for ch in text
    )


def text_problem(value: object, limit: int) -> str | None:
    """What is wrong with a question or choice text, or None."""
    if not isinstance(value, str):
        return f"must be text, not {type(value).__name__}"
    if not visible(value):
        return "is empty"  # whitespace, NUL and zero-width characters only count as empty
    if len(value) > limit:
        return f"has {len(value):,} characters (at most {limit:,})"
    return None


def choices_problem(choices: object) -> str | None:
    """What is wrong with the list of choices as a whole (its type and count), or None."""
    if isinstance(choices, str | bytes) or not isinstance(choices, list | tuple):
        return f"must be a list of texts, not {type(choices).__name__}"
    if not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
        many = "choice" if len(choices) == 1 else "choices"
        return f"has {len(choices)} {many} (from {MIN_CHOICES} to {MAX_CHOICES})"
    return None


def question_problem(question: object, choices: object) -> tuple[str, str] | None:
    """(field, what is wrong) for the first problem of a question and its choices, or None.
    Fields: `question`, `choices`, `choices[i]`."""
    problem = text_problem(question, MAX_QUESTION_CHARS)
    if problem:
        return "question", problem
    problem = choices_problem(choices)
    if problem:
        return "choices", problem
    for i, choice in enumerate(choices):
        problem = text_problem(choice, MAX_CHOICE_CHARS)
        if problem:
            return f"choices[{i}]", problem
    return None


def labels_problem(labels: object, n_choices: int) -> str | None:
    """What is wrong with the answer labels given for n choices (None: no labels, A, B, ...)."""
    if labels is None:
        return None
    if isinstance(labels, str | bytes) or not isinstance(labels, list | tuple):
        return f"must be a list of texts, not {type(labels).__name__}"
    for i, label in enumerate(labels):
        if not isinstance(label, str):
            return f"[{i}] must be text, not {type(label).__name__}"
        if not visible(label) or len(label) > MAX_LABEL_CHARS:
            return f"[{i}] must be 1 to {MAX_LABEL_CHARS} visible characters"
    if len(labels) != n_choices or len(set(labels)) != len(labels):
        return (f"{len(labels)} given for {n_choices} choices; they must match one to one "
                "and all differ")  # fmt: skip
    return None


def make_question(
    question: str,
    choices: Sequence[str],
    labels: Sequence[str] | None = None,
    question_id: str = "question",
) -> Question:
    """A question record from plain text; a ConfigError naming the field for what cannot be
    answered (the limits of cgr.data.limits, as for question files and `cgr serve`)."""
    if problem := question_problem(question, choices):
        field, what = problem
        raise ConfigError(f"{field} {what}")
    if problem := labels_problem(labels, len(choices)):
        raise ConfigError(f"labels{'' if problem[0] == '[' else ' '}{problem}")
    labels = list(labels or string.ascii_uppercase[: len(choices)])
    options = [Choice(lb, c) for lb, c in zip(labels, choices, strict=True)]
    return Question(question_id, question, options, None)
