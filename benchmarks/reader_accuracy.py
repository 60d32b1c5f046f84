"""OBQA dev accuracy of the default reader (MiniLM) trained on OBQA train with one budget for all
rows, reading (a) no facts, (b) BM25 top facts, (c) dense single-step facts, (d) beam iterative
facts, all from the ~70k-fact corpus. Each row is a real `cgr train` run; its result is saved
under benchmarks/results/ so rows can be run separately and the table printed at the end.

    .venv/bin/python benchmarks/reader_accuracy.py                 # all rows not yet measured
    .venv/bin/python benchmarks/reader_accuracy.py --rows bm25 --force
    .venv/bin/python benchmarks/reader_accuracy.py --table         # print what is measured
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (
    load_result,
    machine,
    print_table,
    run_training,
    save_result,
    train_config,
)  # noqa: E402

ROWS = {
    "none": ("(a) no facts", {"method": "none"}),
    "bm25": ("(b) BM25 top-10", {"method": "bm25", "beam_size": 10, "open_book": None}),
    "dense": ("(c) dense single step (K=10, + open book)", {"method": "dense"}),
    "beam": ("(d) beam iterative (K=10, T=2, open book in step 1)", {"method": "beam", "steps": 2}),
}


def row_config(base: dict, row: str, budget: argparse.Namespace) -> dict:
    config = copy.deepcopy(base)
    config["trainer"]["max_epochs"] = budget.epochs
    config["model"]["init_args"]["max_length"] = budget.max_length
    config["data"]["max_train_questions"] = budget.train_questions
    config["data"]["retrieval"].update(ROWS[row][1])
    config["data"]["chains"] = {"enabled": False}  # this table is about the evidence pool itself
    return config


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/obqa.yaml")
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--train-questions", type=int, default=1500)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--force", action="store_true", help="re-run rows that have a result")
    parser.add_argument("--table", action="store_true", help="only print the table")
    args = parser.parse_args()
    budget = argparse.Namespace(
        train_questions=args.train_questions, epochs=args.epochs, max_length=args.max_length
    )
    base = train_config(args.config)
    if not args.table:
        for row in args.rows:
            if load_result(f"reader_accuracy-{row}") and not args.force:
                continue
            result = {"row": ROWS[row][0], "budget": vars(budget),
                      **run_training(row_config(base, row, budget), f"reader_accuracy-{row}")}  # fmt: skip
            save_result(f"reader_accuracy-{row}", result)
            print(
                f"{row}: accuracy {result['accuracy']:.4f} in {result['minutes']:.1f} min",
                flush=True,
            )
    table = []
    for row in ROWS:
        r = load_result(f"reader_accuracy-{row}")
        if r:
            b = r["budget"]
            table.append([r["row"], r["accuracy"], f"{r['minutes']:.1f}",
                          f"{b['train_questions']} q x {b['epochs']} ep, len {b['max_length']}"])  # fmt: skip
    print(f"OBQA dev (500 questions), reader all-MiniLM-L6-v2; {machine()}")
    print_table(["evidence", "dev accuracy", "minutes", "budget"], table)


if __name__ == "__main__":
    main()
