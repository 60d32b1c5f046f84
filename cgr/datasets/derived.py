"""Files cgr derives from a release: written by `cgr data get` (or `cgr data prepare`) when the
release does not already hold them in cgr's layout. Each producer is a function of its input
files' bytes, so its output is the same on every machine; sha256sums.txt records the output
on the copies cgr is tested on ("derived")."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from cgr.data.registry import WORLDTREE_TABLES, DataFile
from cgr.datasets.release import DataGetError

# finds an input by cgr path ("corpus/worldtree_v2.1/tables/ACTION.tsv") or by a name in the
# release ("questions/questions.train.tsv"); None when neither holds it
Inputs = Callable[[str], Path | None]
WT = "corpus/worldtree_v2.1"
EXPLANATION_COLUMNS = ("QuestionID", "AnswerKey", "arcset", "schoolGrade", "topic", "explanation")
# ARC-Corpus sentences come glued ("...telephone.It was..."): a sentence ends at . ! or ?
# directly before a capital letter, as well as before a space
SENTENCE_END = re.compile(r"(?<=[.!?])(?=[A-Z])")
IR_SETS = {"challenge": "ARCCH_", "easy": "ARCEZ_"}


class MissingInput(DataGetError):
    """The release lacks a producer's input (with --from: the derived file is reported as not
    in the source, like any other file it lacks)."""


def _need(inputs: Inputs, name: str, what: str) -> Path:
    found = inputs(name)
    if found is None:
        raise MissingInput(f"{what}: needs {name}, which the release does not hold")
    return found


def worldtree_facts(f: DataFile, inputs: Inputs) -> bytes:
    """One json line per tablestore row, tables in file-name order: its UID, its table and
    the text of its cells that are not [SKIP] columns, joined by spaces."""
    lines = []
    for table in sorted(WORLDTREE_TABLES, key=lambda t: f"{t}.tsv"):  # file-name order
        path = _need(inputs, f"{WT}/tables/{table}.tsv", f.path)
        rows = path.read_text(encoding="utf-8").split("\n")
        header = rows[0].rstrip("\r").split("\t")
        try:
            uid_col = next(i for i, h in enumerate(header) if h.strip() == "[SKIP] UID")
        except StopIteration:
            raise DataGetError(f"{path}: no '[SKIP] UID' column in its header") from None
        keep = [i for i, h in enumerate(header) if not h.startswith("[SKIP]")]
        for row in rows[1:]:
            cells = row.rstrip("\r").split("\t")
            uid = cells[uid_col].strip() if uid_col < len(cells) else ""
            text = " ".join(cells[i].strip() for i in keep if i < len(cells) and cells[i].strip())
            if uid and text:
                lines.append(json.dumps({"uid": uid, "table": table, "text": text}))
    return ("\n".join(lines) + "\n").encode()


def worldtree_explanations(f: DataFile, inputs: Inputs) -> bytes:
    """The explanation columns of WorldTree's questions.SPLIT.tsv (ids, answer key, set,
    grade, topic, fact UIDs with roles); the question texts are left out."""
    split = f.split
    path = inputs(f"questions/questions.{split}.tsv") or _need(
        inputs, f"questions.{split}.tsv", f.path
    )
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig")), delimiter="\t")
    missing = [c for c in EXPLANATION_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise DataGetError(f"{path}: no column {missing[0]!r} in its header")
    out = io.StringIO()
    out.write("\t".join(EXPLANATION_COLUMNS) + "\n")
    for row in reader:
        out.write("\t".join((row[c] or "").strip() for c in EXPLANATION_COLUMNS) + "\n")
    return out.getvalue().encode()


def arc_ir_split(f: DataFile, inputs: Inputs) -> bytes:
    """One ARC set's questions from AI2's IR10V2 split file (ARC, OBQA and RegLivEnv together,
    each id prefixed with its set): the set's records, prefix removed, as compact json lines."""
    name = Path(f.path).name  # arc_challenge_train_with_ir_para.jsonl
    _, part, split = name.split("_")[:3]
    path = _need(inputs, f"ARC-OBQA-RegLivEnv-IR10V2/{split}.jsonl", f.path)
    prefix = IR_SETS[part]
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataGetError(f"{path}:{number}: invalid JSON ({e.msg})") from None
        qid = str(record.get("id", ""))
        if qid.startswith(prefix):
            record["id"] = qid[len(prefix) :]
            lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def arc_ir_sentences(f: DataFile, inputs: Inputs) -> bytes:
    """The unique sentences of 3+ words in every `para` of the ARC IR-context files, sorted:
    the ARC-Corpus part of the science corpus."""
    sentences: set[str] = set()
    for part in IR_SETS:
        for split in ("train", "dev", "test"):
            path = inputs(f"arc/ir_context/arc_{part}_{split}_with_ir_para.jsonl")
            if path is None:
                continue  # a held-out split: the corpus is built from the others
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                for choice in json.loads(line).get("question", {}).get("choices", []):
                    for sentence in SENTENCE_END.split(choice.get("para") or ""):
                        sentence = sentence.strip()
                        if len(sentence.split()) >= 3:
                            sentences.add(sentence)
    if not sentences:
        raise MissingInput(f"{f.path}: no ARC IR-context file to derive it from")
    return ("\n".join(sorted(sentences)) + "\n").encode()


PRODUCERS: dict[str, Callable[[DataFile, Inputs], bytes]] = {
    "worldtree_facts": worldtree_facts,
    "worldtree_explanations": worldtree_explanations,
    "arc_ir_split": arc_ir_split,
    "arc_ir_sentences": arc_ir_sentences,
}
