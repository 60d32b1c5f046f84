"""IRCoT table: gold-paragraph recall, answer EM and F1 of NoR, OneR and IRCoT with 95 %
bootstrap intervals, seconds and generated tokens per question, and what the "answer is"
fallback recovers, on HotpotQA, 2WikiMultihopQA and MuSiQue samples.

    .venv/bin/python benchmarks/ircot.py [--n 100] [--backend llamacpp] [--model smollm2]
        [--datasets hotpotqa 2wiki musique] [--methods nor oner ircot] [--k 8]
    .venv/bin/python benchmarks/ircot.py --methods oner ircot beam chains ircot_chains
        # beam / chains: CGR's retrieval without an LM, then OneR's reader; ircot_chains: IRCoT
        # whose queries add the chain frontier concept (`--loop.query both`)
    .venv/bin/python benchmarks/ircot.py --question-recall 2 4 6 8 15   # no LM: BM25, question alone

Each dataset x method cell is saved when it finishes (benchmarks/results/ircot-*.json) and a
killed cell resumes inside `cgr ircot` from its partial file, so the table fills over sessions.
MuSiQue: the shared dev file has no paragraphs, so its rows use the 100-question train sample
(none of its questions is among our demonstrations, which are written for this project)."""

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
from cgr.data.root import data_path  # noqa: E402

DATASETS = {
    "hotpotqa": "hotpotqa/ircot_processed_dev_subsampled.jsonl",
    "2wiki": "2wikimultihopqa/dev_sample500.json",
    "musique": "musique/musique_ans_train_sample100.json",
}
BACKENDS = ("transformers", "ctranslate2", "llamacpp")
# methods beside `cgr ircot --method NAME`: IRCoT whose queries add the chain frontier concept
METHOD_ARGS = {"ircot_chains": ["--method", "ircot", "--loop.query", "both"]}


def bootstrap_interval(values: list[float], resamples: int = 1000, seed: int = 0) -> list[float]:
    """95 % percentile interval of the mean (resampling questions with replacement)."""
    if not values:
        return [float("nan"), float("nan")]
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    return [means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]]


def fallback_effect(records: list[dict]) -> dict:
    """On the questions whose CoT reader wrote no "answer is": F1 of the answer used (the direct
    fallback) against the reader's first line and its whole output scored as the answer."""
    from cgr.evaluation.qa_metrics import f1_score
    from cgr.ircot.demos import extract_answer
    from cgr.ircot.loop import first_line

    missed = [r for r in records if extract_answer(r.get("reader_output") or "") is None]
    if not missed:
        return {"without_answer_is": 0}

    def mean_f1(answer) -> float:
        return sum(f1_score(answer(r), r["gold_answers"]) for r in missed) / len(missed)

    return {
        "without_answer_is": len(missed),
        "f1_used": mean_f1(lambda r: r["prediction"]),
        "f1_first_line": mean_f1(lambda r: first_line(r["reader_output"])),
        "f1_whole_output": mean_f1(lambda r: r["reader_output"]),
    }


def summarise(dataset: str, method: str, out: Path, backend: str, model: str) -> dict:
    records = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    metrics = json.loads((out / "metrics.json").read_text())
    row: dict = {"dataset": dataset, "method": method, "backend": backend, "model": model,
                 "n": len(records), "seconds_per_question": metrics["seconds_per_question"],
                 "tokens_per_question": metrics["generated_tokens_per_question"]}  # fmt: skip
    for key in ("recall", "em", "f1"):
        values = [r[key] for r in records if r[key] is not None]
        row[key] = sum(values) / len(values) if values else float("nan")
        row[f"{key}_ci95"] = bootstrap_interval(values)
    row["paragraphs_per_question"] = sum(len(r["paragraphs"]) for r in records) / len(records)
    # per question id: paragraphs read and recall, so an equal-budget comparison
    # (benchmarks/multihop.py --budget-from) needs no predictions file (those stay local)
    row["per_question"] = {r["id"]: [len(r["paragraphs"]), r["recall"]] for r in records}
    kinds = sorted({r.get("type") or "" for r in records} - {""})
    if kinds:  # the dataset's question types (2Wiki's four, MuSiQue's hop counts)
        row["by_type"] = {kind: by_type(records, kind) for kind in kinds}
    row["fallback"] = fallback_effect(records)
    row["machine"] = machine()
    return row


def by_type(records: list[dict], kind: str) -> dict:
    chosen = [r for r in records if r.get("type") == kind]
    means = {key: [r[key] for r in chosen if r[key] is not None] for key in ("recall", "em", "f1")}
    return {
        "n": len(chosen),
        **{k: sum(v) / len(v) if v else float("nan") for k, v in means.items()},
    }


def cell_name(
    dataset: str, method: str, n: int, backend: str, model: str, quantize: str = "none",
    k: int | None = None,
) -> str:  # fmt: skip
    """`k`: paragraphs per retrieval when not the config's (named `-k8`)."""
    return (f"ircot-{dataset}-{method}-{n}-{backend}" + ("" if quantize == "none" else f"-{quantize}")
            + ("" if model == "smollm2" else f"-{model}") + ("" if k is None else f"-k{k}"))  # fmt: skip


