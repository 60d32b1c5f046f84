"""Multi-hop paragraph retrieval without an LM: gold-paragraph recall at 2 / 5 / 10 / 15
paragraphs of BM25 and dense retrieval with the question (OneR's retrieval), of CGR's
beam-iterative search over the paragraphs (`cgr ircot --method beam`) and of chain-guided hops
(`--method chains`: the AMR concept a first paragraph adds to the question), on HotpotQA,
2WikiMultihopQA and MuSiQue, over the pooled contexts of the questions (the IRCoT setting
without Wikipedia), with seconds per question; split by the dataset's own question types where it
labels them (2Wiki: comparison, bridge_comparison, compositional, inference; MuSiQue: 2/3/4 hops;
HotpotQA's `type` when the file is in the official format; IRCoT's processed file has none).

    .venv/bin/python benchmarks/multihop.py [--n 500] [--datasets hotpotqa 2wiki musique]
    .venv/bin/python benchmarks/multihop.py --table

Each dataset x method row is saved when it finishes (benchmarks/results/multihop-*.json).
MuSiQue: its shared dev file has no paragraphs, so its rows use the 100-question train sample,
as benchmarks/ircot.py does. IRCoT's own recall at its paragraph count is in that table."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    RESULTS,
    load_result,
    machine,
    machines,
    print_table,
    save_result,
)
from benchmarks.ircot import DATASETS, bootstrap_interval  # noqa: E402

KS = (2, 5, 10, 15)
METHODS = {
    "bm25": "BM25, question (OneR)",
    "dense": "dense MiniLM, question (OneR)",
    "beam": "beam-iterative, K=5, T=2 (CGR)",
    "chains": "chain-guided hops, K=5, 4 frontier concepts (titles first)",
}


def retriever(method: str, corpus: list):
    from cgr.retrieval.paragraphs import (
        BeamParagraphRetriever,
        BM25ParagraphRetriever,
        DenseParagraphRetriever,
    )

    if method == "bm25":
        return BM25ParagraphRetriever(corpus)
    if method == "dense":
        return DenseParagraphRetriever(corpus)
    if method == "chains":
        from cgr.chains.hops import ChainHopRetriever

        return ChainHopRetriever(corpus, beam_size=5)
    return BeamParagraphRetriever(corpus, beam_size=5, steps=2)


def retrieve(dataset: str, method: str, n: int, k: int) -> tuple[list, list, dict]:
    """The first `n` questions of the dataset, each one's first `k` paragraphs by `method` over
    their pooled contexts, and the row's common fields (sizes, seconds, machine)."""
    from cgr.data.loaders import load_lenient
    from cgr.retrieval.paragraphs import paragraph_corpus

    questions = load_lenient(DATASETS[dataset], Counter())[:n]
    corpus = paragraph_corpus(questions)
    start = time.perf_counter()
    model = retriever(method, corpus)
    setup = time.perf_counter() - start
    start = time.perf_counter()
    found = model.retrieve([q.question for q in questions], k)
    seconds = (time.perf_counter() - start) / len(questions)
    row = {"dataset": dataset, "method": method, "n": len(questions), "paragraphs": len(corpus),
           "seconds_per_question": seconds, "setup_seconds": setup, "machine": machine()}  # fmt: skip
    return questions, found, row


def run_row(dataset: str, method: str, n: int, ks: tuple[int, ...] = KS) -> dict:
    from cgr.evaluation.qa_metrics import paragraph_recall

    questions, found, row = retrieve(dataset, method, n, max(ks))
    gold = [{p.title for p in q.paragraphs if p.is_supporting} for q in questions]
    recalls = {k: [paragraph_recall([p.title for p in paragraphs[:k]], titles)
                   for paragraphs, titles in zip(found, gold, strict=True)] for k in ks}  # fmt: skip
    row.update(recall_columns(recalls, range(len(questions))))
    kinds = sorted({q.kind for q in questions} - {""})
    if kinds:  # the dataset's own question types (2Wiki's four, MuSiQue's hop counts)
        row["by_kind"] = {kind: recall_columns(recalls, [i for i, q in enumerate(questions) if q.kind == kind])
                          for kind in kinds}  # fmt: skip
    return row


def read_budgets(cell: str) -> list[dict]:
    """Per question of an IRCoT run, in the dataset's order: its id, how many paragraphs it read
    and its recall; from the cell's saved row, else from its predictions (kept local)."""
    row = load_result(cell) or {}
    if "per_question" in row:
        return [{"id": i, "budget": n, "recall": r} for i, (n, r) in row["per_question"].items()]
    path = RESULTS / "ircot_runs" / cell / "predictions.jsonl"
    if not path.is_file():
        raise SystemExit(f"{cell}: no per-question counts; run `benchmarks/ircot.py` for it first")
    records = [json.loads(line) for line in path.open(encoding="utf-8")]
    return [{"id": r["id"], "budget": len(r["paragraphs"]), "recall": r["recall"]} for r in records]


