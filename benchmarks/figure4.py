"""The paper's Figure 4 as the paper measures it: per dev question, whether OBQA's gold fact
(`fact1`) is (a) in a hypothesis' open-book top 10 and (b) among the facts a choice actually
reads, for the correct hypothesis and for ANY incorrect one; compared *with vs without* a loss
term at the same seed and schedule, with an exact McNemar test over questions. The paper
(section 5.4, Figure 4): L_local clearly, L_global slightly, cut the incorrect hypotheses'
gold retrieval while the correct one keeps it (the authors' code: retriever_utils.py's F3 hit
over each choice's `para`).

The encoder measured is the one the reader reads evidence from next: for a one-epoch row, the
query encoder as epoch 1 left it (what the refresh hands epoch 2); `--encoder auto` measures
the snapshot a longer run's reader last read. (b) is measured under two reading orders: the
run's own (`question_choice`: the base encoder orders the pool the trained one retrieved) and
the authors' (`retriever`: the trained encoder orders it too, cgr.evidence.selection).
benchmarks/mechanism.py keeps the other view (base vs trained encoder, top 15 of both sources).

    .venv/bin/python benchmarks/figure4.py --checkpoint checkpoints/bench/RUN/best.ckpt ...
    .venv/bin/python benchmarks/figure4.py --table      # the loss-term comparisons, saved
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    dev_questions,
    load_result,
    machine,
    mcnemar_p,
    print_table,
    save_result,
)

OPEN_BOOK_TOP = 10  # the authors' `kfact` open-book facts per hypothesis
READING_ORDERS = ("question_choice", "retriever")
# the mechanism's decision rule (docs/status.md, stated before the rows ran): present when adding
# the term lowers "any incorrect" by >= 2 points at p < 0.05 while "correct" moves < 1 point
MIN_DROP, MAX_CORRECT_MOVE, ALPHA = 2.0, 1.0, 0.05
# (without, with, the term added): the comparisons the paper's Figure 4 is about
COMPARISONS = (
    ("no_chain_losses", "no_global", "L_local (L_mle + L_rl)"),
    ("no_global", "cgr", "L_global"),
    ("no_chain_losses", "cgr", "L_D (all chain losses)"),
)
SETTINGS = {"ours": "clipeach", "authors": "authors"}


def run_name(row: str, settings: str, seed: int, dataset: str = "obqa") -> str:
    """The cgr_ablations.py name of a one-epoch, all-train-questions row at lr 1e-4."""
    return f"cgr_ablations-{dataset}-{row}-q0-e1-l128-lr1e-4-{SETTINGS[settings]}-s{seed}"


def cells() -> list[str]:
    names = ["open_book_top10"] + [f"read_{order}" for order in READING_ORDERS]
    return [f"{n}_{who}" for n in names for who in ("correct", "any_incorrect")] + [
        f"answer_right_{order}" for order in READING_ORDERS
    ]


def measure(checkpoint: Path, encoder: str) -> dict:
    """Per dev question with a gold fact, the cells() as 0/1, and their shares in %."""
    from cgr.api import Predictor
    from cgr.evidence.selection import text_key
    from cgr.pretrained.source import data_settings
    from cgr.training.checkpoints import read_checkpoint

    settings = data_settings(read_checkpoint(checkpoint))
    questions = [q for q in dev_questions(settings) if q.gold_facts and q.answer_index is not None]
    predictor = Predictor.from_checkpoint(checkpoint, query_encoder=encoder)
    predictor.support_candidates = 0  # what is read and answered, not the chains' support
    pipeline = predictor.pipeline
    examples = pipeline.pools(questions, desc="figure 4: pools")
    # (a) each hypothesis against the open book alone, top 10, as the authors' pool indices 1-10
    retriever = pipeline.retriever
    if retriever.open_book is None:
        raise SystemExit(f"figure 4 needs an open book (OBQA): {checkpoint} retrieves without one")
    flat = [h for ex in examples for h in ex.hypotheses]
    _, positions = retriever.open_book.index.search(retriever.encoder.encode(flat), OPEN_BOOK_TOP)
    book = retriever.open_book.corpus
    rows: dict[str, list[int]] = {}
    row = 0
    opened = []
    for ex in examples:
        opened.append([{text_key(book[int(p)].text) for p in positions[row + c] if p >= 0}
                       for c in range(len(ex.hypotheses))])  # fmt: skip
        row += len(ex.hypotheses)
    read: dict[str, list] = {}
    for order in READING_ORDERS:  # (b) the same pools, read in each order
        pipeline.evidence.order = order
        pipeline._relevance = None  # the scorer's query encoder depends on the order
        read[order] = predictor.predict_examples(pipeline.select(copy.deepcopy(examples)))
    for i, (q, ex) in enumerate(zip(questions, examples, strict=True)):
        gold = {text_key(g) for g in q.gold_facts}
        right = q.answer_index
        hits = {"open_book_top10": [bool(gold & found) for found in opened[i]]}
        for order in READING_ORDERS:
            hits[f"read_{order}"] = [bool(gold & {text_key(t) for t in c.fact_texts})
                                     for c in read[order][i].choices]  # fmt: skip
        bits = []
        for per_choice in hits.values():
            wrong = [h for c, h in enumerate(per_choice) if c != right]
            bits += [int(per_choice[right]), int(any(wrong))]
        bits += [int(bool(read[order][i].correct)) for order in READING_ORDERS]
        rows[ex.question_id] = bits
    names = cells()
    share = {n: 100 * statistics.mean(b[k] for b in rows.values()) for k, n in enumerate(names)}
    return {"checkpoint": str(checkpoint), "encoder": encoder, "machine": machine(),
            "questions": len(rows), "cells": names, "share": share, "by_question": rows}  # fmt: skip


def saved_or_measured(
    checkpoint: Path, encoder: str = "trained", table: bool = False
) -> dict | None:
    name = f"figure4-{checkpoint.parent.name}" + ("" if encoder == "trained" else f"-{encoder}")
    result = load_result(name)
    if result is None and not table and checkpoint.exists():
        result = measure(checkpoint, encoder)
        save_result(name, result)
    return result


def compare(without: dict, with_: dict, cell: str) -> dict:
    """with − without on one cell, paired on questions: points, the discordant counts, p."""
    k = without["cells"].index(cell)
    common = sorted(set(without["by_question"]) & set(with_["by_question"]))
    a = [without["by_question"][q][k] for q in common]
    b = [with_["by_question"][q][k] for q in common]
    gained = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    lost = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    return {"before": 100 * sum(a) / len(a), "after": 100 * sum(b) / len(b),
            "diff": 100 * (gained - lost) / len(common), "gained": gained, "lost": lost,
            "p": mcnemar_p(gained, lost), "questions": len(common)}  # fmt: skip


def decision(correct: dict, incorrect: dict) -> str:
    drop = -incorrect["diff"] >= MIN_DROP and incorrect["p"] < ALPHA
    return "present" if drop and abs(correct["diff"]) < MAX_CORRECT_MOVE else "absent"


def table_rows(seeds: list[int], dataset: str = "obqa") -> list[list]:
    rows = []
    for settings in SETTINGS:
        for seed in seeds:
            for without, with_, term in COMPARISONS:
                saved = [load_result(f"figure4-{run_name(r, settings, seed, dataset)}")
                         for r in (without, with_)]  # fmt: skip
                if None in saved:
                    continue
                for metric in ("open_book_top10", *(f"read_{o}" for o in READING_ORDERS)):
                    right = compare(*saved, f"{metric}_correct")
                    wrong = compare(*saved, f"{metric}_any_incorrect")
                    rows.append([f"{settings}, seed {seed}", f"+ {term}", metric,
                                 f"{right['before']:.1f} → {right['after']:.1f} ({right['diff']:+.1f}, p {right['p']:.2f})",
                                 f"{wrong['before']:.1f} → {wrong['after']:.1f} ({wrong['diff']:+.1f}, p {wrong['p']:.2f})",
                                 decision(right, wrong)])  # fmt: skip
    return rows


def print_table_of(seeds: list[int], dataset: str = "obqa") -> bool:
    rows = table_rows(seeds, dataset)
    print(f"Figure 4 as the paper measures it ({dataset} dev, questions with a gold fact): % whose "
          f"gold fact is in the correct hypothesis' / ANY incorrect hypothesis' open-book top "
          f"{OPEN_BOOK_TOP} (open_book_top10) or among the facts the choice reads (read_<order>), "
          "without → with the term, one epoch, the same seed; exact McNemar p over questions. "
          f"Mechanism present: any incorrect drops >= {MIN_DROP:g} points at p < {ALPHA} while "
          f"correct moves < {MAX_CORRECT_MOVE:g}.")  # fmt: skip
    print_table(["setting", "comparison", "metric", "correct", "any incorrect", "mechanism"], rows)
    if not rows:
        print("(no pair of loss-term rows measured yet)")
    return bool(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", type=Path, nargs="*", default=[])
    parser.add_argument("--encoder", default="trained", choices=["trained", "auto", "base"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--table", action="store_true", help="only print the saved comparisons")
    args = parser.parse_args()
    for checkpoint in args.checkpoint:
        result = saved_or_measured(checkpoint, args.encoder, args.table)
        if result:
            print(checkpoint.parent.name, {k: round(v, 1) for k, v in result["share"].items()})
    print_table_of(args.seeds)


if __name__ == "__main__":
    main()
