"""QASPER's measures (Dasigi et al., 2021): answer token F1 against each annotator's reference
(the best one counts), evidence paragraph precision / recall / F1 against each annotator's
evidence set (the annotator giving the best F1 counts; both empty scores 1, as in QASPER's
scorer).

Two readings of evidence: `evidence_scores` compares paragraph ids, with each annotator's
evidence strings mapped to the paper's paragraphs (strings that are no paragraph, figure and
table captions marked "FLOAT SELECTED" and section headings, drop out). QASPER's own scorer
compares the strings: `official_evidence_f1` keeps every gold string (captions and headings
count against recall, since a method that returns paragraphs can never match them) and an
unanswerable annotation has no evidence; `text_only=True` is its text-evidence-only variant,
which drops the "FLOAT SELECTED" captions but keeps headings."""

from __future__ import annotations

from cgr.evaluation.qa_metrics import token_f1


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


FLOAT_MARK = "FLOAT SELECTED"


def official_evidence_f1(
    predicted: list[str], annotations: list[tuple[bool, list[str]]], text_only: bool = False
) -> float:
    """Evidence F1 as QASPER's scorer reads it. `predicted`: the texts of the paragraphs a
    method chose; `annotations`: per annotator, (unanswerable, evidence strings). Strings are
    compared stripped; precision and recall divide by the list lengths, overlap by sets."""
    best = 0.0
    for unanswerable, evidence in annotations or [(True, [])]:
        gold = [] if unanswerable else [e for e in evidence if not (text_only and FLOAT_MARK in e)]
        if not gold and not predicted:
            return 1.0
        same = len({g.strip() for g in gold} & {p.strip() for p in predicted})
        if same == 0:
            continue
        precision, recall = same / len(predicted), same / len(gold)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