def budget_row(dataset: str, method: str, cell: str) -> dict:
    """Recall of `method` when each question gets as many paragraphs as the IRCoT run `cell`
    read for it (equal budget, question by question), beside that run's own recall."""
    from cgr.evaluation.qa_metrics import paragraph_recall

    budgets = read_budgets(cell)
    questions, found, row = retrieve(
        dataset, method, len(budgets), max(b["budget"] for b in budgets)
    )
    ours, theirs = [], []
    for q, paragraphs, b in zip(questions, found, budgets, strict=True):
        if q.id != b["id"]:
            raise SystemExit(f"{cell}: question {b['id']} where {dataset} has {q.id}")
        gold = {p.title for p in q.paragraphs if p.is_supporting}
        value = paragraph_recall([p.title for p in paragraphs[: b["budget"]]], gold)
        if value is not None and b["recall"] is not None:
            ours.append(value)
            theirs.append(b["recall"])
    row.update({"budget_from": cell, "questions": len(ours),
                "paragraphs_per_question": sum(b["budget"] for b in budgets) / len(budgets),
                "recall": sum(ours) / len(ours), "budget_recall": sum(theirs) / len(theirs),
                "recall_ci95": bootstrap_interval(ours),
                "difference_ci95": bootstrap_interval([a - b for a, b in zip(ours, theirs, strict=True)])})  # fmt: skip
    return row


def print_budget_rows(rows: list[dict]) -> None:
    print(
        "\nRecall at an IRCoT run's paragraph budget, question by question (no LM in these methods)"
    )
    print_table(["dataset", "budget from", "questions", "paragraphs/question", "method",
                 "recall [95 % CI]", "the run's own recall", "difference [95 % CI]"],
                [[r["dataset"], r["budget_from"], r["questions"], f"{r['paragraphs_per_question']:.1f}",
                  METHODS[r["method"]],
                  f"{r['recall']:.3f} [{r['recall_ci95'][0]:.3f}, {r['recall_ci95'][1]:.3f}]",
                  f"{r['budget_recall']:.3f}",
                  f"{r['recall'] - r['budget_recall']:+.3f} [{r['difference_ci95'][0]:+.3f}, {r['difference_ci95'][1]:+.3f}]"]
                 for r in rows])  # fmt: skip


def recall_columns(recalls: dict[int, list[float | None]], indices) -> dict:
    """Mean recall@k over the questions at `indices` that have gold paragraphs, and their count."""
    columns: dict = {}
    for k, values in recalls.items():
        kept = [values[i] for i in indices if values[i] is not None]
        columns[f"recall@{k}"] = sum(kept) / len(kept) if kept else float("nan")
        columns["questions"] = len(kept)
    return columns


def bridge_row(dataset: str, n: int, beam_size: int = 5) -> dict:
    """Where chain-guided hops lose the second paragraph, step by step, on the questions with
    two or more gold paragraphs: a gold paragraph among the question's first `beam_size` dense
    hits; the other gold paragraph's title among that paragraph's AMR concepts the question
    lacks (the bridge parsed); among the frontier concepts the hop tries (the bridge chosen);
    and the other gold paragraph among the hop's hits (the bridge followed)."""
    from cgr.chains.hops import ChainHopRetriever, bare_title, frontier_concepts
    from cgr.data.loaders import load_lenient
    from cgr.retrieval.paragraphs import paragraph_corpus

    questions = [q for q in load_lenient(DATASETS[dataset], Counter())[:n]
                 if sum(p.is_supporting for p in q.paragraphs) >= 2]  # fmt: skip
    hops = ChainHopRetriever(paragraph_corpus(questions), beam_size=beam_size)
    frontier = hops.frontier
    first = hops.dense.search([q.question for q in questions], beam_size)
    asked = hops._concepts([q.question for q in questions])
    counts: Counter = Counter()
    queries, pending, asked_kinds = [], [], []
    for q, hits, known in zip(questions, first, asked, strict=True):
        gold = {p.title for p in q.paragraphs if p.is_supporting}
        found = [p for _, p in hits if p.title in gold]
        counts["first_hop_gold"] += bool(found)
        if q.kind:
            counts[f"{q.kind}/questions"] += 1
            counts[f"{q.kind}/first_hop_gold"] += bool(found)
        if not found:
            continue
        read = [p for _, p in hits]
        concepts = dict(zip(read, hops._concepts([p.searchable for p in read]), strict=True))
        seen = Counter(c for p in read for c in concepts[p])
        parsed = chosen = False
        for p1 in found:
            mine = concepts[p1]
            others = {bare_title(t) for t in gold - {p1.title}}
            ranked = frontier_concepts(p1, mine - known, seen, hops.titles)
            names = [c for c in ranked if any(names_title(c, t) for t in others)]
            parsed |= bool(names)
            if picks := [c for c in ranked[:frontier] if c in names]:
                chosen = True
                queries.append(f"{q.question} {picks[0]}")
                pending.append(gold - {p1.title})
                asked_kinds.append(q.kind)
                break
        for key, value in (("bridge_parsed", parsed), ("bridge_chosen", chosen)):
            counts[key] += value
            if q.kind:
                counts[f"{q.kind}/{key}"] += value
    for hits, wanted, kind in zip(
        hops.dense.search(queries, beam_size) if queries else [], pending, asked_kinds, strict=True
    ):
        followed = any(p.title in wanted for _, p in hits)
        counts["bridge_followed"] += followed
        if kind:
            counts[f"{kind}/bridge_followed"] += followed
    return {"dataset": dataset, "questions": len(questions), "beam_size": beam_size,
            "frontier": frontier, **counts, "machine": machine()}  # fmt: skip


