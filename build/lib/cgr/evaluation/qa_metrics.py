"""Answer EM / F1 with the SQuAD / HotpotQA normalisation, and gold-paragraph recall."""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: list[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in gold))


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the normalised answers' tokens (SQuAD; QASPER uses it as is); both empty is 1."""
    p_tokens, g_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p_tokens and not g_tokens:
        return 1.0
    same = sum((Counter(p_tokens) & Counter(g_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_tokens), same / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if p in {"yes", "no", "noanswer"} or g in {"yes", "no", "noanswer"}:
        return float(p == g)  # HotpotQA: yes/no answers score only when equal
    return token_f1(p, g)


def f1_score(prediction: str, gold: list[str]) -> float:
    return max((_f1(prediction, g) for g in gold), default=0.0)


def paragraph_recall(retrieved_titles: list[str], gold_titles: set[str]) -> float | None:
    if not gold_titles:
        return None
    return len(gold_titles & set(retrieved_titles)) / len(gold_titles)
