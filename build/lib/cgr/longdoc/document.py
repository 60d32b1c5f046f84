"""Long documents with their section structure, and the QASPER loader.

A document is its sections in reading order; nested headings are flattened (QASPER writes
"Method ::: Polarity Function"), each section keeping the path of names from the top, as D3's
footnote 3 does. Paragraphs are numbered across the document, so evidence is a set of ids.
Figure and table captions are not in our QASPER file and are not read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cgr.data import jsonio
from cgr.data.limits import visible
from cgr.data.loaders import read_utf8
from cgr.errors import DataFormatError

NESTING = " ::: "


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]  # names from the top heading down to this one
    paragraphs: tuple[int, ...]  # ids into Document.paragraphs

    @property
    def name(self) -> str:
        return " > ".join(self.path)


@dataclass
class Document:
    id: str
    title: str
    abstract: str
    paragraphs: list[str]
    sections: list[Section]

    def section_text(self, section: Section) -> str:
        return "\n".join(self.paragraphs[i] for i in section.paragraphs)


@dataclass
class Answer:
    kind: str  # extractive | abstractive | yes_no | unanswerable
    text: str  # QASPER's reference string for the kind ("Yes", "Unanswerable", spans joined)
    evidence: list[str] = field(default_factory=list)


@dataclass
class DocQuestion:
    id: str
    document: Document
    question: str
    answers: list[Answer]  # one per annotator

    def gold_evidence(self) -> list[set[int]]:
        """Per annotator, the ids of the paragraphs their evidence strings name (a string that
        is no paragraph of ours, such as a figure caption, is left out, as QASPER's scorer
        leaves out "FLOAT SELECTED" evidence)."""
        index = {text.strip(): i for i, text in enumerate(self.document.paragraphs)}
        return [{index[e.strip()] for e in a.evidence if e.strip() in index} for a in self.answers]


def _fail(path: Path, paper: str, field_name: str, problem: str) -> DataFormatError:
    return DataFormatError(str(path), None, f"[{paper!r}].{field_name}", problem)


def _document(path: Path, paper_id: str, record: dict) -> Document:
    if not isinstance(record, dict):
        raise _fail(path, paper_id, "<record>", "is not an object")
    full_text = record.get("full_text")
    if not isinstance(full_text, list):
        raise _fail(path, paper_id, "full_text", "missing or not a list of sections")
    paragraphs: list[str] = []
    sections: list[Section] = []
    for n, raw in enumerate(full_text):
        if not isinstance(raw, dict) or not isinstance(raw.get("paragraphs"), list):
            raise _fail(path, paper_id, f"full_text[{n}].paragraphs", "missing or not a list")
        name = raw.get("section_name") or "Unnamed Section"
        if not isinstance(name, str):
            raise _fail(path, paper_id, f"full_text[{n}].section_name", "is not a string")
        ids = []
        for text in raw["paragraphs"]:
            if not isinstance(text, str):
                raise _fail(path, paper_id, f"full_text[{n}].paragraphs", "holds a non-string")
            if text.strip():
                ids.append(len(paragraphs))
                paragraphs.append(text.strip())
        if ids:  # a heading without text (a parent of subsections) has nothing to retrieve
            sections.append(Section(tuple(p.strip() for p in name.split(":::")), tuple(ids)))
    if not paragraphs:  # nothing to choose evidence from: choosing none would score F1 1.0
        raise _fail(path, paper_id, "full_text", "has no paragraph text")
    title = record.get("title") or ""
    abstract = record.get("abstract") or ""
    return Document(paper_id, str(title), str(abstract), paragraphs, sections)


def _answer(path: Path, paper: str, raw: dict, where: str) -> Answer:
    a = raw.get("answer") if isinstance(raw, dict) else None
    if not isinstance(a, dict):
        raise _fail(path, paper, f"{where}.answers[].answer", "missing or not an object")
    evidence = a.get("evidence") or []
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise _fail(path, paper, f"{where}.answers[].answer.evidence", "not a list of strings")
    if a.get("unanswerable"):
        return Answer("unanswerable", "Unanswerable", evidence)
    if a.get("yes_no") is not None:
        if not isinstance(a["yes_no"], bool):  # "no" is a true string: it would read as Yes
            raise _fail(path, paper, f"{where}.answers[].answer.yes_no",
                        f"must be true, false or null, not {type(a['yes_no']).__name__}")  # fmt: skip
        return Answer("yes_no", "Yes" if a["yes_no"] else "No", evidence)
    spans = a.get("extractive_spans") or []
    if not isinstance(spans, list) or not all(isinstance(x, str) for x in spans):
        raise _fail(
            path, paper, f"{where}.answers[].answer.extractive_spans", "not a list of strings"
        )
    if spans:
        return Answer("extractive", ", ".join(spans), evidence)
    free = a.get("free_form_answer") or ""
    if not isinstance(free, str):
        raise _fail(path, paper, f"{where}.answers[].answer.free_form_answer", "is not a string")
    return Answer("abstractive", free, evidence)


def load_qasper(path: str | Path) -> list[DocQuestion]:
    """Every question of a QASPER file (official schema: {paper_id: {title, abstract,
    full_text, qas}}), in file order; a malformed record is named by paper id and field."""
    path = Path(path)
    try:
        data = jsonio.loads(read_utf8(path, "QASPER file"))
    except json.JSONDecodeError as e:
        raise DataFormatError(str(path), e.lineno, "<json>", e.msg) from None
    if not isinstance(data, dict):
        raise DataFormatError(str(path), None, "<top>", "not an object of papers by id")
    questions: list[DocQuestion] = []
    seen: set[str] = set()
    for paper_id, record in data.items():
        document = _document(path, paper_id, record)
        qas = record.get("qas")
        if not isinstance(qas, list):
            raise _fail(path, paper_id, "qas", "missing or not a list")
        for n, qa in enumerate(qas):
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                raise _fail(path, paper_id, f"qas[{n}].question", "missing or not a string")
            if not visible(qa["question"]):
                raise _fail(path, paper_id, f"qas[{n}].question", "is empty")
            qid = str(qa.get("question_id") or f"{paper_id}-{n}")
            if qid in seen:
                raise _fail(path, paper_id, f"qas[{n}].question_id", f"repeats {qid!r}")
            seen.add(qid)
            raw_answers = qa.get("answers")
            if not isinstance(raw_answers, list):
                raise _fail(path, paper_id, f"qas[{n}].answers", "missing or not a list")
            answers = [_answer(path, paper_id, a, f"qas[{n}]") for a in raw_answers]
            questions.append(DocQuestion(qid, document, qa["question"].strip(), answers))
    return questions
