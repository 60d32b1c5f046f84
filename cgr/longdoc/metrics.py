"""QASPER's measures (Dasigi et al., 2021): answer token F1 against each annotator's reference
(the best one counts), evidence paragraph precision / recall / F1 against each annotator's
evidence set (the annotator giving the best F1 counts; both empty scores 1, as in QASPER's
scorer)."""

from __future__ import annotations

from cgr.ircot.metrics import token_f1


def answer_f1(prediction: str, references: list[str]) -> float:
    return max((token_f1(prediction, r) for r in references), default=0.0)


def evidence_scores(predicted: set[int], gold_sets: list[set[int]]) -> dict[str, float]:
    """Precision, recall and F1 against the annotator whose evidence gives the best F1."""
    best = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    for gold in gold_sets or [set()]:
        if not gold and not predicted:
            return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        same = len(predicted & gold)
        if same == 0:
            continue
        precision, recall = same / len(predicted), same / len(gold)
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best["f1"]:
            best = {"precision": precision, "recall": recall, "f1": f1}
    return best
