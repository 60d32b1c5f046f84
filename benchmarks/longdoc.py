"""Long-document QA table (the D3 paper's Tables 1, 3 and 4 columns): evidence
precision / recall / F1, answer F1 (overall and by answer type), LM tokens and calls per
question, seconds per question, for D3's variants and the baselines on the same QASPER dev
questions and LM.

    .venv/bin/python benchmarks/longdoc.py [--n 200] [--rows d3 paragraph_dense ...]
    .venv/bin/python benchmarks/longdoc.py --table

Each row is one `cgr longdoc` run (predictions in benchmarks/results/longdoc_runs/NAME), saved
as benchmarks/results/longdoc-*.json when it finishes; a killed row resumes inside `cgr longdoc`
from its partial file. The first N questions of the file are used (whole papers, in file order)."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    RESULTS,
    interval,
    load_result,
    machine,
    machines,
    print_table,
    run_cli,
    save_result,
)
from benchmarks.ircot import bootstrap_interval  # noqa: E402
from cgr.data.root import data_path  # noqa: E402

DATA = "qasper/qasper-dev-v0.3.json"  # under the data root: `cgr data get qasper`
# row -> (label, `cgr longdoc` arguments)
ROWS = {
    "paragraph_dense": ("PARAGRAPH, dense (MiniLM) top 3", ["--method", "paragraph"]),
    "paragraph_bm25": ("PARAGRAPH, BM25 top 3", ["--method", "paragraph", "--longdoc.retriever", "bm25"]),
    "d3": ("D3-BASE", ["--method", "d3"]),
    "d3_dense": ("D3 + dense re-ranking (top 3)", ["--method", "d3_dense"]),
    "d3_hier": ("D3-HIERBASE", ["--method", "d3_hier"]),
    "d3_scored": ("D3-BASE, sections scored by the LM (best 2)", ["--method", "d3", "--longdoc.select", "likelihood"]),
    "d3_scored_dense": ("D3, sections scored by the LM (best 2) + dense top 3",
                        ["--method", "d3_dense", "--longdoc.select", "likelihood"]),
    "d3_fallback": ("D3-BASE, dense section when the LM names none",
                    ["--method", "d3", "--longdoc.empty_selection", "dense"]),
    "d3_list_none": ("D3-BASE, lists read past a blank line (list_stop none)",
                     ["--method", "d3", "--longdoc.list_stop", "none"]),
    "d3_random_names": ("D3-BASE, section names replaced by random ids",
                        ["--method", "d3", "--longdoc.section_names", "random"]),
    "chunk": ("CHUNK", ["--method", "chunk"]),
    "mapreduce": ("MAP-REDUCE OPTIMIZED", ["--method", "mapreduce"]),
}  # fmt: skip


def row_name(row: str, n: int, data: str = DATA) -> str:
    return f"longdoc-{row}-{n}" + ("" if data == DATA else f"-{Path(data).stem}")


def read_predictions(name: str) -> list[dict]:
    path = RESULTS / "longdoc_runs" / name / "predictions.jsonl"
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def per_question_columns(records: list[dict], data: str) -> dict:
    """Evidence F1 over the questions where every annotator's evidence names a paragraph, the
    share of questions given no paragraph, and each question's evidence F1 (kept in the saved
    row for paired comparisons: the predictions are not in git). QASPER's scorer gives 1 to an
    empty prediction when an annotator's evidence is empty (unanswerable, or only figures and
    tables, which are no paragraph here), so a method that often chooses nothing gains F1 from
    those questions."""
    from cgr.longdoc.document import load_qasper

    needed = gold_questions(load_qasper(data_path(data)))
    scored = [r["evidence_f1"] for r in records if r["id"] in needed]
    chosen = {r["id"]: r["sections"] for r in records if r["id"] in needed and r["sections"]}
    return {"questions_with_gold_paragraphs": len(scored),
            "evidence_f1_with_gold_paragraphs": sum(scored) / len(scored) if scored else float("nan"),
            "evidence_f1_with_gold_paragraphs_ci95": bootstrap_interval(scored),
            "no_paragraph_share": sum(not r["paragraphs"] for r in records) / len(records),
            "sections_with_gold_share": section_hits(chosen, needed, len(scored)) if chosen else None,
            "evidence_f1_by_question": {r["id"]: r["evidence_f1"] for r in records}}  # fmt: skip


def gold_questions(questions: list) -> dict:
    """The questions (by id) where every annotator's evidence names a paragraph."""
    return {q.id: q for q in questions if all(q.gold_evidence())}


