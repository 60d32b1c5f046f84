"""Loaders for the question sets the package evaluates on.

Every loader reads a file in its official format and raises `DataFormatError` (file, line, field)
on the first malformed record, so a user never trains on half a file without knowing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cgr.data import jsonio
from cgr.data.limits import (
    MAX_CHOICE_CHARS,
    MAX_QUESTION_CHARS,
    choices_problem,
    text_problem,
)
from cgr.data.records import Choice, OpenQuestion, Paragraph, Question
from cgr.data.root import data_path, missing_hint
from cgr.errors import DataFormatError


def require_file(path: str | Path, what: str = "data file") -> Path:
    """A plain file; a FIFO, a device (/dev/zero, /dev/stdin) or a folder is named as such,
    never opened (reading one would hang or never end). A relative path is looked for under
    the data root first (cgr.data.root)."""
    p = data_path(path)
    if not p.is_file():
        if p.exists() or p.is_symlink():
            kind = "a folder" if p.is_dir() else "not a plain file (a FIFO, device or link)"
            raise DataFormatError(str(p), None, what, kind)
        raise DataFormatError(str(p), None, what, missing_hint(p))
    return p


def read_utf8(path: str | Path, what: str = "data file") -> str:
    """The whole file as text; a byte that is not UTF-8 is named by line and column. A UTF-8
    byte-order mark (Windows editors write one) is dropped, for every kind of file alike."""
    p = require_file(path, what)
    data = p.read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataFormatError(
            str(p),
            line,
            "<encoding>",
            f"byte 0x{data[e.start]:02x} at column {column} is not UTF-8",
        ) from None


def text_lines(path: str | Path, what: str = "data file") -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file; only "\n" ends a line (a U+2028 inside a
    JSON string does not)."""
    for lineno, line in enumerate(read_utf8(path, what).split("\n"), start=1):
        yield lineno, line.rstrip("\r")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-empty line; a broken line names itself."""
    p = require_file(path)
    for lineno, line in text_lines(p):
        if not line.strip():
            continue
        try:
            obj = jsonio.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(str(p), lineno, "<json>", f"invalid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(str(p), lineno, "<record>", "expected a JSON object")
        yield lineno, obj


def _get(obj: dict, key: str, kind: type, path: str, lineno: int | None, prefix: str = "") -> Any:
    name = f"{prefix}{key}"
    if key not in obj:
        raise DataFormatError(path, lineno, name, "missing")
    value = obj[key]
    if not isinstance(value, kind):
        raise DataFormatError(
            path, lineno, name, f"expected {kind.__name__}, got {type(value).__name__}"
        )
    if isinstance(value, str) and not value.strip():
        raise DataFormatError(path, lineno, name, "empty")
    return value


def parse_multiple_choice(obj: dict, path: str, lineno: int | None) -> Question:
    """One OpenBookQA / ARC record (official jsonl). Labels may be A-E or 1-5; OBQA and ARC have
    3 to 5 choices, the limits (cgr.data.limits) allow 2 to 8."""
    qid = str(_get(obj, "id", (str, int), path, lineno))  # type: ignore[arg-type]
    question = _get(obj, "question", dict, path, lineno)
    stem = _get(question, "stem", str, path, lineno, "question.")
    if problem := text_problem(stem, MAX_QUESTION_CHARS):
        raise DataFormatError(path, lineno, "question.stem", problem)
    raw_choices = _get(question, "choices", list, path, lineno, "question.")
    if problem := choices_problem(raw_choices):
        raise DataFormatError(path, lineno, "question.choices", problem)
    choices = []
    for i, c in enumerate(raw_choices):
        prefix = f"question.choices[{i}]."
        if not isinstance(c, dict):
            raise DataFormatError(path, lineno, prefix[:-1], "expected an object")
        label = str(_get(c, "label", (str, int), path, lineno, prefix))  # type: ignore[arg-type]
        text = c.get("text")
        if not isinstance(text, str):
            raise DataFormatError(path, lineno, prefix + "text", "missing or not a string")
        # an empty choice would read as the bare question (its hypothesis has no answer)
        if problem := text_problem(text, MAX_CHOICE_CHARS):
            raise DataFormatError(path, lineno, prefix + "text", problem)
        choices.append(Choice(label=label, text=text.strip()))
    labels = [c.label for c in choices]
    if len(set(labels)) != len(labels):
        raise DataFormatError(path, lineno, "question.choices", f"duplicate labels {labels}")
    answer_index = None
    if "answerKey" in obj and obj["answerKey"] not in (None, ""):
        key = str(obj["answerKey"])
        if key not in labels:
            raise DataFormatError(path, lineno, "answerKey", f"{key!r} is not one of {labels}")
        answer_index = labels.index(key)
    gold = []
    if "fact1" in obj:  # OpenBookQA "Additional" release: the open-book fact behind the question
        gold.append(_get(obj, "fact1", str, path, lineno).strip())
    for key in ("gold_facts",):  # our own sample files may list several
        if key in obj:
            facts = _get(obj, key, list, path, lineno)
            if not all(isinstance(x, str) and x.strip() for x in facts):
                raise DataFormatError(path, lineno, key, "expected a list of non-empty strings")
            gold.extend(x.strip() for x in facts)
    return Question(qid, stem.strip(), choices, answer_index, gold, source=path)


def load_multiple_choice(path: str | Path) -> list[Question]:
    """OpenBookQA (Main or Additional) and ARC Easy/Challenge jsonl. Question ids are unique:
    a repeated id would score one question twice."""
    out, first_line = [], {}
    for n, obj in iter_jsonl(path):
        question = parse_multiple_choice(obj, str(path), n)
        if question.id in first_line:
            raise DataFormatError(
                str(path), n, "id", f"{question.id!r} repeats line {first_line[question.id]}"
            )
        first_line[question.id] = n
        out.append(question)
    if not out:
        raise DataFormatError(str(path), None, "<records>", "no questions in file")
    return out


def _answer_list(obj: dict, path: str, lineno: int | None) -> list[str]:
    if "answer" in obj:
        aliases = _typed_list(obj.get("answer_aliases", []), "answer_aliases", path, lineno)
        for field, value in [("answer", obj["answer"])] + [
            (f"answer_aliases[{i}]", a) for i, a in enumerate(aliases)
        ]:  # a list given as the answer would become the gold string "['Bob', 'Rob']"
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise DataFormatError(path, lineno, field,
                                      f"expected text, got {type(value).__name__}")  # fmt: skip
        answers = [str(obj["answer"])] + [str(a) for a in aliases]
    elif "answers_objects" in obj:
        answers = []
        objects = _typed_list(obj["answers_objects"], "answers_objects", path, lineno)
        for i, answer in enumerate(objects):
            field = f"answers_objects[{i}]"
            if not isinstance(answer, dict):
                raise DataFormatError(
                    path, lineno, field, f"expected an object, got {type(answer).__name__}"
                )
            for j, span in enumerate(
                _typed_list(answer.get("spans", []), f"{field}.spans", path, lineno)
            ):
                if not isinstance(span, str | int | float) or isinstance(span, bool):
                    raise DataFormatError(path, lineno, f"{field}.spans[{j}]",
                                          f"expected text, got {type(span).__name__}")  # fmt: skip
                answers.append(str(span))
    else:
        raise DataFormatError(
            path, lineno, "answer", "missing (expected 'answer' or 'answers_objects')"
        )
    return answers


def _typed_list(value: object, field: str, path: str, lineno: int | None) -> list:
    if not isinstance(value, list):
        raise DataFormatError(path, lineno, field, f"expected a list, got {type(value).__name__}")
    return value


def _paragraphs(items: object, field: str, path: str, lineno: int | None) -> list[Paragraph]:
    """IRCoT-processed `contexts` / MuSiQue `paragraphs`: objects with text `title` and
    `paragraph_text` and an optional boolean `is_supporting`."""
    out = []
    for i, item in enumerate(_typed_list(items, field, path, lineno)):
        where = f"{field}[{i}]"
        if not isinstance(item, dict):
            raise DataFormatError(
                path, lineno, where, f"expected an object, got {type(item).__name__}"
            )
        for key in ("title", "paragraph_text"):
            if not isinstance(item.get(key, ""), str):
                raise DataFormatError(path, lineno, f"{where}.{key}",
                                      f"expected text, got {type(item[key]).__name__}")  # fmt: skip
        supporting = item.get("is_supporting", False)
        if not isinstance(supporting, bool | int) or supporting not in (0, 1):
            raise DataFormatError(path, lineno, f"{where}.is_supporting",
                                  f"expected true or false, got {supporting!r}"[:200])  # fmt: skip
        out.append(
            Paragraph(item.get("title", ""), item.get("paragraph_text", ""), bool(supporting))
        )
    return out


def _supporting_titles(obj: dict, path: str, lineno: int | None) -> set[str]:
    """HotpotQA's `supporting_facts`: [title, sentence index] pairs."""
    titles = set()
    for i, fact in enumerate(
        _typed_list(obj.get("supporting_facts", []), "supporting_facts", path, lineno)
    ):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)):
            raise DataFormatError(path, lineno, f"supporting_facts[{i}]",
                                  "expected [title, sentence index]")  # fmt: skip
        titles.add(fact[0])
    return titles


