"""Gold evidence facts joined to questions by id, for the supervised chain loss (L_S) and for
measuring whether retrieval finds the facts a question needs.

OpenBookQA carries its gold fact inline (`fact1` of the Additional release, read by the
question loader). For ARC the gold facts are WorldTree V2.1 explanations: `explanations.*.tsv`
(QuestionID, ..., `explanation` = "uid|ROLE uid|ROLE ...") with the tablestore rows in
`worldtree_v2.1_facts.jsonl` beside it (uid, text). Roles are kept in WorldTree's order of
importance: CENTRAL facts first, then GROUNDING, LEXGLUE and the rest.
"""

from __future__ import annotations

import csv
from pathlib import Path

from cgr.data.loaders import iter_jsonl, require_file, text_lines
from cgr.data.records import Question, normalize_fact_text
from cgr.errors import DataFormatError

_ROLE_ORDER = {"CENTRAL": 0, "GROUNDING": 1, "LEXGLUE": 2}
WORLDTREE_FACTS = "worldtree_v2.1_facts.jsonl"


def _worldtree_texts(path: Path) -> dict[str, str]:
    texts = {}
    for lineno, obj in iter_jsonl(path):
        uid, text = obj.get("uid"), obj.get("text")
        if not isinstance(uid, str) or not isinstance(text, str):
            raise DataFormatError(str(path), lineno, "uid/text", "missing or not a string")
        texts[uid] = normalize_fact_text(text)
    return texts


def load_worldtree_explanations(path: str | Path) -> dict[str, list[str]]:
    """question id -> gold fact texts (CENTRAL first) from a WorldTree explanations tsv."""
    p = require_file(path, "gold facts file")
    facts_path = require_file(p.parent / WORLDTREE_FACTS, "WorldTree facts beside the explanations")
    texts = _worldtree_texts(facts_path)
    gold: dict[str, list[str]] = {}
    lines = (line for _, line in text_lines(p, "gold facts file"))
    for lineno, row in enumerate(csv.DictReader(lines, delimiter="\t"), start=2):
        qid, explanation = row.get("QuestionID"), row.get("explanation")
        if not qid or explanation is None:
            raise DataFormatError(str(p), lineno, "QuestionID/explanation", "missing")
        items = []
        for n, item in enumerate(explanation.split()):
            uid, _, role = item.partition("|")
            if uid not in texts:
                raise DataFormatError(str(p), lineno, "explanation", f"unknown fact uid {uid}")
            items.append((_ROLE_ORDER.get(role, 3), n, texts[uid]))
        gold[qid] = [text for _, _, text in sorted(items)]
    return gold


def attach_gold_facts(questions: list[Question], files: list[str]) -> int:
    """Adds the gold facts of `files` to the questions with those ids; returns how many got some."""
    gold: dict[str, list[str]] = {}
    for path in files:
        gold.update(load_worldtree_explanations(path))
    hit = 0
    for q in questions:
        if q.id in gold:
            q.gold_facts = [*q.gold_facts, *(g for g in gold[q.id] if g not in q.gold_facts)]
            hit += 1
    return hit