def section_hits(chosen: dict[str, list[str]], questions: dict, total: int) -> float:
    """Share of `total` questions whose chosen sections (by name) hold a gold paragraph."""
    hits = 0
    for qid, names in chosen.items():
        q = questions[qid]
        gold = set().union(*q.gold_evidence())
        inside = {i for s in q.document.sections if s.name in names for i in s.paragraphs}
        hits += bool(gold & inside)
    return hits / total


def section_reference(n: int, data: str, k: int = 2) -> dict:
    """What choosing `k` sections is worth without an LM, on the questions D3 rows are scored
    on: the encoder's top k over the outline lines D3 shows (name + extractive summary), and
    k sections drawn at random (seeded by question id)."""
    from cgr.longdoc.document import load_qasper
    from cgr.longdoc.ranking import DocumentRanker
    from cgr.longdoc.summaries import lead

    questions = load_qasper(
        data_path(data)
    )  # read once: the first n, and those with gold paragraphs
    needed = gold_questions(questions)
    first = [q for q in questions[:n] if q.id in needed]
    ranker, encoder, drawn = DocumentRanker("dense"), {}, {}
    for q in first:
        sections = q.document.sections
        shown = [f"{s.name} {lead(q.document.section_text(s), 40)}" for s in sections]
        top = ranker.rank(q.question, shown, (q.document.id, "outline"))[:k]
        encoder[q.id] = [sections[i].name for i in top]
        picks = random.Random(q.id).sample(range(len(sections)), min(k, len(sections)))
        drawn[q.id] = [sections[i].name for i in picks]
    return {"k": k, "questions_with_gold_paragraphs": len(first), "machine": machine(),
            "encoder_top_k": section_hits(encoder, needed, len(first)),
            "random_k": section_hits(drawn, needed, len(first))}  # fmt: skip


def run_row(row: str, n: int, force: bool, data: str = DATA) -> None:
    name = row_name(row, n, data)
    if load_result(name) and not force:
        return
    out = RESULTS / "longdoc_runs" / name
    run_cli(name, ["longdoc", "--config", "configs/d3_qasper.yaml", "--data", str(data_path(data)), "--limit", str(n),
                   "--out", str(out), *ROWS[row][1]])  # fmt: skip
    records = read_predictions(name)
    metrics = json.loads((out / "metrics.json").read_text())
    metrics.pop("settings", None)
    result = {"row": row, "arguments": ROWS[row][1], **metrics, "machine": machine()}
    for key in ("evidence_f1", "answer_f1"):
        result[f"{key}_ci95"] = bootstrap_interval([r[key] for r in records if r[key] is not None])
    result.update(per_question_columns(records, data))
    save_result(name, result)
    print(f"{name}: evidence F1 {result['evidence_f1']:.3f}, {result['tokens_per_question']:.0f} "
          f"tokens/question", flush=True)  # fmt: skip


def paired_difference(
    a: dict[str, float], b: dict[str, float], only: set[str] | None = None
) -> tuple[float, list[float], int]:
    """Mean per-question evidence F1 of a minus b on the questions both answered (optionally
    only those in `only`), with its paired 95 % bootstrap interval."""
    shared = [q for q in a if q in b and (only is None or q in only)]
    differences = [a[q] - b[q] for q in shared]
    return sum(differences) / max(len(differences), 1), bootstrap_interval(differences), len(shared)


