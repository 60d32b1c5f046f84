"""Where a trained CGR checkpoint gains or loses against iterative retrieval:
the same checkpoint evaluated on dev four ways, retrieving with its trained query encoder or
with the base encoder it started from, and reading Ê (chain facts first) or the plain pool.
Per variant: dev accuracy, how often the gold fact (OBQA `fact1`) is in the answer's pool, among
the 15 facts it is offered, and read inside max length, and the accuracy split by "gold read".

Each variant is saved as benchmarks/results/cgr_evidence-<run>-<variant>.json as it finishes
(dev retrieval with a changed query encoder is not cached: a few minutes per encoder).

    .venv/bin/python benchmarks/cgr_evidence.py \
        --checkpoint checkpoints/bench/cgr_ablations-obqa-cgr-q0-e1-l128-s1/best.ckpt
    .venv/bin/python benchmarks/cgr_evidence.py --checkpoint ... --table
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_result, machine, print_table, save_result  # noqa: E402
from cgr.api import Predictor  # noqa: E402
from cgr.data.loaders import load_multiple_choice  # noqa: E402
from cgr.evidence.selection import text_key  # noqa: E402
from cgr.pretrained.source import data_settings  # noqa: E402
from cgr.training.checkpoints import read_checkpoint  # noqa: E402

VARIANTS = {  # name -> (query encoder, read Ê)
    "trained_chains": ("trained", True),
    "trained_pool": ("trained", False),
    "base_chains": ("base", True),
    "base_pool": ("base", False),
}


def variant_stats(examples, predictions) -> dict:
    """Gold-fact statistics of the answer choice and accuracy, over questions with a gold fact."""
    share = lambda xs: 100 * statistics.mean(xs) if xs else float("nan")  # noqa: E731
    in_pool, offered, read, right = [], [], [], {True: [], False: []}
    positions = Counter()
    for ex, pred in zip(examples, predictions, strict=True):
        positions[[c.label for c in pred.choices].index(pred.answer)] += 1
        if not ex.gold_facts or ex.answer_index is None:
            continue
        gold = {text_key(g) for g in ex.gold_facts}
        a = ex.answer_index
        in_pool.append(any(text_key(f.text) in gold for f in ex.pool[a]))
        offered.append(any(text_key(f.text) in gold for f in ex.facts[a][:15]))
        was_read = any(text_key(t) in gold for t in pred.choices[a].fact_texts)
        read.append(was_read)
        right[was_read].append(bool(pred.correct))
    return {
        "accuracy": share([bool(p.correct) for p in predictions if p.gold is not None]),
        "gold_in_pool": share(in_pool),
        "gold_offered_top15": share(offered),
        "gold_read": share(read),
        "acc_gold_read": share(right[True]),
        "n_gold_read": len(right[True]),
        "acc_gold_not_read": share(right[False]),
        "facts_read": statistics.mean(len(c.facts) for p in predictions for c in p.choices),
        "top_position_share": 100 * max(positions.values()) / len(predictions),
        "questions": len(predictions),
    }


def run_variants(checkpoint: Path, run: str, names: list[str], dev_file: str) -> None:
    questions = load_multiple_choice(dev_file)
    for encoder in ("trained", "base"):
        todo = [n for n in names if VARIANTS[n][0] == encoder and load_result(f"{run}-{n}") is None]
        if not todo:
            continue
        predictor = Predictor.from_checkpoint(checkpoint, query_encoder=encoder)
        pools = predictor.pipeline.pools(questions, desc=f"dev pools, {encoder} query encoder")
        for name in todo:
            predictor.pipeline.chains.enabled = VARIANTS[name][1]
            examples = predictor.pipeline.select(copy.deepcopy(pools))
            stats = variant_stats(examples, predictor.predict_examples(examples))
            save_result(f"{run}-{name}", {"checkpoint": str(checkpoint), "variant": name,
                                          "machine": machine(), **stats})  # fmt: skip
            print(f"{run}-{name}: accuracy {stats['accuracy']:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", type=Path, nargs="+", required=True,
                        help="one or more; with --table only their folder names are read")  # fmt: skip
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--dev-file", help="default: the checkpoint's dev file")
    parser.add_argument("--table", action="store_true", help="only print the saved variants")
    args = parser.parse_args()
    rows = []
    for checkpoint in args.checkpoint:
        run = f"cgr_evidence-{checkpoint.parent.name}"
        if not args.table:
            dev_file = args.dev_file or data_settings(read_checkpoint(checkpoint))["dev_file"]
            run_variants(checkpoint, run, args.variants, dev_file)
        for name in args.variants:
            if (r := load_result(f"{run}-{name}")) is None:
                continue
            rows.append([checkpoint.parent.name, VARIANTS[name][0], "Ê" if VARIANTS[name][1] else "pool",
                         f"{r['accuracy']:.1f}", f"{r['gold_in_pool']:.1f}", f"{r['gold_offered_top15']:.1f}",
                         f"{r['gold_read']:.1f}", f"{r['acc_gold_read']:.1f} (n={r['n_gold_read']})",
                         f"{r['acc_gold_not_read']:.1f}", f"{r['top_position_share']:.1f}"])  # fmt: skip
    print("each checkpoint on its dev file; variants not saved are left out")
    print_table(["run", "query encoder", "reads", "dev acc %", "gold in pool %", "gold in top 15 %",
                 "gold read %", "acc, gold read", "acc, gold not read", "top position %"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