def parse_open_question(obj: dict, path: str, lineno: int | None) -> OpenQuestion:
    """A HotpotQA / 2Wiki / MuSiQue record, official or IRCoT-processed format."""
    if "question_text" in obj:  # IRCoT processed
        qid = str(_get(obj, "question_id", (str, int), path, lineno))  # type: ignore[arg-type]
        question = _get(obj, "question_text", str, path, lineno)
        paragraphs = _paragraphs(obj.get("contexts", []), "contexts", path, lineno)
    else:
        qid = str(obj.get("_id", obj.get("id", "")))
        if not qid:
            raise DataFormatError(path, lineno, "_id", "missing")
        question = _get(obj, "question", str, path, lineno)
        if "paragraphs" in obj:  # MuSiQue
            paragraphs = _paragraphs(obj["paragraphs"], "paragraphs", path, lineno)
        else:  # HotpotQA / 2Wiki official: context = [[title, [sentences]]]
            supporting = _supporting_titles(obj, path, lineno)
            paragraphs = []
            for i, item in enumerate(_typed_list(obj.get("context", []), "context", path, lineno)):
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                        and isinstance(item[1], list) and all(isinstance(x, str) for x in item[1])):  # fmt: skip
                    raise DataFormatError(
                        path, lineno, f"context[{i}]", "expected [title, [sentences]]"
                    )
                title, sents = item
                paragraphs.append(
                    Paragraph(title, " ".join(s.strip() for s in sents), title in supporting)
                )
    answers = _answer_list(obj, path, lineno)
    return OpenQuestion(qid, question.strip(), answers, paragraphs, path, question_kind(obj, qid))


