"""Figure 4's second view (the paper's own measurement: benchmarks/figure4.py, which `--table`
prints first): how often each hypothesis retrieves the gold fact, by
the correct answer's hypothesis and by the incorrect answers' hypotheses, with the base query
encoder and with the one a run trained. The paper: the chain-aware local losses cut how often
the incorrect hypotheses retrieve the gold fact while the correct one keeps it.

Retrieval here is the query encoder's first hop (what L_S and L_mle train): the hypothesis
against the corpus and the open book, the 15 best facts by inner product, duplicates across the
two by text. No reader, no training: minutes per checkpoint on a CPU. Saved as
benchmarks/results/mechanism-<run>.json (the base encoder: mechanism-base-<dataset>.json).

    .venv/bin/python benchmarks/mechanism.py --checkpoint checkpoints/bench/RUN/best.ckpt [--table]
    .venv/bin/python benchmarks/mechanism.py --table   # the loss-term rows, the paper's way
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import dev_questions, load_result, machine, print_table, save_result  # noqa: E402

TOP = 15


def gold_retrieval(retriever, questions) -> dict:
    """% of questions whose correct hypothesis has the gold fact in its top 15 / at rank 1, and
    the same for the incorrect hypotheses (mean over a question's incorrect ones)."""
    from cgr.data.hypothesis import HypothesisGenerator
    from cgr.evidence.selection import text_key

    labelled = [q for q in questions if q.gold_facts and q.answer_index is not None]
    hypotheses = HypothesisGenerator().generate_many(
        [(q.stem, [c.text for c in q.choices]) for q in labelled]
    )
    flat = [h for hs in hypotheses for h in hs]
    vectors = retriever.encoder.encode(flat)
    sources = [s for s in (retriever.corpus, retriever.open_book) if s is not None]
    hits = [s.index.search(vectors, TOP) for s in sources]
    cells = {(right, cut): [] for right in (True, False) for cut in ("top15", "rank1")}
    row = 0
    for q, hs in zip(labelled, hypotheses, strict=True):
        gold = {text_key(g) for g in q.gold_facts}
        wrong = {"top15": [], "rank1": []}
        for choice in range(len(hs)):
            found: dict[str, float] = {}
            for source, (scores, positions) in zip(sources, hits, strict=True):
                for score, pos in zip(scores[row], positions[row], strict=True):
                    if pos >= 0:
                        key = text_key(source.corpus[int(pos)].text)
                        found[key] = max(found.get(key, float("-inf")), float(score))
            ranked = sorted(found, key=found.get, reverse=True)[:TOP]
            got = {"top15": bool(gold & set(ranked)), "rank1": bool(ranked) and ranked[0] in gold}
            for cut, value in got.items():
                if choice == q.answer_index:
                    cells[(True, cut)].append(value)
                else:
                    wrong[cut].append(value)
            row += 1
        for cut, values in wrong.items():
            if values:
                cells[(False, cut)].append(statistics.mean(values))
    share = {f"{'correct' if r else 'incorrect'}_{cut}": 100 * statistics.mean(v)
             for (r, cut), v in cells.items() if v}  # fmt: skip
    return {"questions": len(labelled), **share}


def measure(checkpoint: Path, encoder: str) -> dict:
    from cgr.api import Predictor
    from cgr.pretrained.source import data_settings
    from cgr.training.checkpoints import read_checkpoint

    settings = data_settings(read_checkpoint(checkpoint))
    dev_file = settings["dev_file"]
    predictor = Predictor.from_checkpoint(checkpoint, query_encoder=encoder)
    result = gold_retrieval(predictor.pipeline.retriever, dev_questions(settings))
    # the base row is every run's: its checkpoint only lent the retrieval settings
    where = "checkpoint" if encoder == "trained" else "settings_from"
    return {where: str(checkpoint), "encoder": encoder, "dev_file": str(dev_file),
            "machine": machine(), **result}  # fmt: skip


def saved_or_measured(checkpoint: Path, dataset: str, table: bool) -> list[dict]:
    """The base encoder's row (shared by every run of the dataset) and the run's trained one."""
    names = {"base": f"mechanism-base-{dataset}", "trained": f"mechanism-{checkpoint.parent.name}"}
    rows = []
    for encoder, name in names.items():
        result = load_result(name)
        if result is None and not table and checkpoint.exists():
            result = measure(checkpoint, encoder)
            save_result(name, result)
        if result is not None:
            rows.append({"run": "base encoder" if encoder == "base" else checkpoint.parent.name,
                         **result})  # fmt: skip
    return rows


def rows_for(checkpoints: list[Path], dataset: str, table: bool) -> list[dict]:
    """The base row once, then each checkpoint's trained row."""
    rows: list[dict] = []
    for checkpoint in checkpoints:
        seen = {r["run"] for r in rows}
        rows += [r for r in saved_or_measured(checkpoint, dataset, table) if r["run"] not in seen]
    return rows


def print_rows(rows: list[dict]) -> None:
    rows = [r for r in rows if r["questions"]]
    if not rows:  # no dev question names a gold fact, in its record or in data.gold_facts_files
        print("Figure 4 not measured: no dev question names a gold fact")
        return
    print(f"The gold fact retrieved by each hypothesis (the query encoder's first hop, top {TOP}; "
          "% of dev questions; incorrect: mean over a question's incorrect hypotheses)")  # fmt: skip
    cells = ["correct_top15", "incorrect_top15", "correct_rank1", "incorrect_rank1"]
    print_table(["query encoder", "questions", "correct in top 15", "incorrect in top 15",
                 "correct at rank 1", "incorrect at rank 1"],
                [[r["run"], r["questions"], *(f"{r[c]:.1f}" for c in cells)] for r in rows])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", type=Path, nargs="*", default=[])
    parser.add_argument("--dataset", default="obqa", help="names the shared base-encoder row")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[1, 2],
        help="loss-term rows' seeds (those a pair is saved for are shown)",
    )
    parser.add_argument("--table", action="store_true", help="only print the saved rows")
    args = parser.parse_args()
    if args.table:
        from benchmarks import figure4

        figure4.print_table_of(args.seeds, args.dataset)
        print()
    if args.checkpoint:
        print_rows(rows_for(args.checkpoint, args.dataset, args.table))


if __name__ == "__main__":
    main()