def run_cell(args: argparse.Namespace, dataset: str, method: str) -> None:
    name = cell_name(dataset, method, args.n, args.backend, args.model, args.quantize, args.k)
    if load_result(name) and not args.force:
        return
    out = RESULTS / "ircot_runs" / name
    run_cli(name, ["ircot", "--config", "configs/ircot_hotpotqa.yaml", "--data", str(data_path(DATASETS[dataset])),
                   "--limit", str(args.n), "--out", str(out), *METHOD_ARGS.get(method, ["--method", method]),
                   "--generator.backend", args.backend, "--generator.model", args.model,
                   "--generator.quantize", args.quantize,
                   *([] if args.k is None else ["--loop.k", str(args.k)])])  # fmt: skip
    row = summarise(dataset, method, out, args.backend, args.model)
    row["quantize"] = args.quantize
    row["k"] = args.k
    save_result(name, row)
    print(f"{name}: f1 {row['f1']:.3f} in {row['seconds_per_question']:.1f} s/question", flush=True)


def question_recall_table(args: argparse.Namespace) -> None:
    """Recall of gold paragraphs when the question alone retrieves k paragraphs (BM25, no LM):
    what IRCoT's reasoning steps must beat at the same number of paragraphs."""
    from collections import Counter

    from cgr.data.loaders import load_lenient
    from cgr.evaluation.qa_metrics import paragraph_recall
    from cgr.retrieval.paragraphs import BM25ParagraphRetriever, paragraph_corpus

    rows = []
    for dataset in args.datasets:
        if args.table:  # the saved rows, at the k they were saved with
            if row := load_result(f"ircot_question_recall-{dataset}-{args.n}"):
                rows.append(
                    [
                        dataset,
                        row["n"],
                        *(row.get(f"recall@{k}", "–") for k in args.question_recall),
                    ]
                )
            continue
        questions = load_lenient(str(data_path(DATASETS[dataset])), Counter())[: args.n]
        found = BM25ParagraphRetriever(paragraph_corpus(questions)).retrieve(
            [q.question for q in questions], max(args.question_recall)
        )
        row = {"dataset": dataset, "n": len(questions), "machine": machine()}
        gold = [{p.title for p in q.paragraphs if p.is_supporting} for q in questions]
        for k in args.question_recall:
            values = [paragraph_recall([p.title for p in paragraphs[:k]], titles)
                      for paragraphs, titles in zip(found, gold, strict=True)]  # fmt: skip
            values = [v for v in values if v is not None]
            row[f"recall@{k}"] = sum(values) / len(values)
        save_result(f"ircot_question_recall-{dataset}-{args.n}", row)
        rows.append([dataset, row["n"], *(row[f"recall@{k}"] for k in args.question_recall)])
    print("Gold-paragraph recall of BM25 with the question alone (no LM), first n questions")
    print_table(["dataset", "n", *(f"k = {k}" for k in args.question_recall)], rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--backend", default="llamacpp", choices=BACKENDS)
    parser.add_argument(
        "--model", default="smollm2", help="generator.model (smollm2, gemma3-270m, ...)"
    )
    parser.add_argument("--quantize", default="none", choices=["none", "int8"],
                        help="transformers backend: int8 linear layers (generator.quantize)")  # fmt: skip
    parser.add_argument("--k", type=int, default=None,
                        help="loop.k, paragraphs per retrieval (configs: 4; the paper tunes 2-8)")  # fmt: skip
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=["nor", "oner", "ircot"])
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table", action="store_true", help="print saved rows only")
    parser.add_argument(
        "--no-types", action="store_true", help="leave out the table by question type"
    )
    parser.add_argument("--question-recall", type=int, nargs="+", metavar="K",
                        help="only the question-alone BM25 recall at these k (no LM)")  # fmt: skip
    args = parser.parse_args()
    if args.question_recall:
        question_recall_table(args)
        return
    if not args.table:
        for dataset in args.datasets:
            for method in args.methods:
                run_cell(args, dataset, method)
    rows, fallbacks, saved, types = [], [], [], []
    for dataset in args.datasets:
        for method in args.methods:
            r = load_result(
                cell_name(dataset, method, args.n, args.backend, args.model, args.quantize, args.k)
            )
            if not r:
                continue
            saved.append(r)
            paragraphs = r.get("paragraphs_per_question")  # rows saved before it was kept: "–"
            rows.append([dataset, method, r["n"], interval(r, "recall"),
                         "–" if paragraphs is None else f"{paragraphs:.1f}", interval(r, "em"),
                         interval(r, "f1"), r["seconds_per_question"], r["tokens_per_question"]])  # fmt: skip
            types.extend([dataset, kind, c["n"], method, f"{c['recall']:.3f}", f"{c['em']:.3f}", f"{c['f1']:.3f}"]
                         for kind, c in (r.get("by_type") or {}).items())  # fmt: skip
            fb = r.get("fallback") or {}
            if fb.get("without_answer_is"):
                fallbacks.append([dataset, method, fb["without_answer_is"], fb["f1_whole_output"],
                                  fb["f1_first_line"], fb["f1_used"]])  # fmt: skip
    weights = "" if args.quantize == "none" else f" ({args.quantize} linear layers)"
    print(f"IRCoT, generator {args.model} on {args.backend}{weights}, BM25 over the pooled contexts; "
          f"95 % bootstrap intervals over questions; {machines(saved)}")  # fmt: skip
    print_table(["dataset", "method", "n", "recall", "paragraphs/question", "EM", "F1",
                 "s/question", "generated tokens/question"], rows)  # fmt: skip
    if types and not args.no_types:
        print("\nBy the dataset's question type (2Wiki's types, MuSiQue's hop counts)")
        print_table(
            ["dataset", "question type", "n", "method", "recall", "EM", "F1"], sorted(types)
        )
    if fallbacks:
        print('\nCoT reader outputs without "answer is": F1 on those questions')
        print_table(["dataset", "method", "questions", "whole output", "first line",
                     "direct fallback (used)"], fallbacks)  # fmt: skip


if __name__ == "__main__":
    main()