def goal_lines(n: int, data: str, d3_rows: list[str]) -> list[str]:
    """The goal, checked per D3 row: >= 5x fewer LM tokens for evidence than MAP-REDUCE
    at equal or better evidence F1, and a higher evidence F1 than dense PARAGRAPH; every
    difference paired per question, overall and on the questions with gold paragraphs (where
    choosing nothing cannot score)."""
    scores = {}
    for row in ("mapreduce", "paragraph_dense", *d3_rows):
        saved = load_result(row_name(row, n, data))
        if saved is not None and "evidence_f1_by_question" in saved:
            scores[row] = saved
    if "mapreduce" not in scores or "paragraph_dense" not in scores:
        return [
            "Goal (D3 vs MAP-REDUCE and dense PARAGRAPH): not checked until both baselines have run"
        ]
    from cgr.longdoc.document import load_qasper

    if not data_path(data).is_file():
        return [f"Goal: not checked here ({data} is not under the data root: cgr data get qasper)"]
    gold = set(gold_questions(load_qasper(data_path(data))))
    lines = []
    for row in d3_rows:
        if row not in scores:
            continue
        ratio = scores["mapreduce"]["evidence_tokens_per_question"] / max(
            scores[row]["evidence_tokens_per_question"], 1
        )
        parts = [
            f"Goal, {ROWS[row][0]}: {ratio:.1f}x fewer LM tokens for evidence than MAP-REDUCE"
            f" ({'>=' if ratio >= 5 else '<'} 5x)"
        ]
        for baseline in ("mapreduce", "paragraph_dense"):
            for subset, label in ((None, "all"), (gold, "with gold paragraphs")):
                mean, (low, high), count = paired_difference(
                    scores[row]["evidence_f1_by_question"],
                    scores[baseline]["evidence_f1_by_question"],
                    subset,
                )
                parts.append(
                    f"F1 minus {ROWS[baseline][0].split(',')[0]} ({label}, {count} q) "
                    f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
                )
        lines.append("; ".join(parts))
    return lines


def percent(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.0f}"


def official(result: dict, key: str) -> str:
    """QASPER's own evidence F1 (string match), in rows saved since `cgr longdoc` reports it."""
    return "–" if result.get(key) is None else f"{100 * result[key]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--data", default=DATA, help="a QASPER-format file (default: QASPER dev)")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table", action="store_true", help="print saved rows only")
    args = parser.parse_args()
    if not args.table:
        for row in args.rows:
            run_row(row, args.n, args.force, args.data)
    table, saved = [], []
    for row in args.rows:
        name = row_name(row, args.n, args.data)
        r = load_result(name)
        predictions = RESULTS / "longdoc_runs" / name / "predictions.jsonl"
        if r is not None and "evidence_f1_by_question" not in r and predictions.exists():
            r.update(
                per_question_columns(read_predictions(name), args.data)
            )  # saved before these columns
            save_result(name, r)
        saved.append(r)
        if r is None:
            table.append([ROWS[row][0], "not run", *[""] * 14])
            continue
        types = r["answer_f1_by_type"]
        table.append([ROWS[row][0], r["questions"], f"{100 * r['evidence_precision']:.1f}",
                      f"{100 * r['evidence_recall']:.1f}", interval(r, "evidence_f1", True),
                      official(r, "evidence_f1_official"), official(r, "evidence_f1_official_text_only"),
                      interval(r, "evidence_f1_with_gold_paragraphs", True), f"{100 * r['no_paragraph_share']:.0f}",
                      percent(r.get("sections_with_gold_share")),
                      interval(r, "answer_f1", True),
                      " / ".join(f"{100 * types.get(t, float('nan')):.0f}"
                                 for t in ("extractive", "abstractive", "yes_no", "unanswerable")),
                      f"{r['evidence_tokens_per_question']:.0f}", f"{r['tokens_per_question']:.0f}",
                      f"{r['calls_per_question']:.2f}", f"{r['seconds_per_question']:.1f}"])  # fmt: skip
    print(f"{args.data}, first {args.n} questions; SmolLM2-135M-Instruct (transformers, float32), "
          f"extractive section summaries; 95 % bootstrap intervals; {machines(saved)}")  # fmt: skip
    print_table(["method", "n", "evidence P", "evidence R", "evidence F1 (paragraph ids)",
                 "QASPER official evidence F1", "official, text evidence only",
                 "evidence F1, questions with gold paragraphs", "no paragraph chosen %",
                 "chosen sections hold gold %", "answer F1",
                 "answer F1 extr. / abstr. / yes-no / unans.", "LM tokens for evidence",
                 "LM tokens (with answer)", "LM calls", "s/question"], table)  # fmt: skip
    reference_name = row_name("section_reference", args.n, args.data)
    reference = load_result(reference_name)
    if reference is None and not args.table:
        reference = section_reference(args.n, args.data)
        save_result(reference_name, reference)
    if reference:
        print(
            f"Sections holding a gold paragraph without an LM ({reference['questions_with_gold_paragraphs']} "
            f"questions): encoder's top {reference['k']} of the outline {percent(reference['encoder_top_k'])} %, "
            f"{reference['k']} at random {percent(reference['random_k'])} %"
        )
    for line in goal_lines(args.n, args.data, [r for r in args.rows if r.startswith("d3")]):
        print(line)


if __name__ == "__main__":
    main()