WORD = re.compile(r"\w+")


def names_title(concept: str, title: str) -> bool:
    """A concept names a title when one holds the other as whole words (a name concept may run
    on into the paragraph's opening words: "shirley temple shirley temple black"; a one-word
    concept must be the whole title)."""

    def words(text: str) -> str:
        return " " + " ".join(WORD.findall(text)) + " "

    return bool(title) and (
        words(title) in words(concept) or (words(concept) in words(title) and " " in concept)
    )


def print_bridges(rows: list[dict]) -> None:
    print(
        "\nChain-guided hops, where the second gold paragraph is lost (questions with 2+ gold paragraphs)"
    )
    keys = ("first_hop_gold", "bridge_parsed", "bridge_chosen", "bridge_followed")
    table = []
    for r in rows:
        kinds = sorted({k.split("/")[0] for k in r if "/" in k})
        for kind, prefix in (("all", ""), *((kind, f"{kind}/") for kind in kinds)):
            n = r["questions"] if not prefix else r[f"{prefix}questions"]
            table.append(
                [r["dataset"], kind, n, *(f"{100 * r.get(prefix + k, 0) / n:.1f} %" for k in keys)]
            )
    print_table(["dataset", "question type", "questions", "gold paragraph in first hop",
                 "bridge title among its new concepts", "bridge among the frontier tried",
                 "bridge query finds the other gold paragraph"], table)  # fmt: skip


def recall(row: dict, k: int) -> str:
    """A saved recall@k, "–" where the row was run without that k."""
    value = row.get(f"recall@{k}")
    return "–" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--force", action="store_true", help="re-run rows that have a result")
    parser.add_argument("--ks", type=int, nargs="+", default=list(KS),
                        help="paragraph counts to score (e.g. 4: IRCoT's first retrieval)")  # fmt: skip
    parser.add_argument("--table", action="store_true", help="only print the saved rows")
    parser.add_argument(
        "--no-types", action="store_true", help="leave out the tables by question type"
    )
    parser.add_argument("--bridges", action="store_true",
                        help="only where chain-guided hops lose the second paragraph (saved, re-run with --force)")  # fmt: skip
    parser.add_argument("--budget-from", nargs="+", metavar="CELL",
                        help="recall at the paragraph count each question read in these benchmarks/ircot.py "
                             "cells (e.g. ircot-hotpotqa-ircot-100-llamacpp; the dataset is the cell's)")  # fmt: skip
    args = parser.parse_args()
    if args.budget_from:
        rows = []
        for cell in args.budget_from:
            dataset = cell.split("-")[1]
            for method in args.methods:
                name = f"multihop_budget-{method}-{cell}"
                row = load_result(name)
                if not args.table and (row is None or args.force):
                    row = save_result(name, budget_row(dataset, method, cell)) and load_result(name)
                rows += [row] if row else []
        print_budget_rows(rows)
        return
    if args.bridges:
        rows = []
        for dataset in args.datasets:
            name = f"multihop_bridges-{dataset}-n{args.n}"
            row = load_result(name)
            if not args.table and (row is None or args.force):
                row = save_result(name, bridge_row(dataset, args.n)) and load_result(name)
            rows += [row] if row else []
        print_bridges(rows)
        return
    for dataset in args.datasets:
        rows = []
        for method in args.methods:
            name = f"multihop-{dataset}-{method}-n{args.n}"
            row = load_result(name)
            if not args.table and (row is None or args.force):
                row = run_row(dataset, method, args.n, tuple(args.ks))
                save_result(name, row)
            if row is not None:
                rows.append(row)
        if not rows:
            continue
        print(f"\n{dataset}: gold-paragraph recall over the pooled contexts of the first "
              f"{rows[0]['n']} questions ({rows[0]['paragraphs']} paragraphs), no LM; {machines(rows)}")  # fmt: skip
        print_table(["method", *(f"recall@{k}" for k in args.ks), "s/question"],
                    [[METHODS[r["method"]], *(recall(r, k) for k in args.ks),
                      f"{r['seconds_per_question']:.3f}"] for r in rows])  # fmt: skip
        by_kind = [r for r in rows if "by_kind" in r and not args.no_types]
        if by_kind:
            print(f"\n{dataset}, by the dataset's question type:")
            print_table(["question type", "n", "method", *(f"recall@{k}" for k in args.ks)],
                        [[kind, c["questions"], METHODS[r["method"]], *(recall(c, k) for k in args.ks)]
                         for kind in sorted({k for r in by_kind for k in r["by_kind"]})
                         for r in by_kind if (c := r["by_kind"].get(kind))])  # fmt: skip
        elif not args.no_types:
            print(
                f"({dataset}: the file labels no question types; HotpotQA's official format's `type` is read)"
            )


if __name__ == "__main__":
    main()