def question_kind(obj: dict, qid: str) -> str:
    """HotpotQA's / 2Wiki's `type`; MuSiQue names the hop count in its ids (`3hop1__...`: three
    hops, graph shape 1), kept as the count only."""
    kind = obj.get("type")
    if isinstance(kind, str):
        return kind
    hops = re.match(r"(\d)hop\d*__", qid)
    return f"{hops.group(1)}hop" if hops else ""


def load_open_questions(path: str | Path) -> list[OpenQuestion]:
    """HotpotQA-style files: a JSON list (official) or JSON lines (IRCoT processed)."""
    p = require_file(path)
    text = read_utf8(p).lstrip()
    if text.startswith("["):
        try:
            records = jsonio.loads(text)
        except json.JSONDecodeError as e:
            raise DataFormatError(str(p), e.lineno, "<json>", f"invalid JSON ({e.msg})") from None
        return [parse_open_question(r, str(p), None) for r in records]
    return [parse_open_question(obj, str(p), n) for n, obj in iter_jsonl(p)]


def load_lenient(path: str, counters: Counter) -> list[OpenQuestion]:
    """HotpotQA-style records (a JSON array or JSON lines): every well-formed record; a
    malformed one is reported, counted and skipped, as the open-QA modes read their files."""
    p = require_file(path)
    text = read_utf8(p).lstrip()
    out: list[OpenQuestion] = []
    if text.startswith("["):
        try:
            records = jsonio.loads(text)
        except json.JSONDecodeError as e:  # a truncated array cannot be read in part
            raise DataFormatError(str(p), e.lineno, "<json>", f"invalid JSON ({e.msg})") from None
        items = [(None, r) for r in records]
    else:
        items = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((lineno, jsonio.loads(line)))
            except json.JSONDecodeError as e:
                counters["malformed_records"] += 1
                print(f"skipped: {p}:{lineno}: invalid JSON ({e.msg})")
    seen: set[str] = set()
    for n, (lineno, record) in enumerate(items):
        where = f"{p}:{lineno}" if lineno is not None else f"{p} [{n}]"
        try:
            if not isinstance(record, dict):
                raise DataFormatError(where, None, "<record>", "expected a JSON object")
            question = parse_open_question(record, str(p), lineno)
        except (DataFormatError, AttributeError, TypeError) as e:
            counters["malformed_records"] += 1
            rid = record.get("_id", record.get("id", record.get("question_id"))) if isinstance(
                record, dict) else None  # fmt: skip
            named = f" (record {rid!r})" if isinstance(rid, str | int) else ""
            if isinstance(e, DataFormatError):
                print(f"skipped: {where}{named}: field '{e.field}': {e.problem}")
            else:
                print(f"skipped: {where}{named}: {e}")
            continue
        if question.id in seen:
            counters["duplicate_ids"] += 1
            print(f"skipped: {where}: field 'id': {question.id!r} repeats an earlier record")
            continue
        seen.add(question.id)
        if not any(para.text.strip() for para in question.paragraphs):
            counters["questions_without_context"] += 1  # kept: NoR needs none; recall counts 0
        out.append(question)
    if not out:  # refused here, before any model loads: nothing would be answered
        raise DataFormatError(str(p), None, "<records>", f"no well-formed record (of {len(items)}; "
                              f"{counters['malformed_records']} malformed, {counters['duplicate_ids']} "
                              "repeated ids)")  # fmt: skip
    return out
