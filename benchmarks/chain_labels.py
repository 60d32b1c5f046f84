"""Chain labels, measured: per label, how often the choice a chain is shown for is the right
one, and the shares of right and of wrong choices (those with a chain) given a supporting
chain, each with a 95 % Wilson interval.

Two sources:

* a chains.jsonl that `scripts/train.sh` or `cgr eval --export-dir` wrote: the labels as cgr
  writes them (the whole rule: lead, margin, the threshold fitted on the model's training
  questions). `--chains FILE --name NAME` saves its row.
* the per-chain supports saved by benchmarks/chain_support.py on the OBQA and ARC-Challenge
  dev checkpoints: the margin part of the rule only, at the stated default (0.05), over the
  ten best-supported chains each choice's search found (cgr labels the first five in the
  search's order), because those runs saved each chain's support for its own choice, not its
  whole reading (the lead condition and "points to" need the reading) nor the training
  questions a threshold is fitted on.

    .venv/bin/python benchmarks/chain_labels.py --chains checkpoints/default/chains/chains.jsonl --name quickstart
    .venv/bin/python benchmarks/chain_labels.py --table
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, load_result, machine, print_table, save_result  # noqa: E402

# chain_support.py's saved dev runs the margin rows read (name: what the checkpoint is)
SAVED = {
    "obqa-no_chain_losses-authors-sim0.5-e1-s1-open_book": "OBQA dev, L_S-only reader, 1 epoch",
    "arc_challenge-cgr-q3200-e1-s1-open_book": "ARC-Challenge dev, CGR, 1 epoch",
    "arc_challenge-cgr-q3200-e1-s1-open_book-support_reader": "ARC-Challenge dev, support reader",
}
MARGIN = 0.05  # cgr.evaluation.support.MARGIN, the stated default


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """(share, low, high) in %, Wilson's interval (sound at shares near 0 or 1)."""
    if n == 0:
        return math.nan, math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * p, 100 * (centre - half), 100 * (centre + half)


def shown(share: tuple[float, float, float], hits: int, n: int) -> str:
    if n == 0:
        return "–"
    p, low, high = share
    return f"{p:.1f} [{low:.1f}, {high:.1f}] ({hits}/{n})"


def from_chains(records: list[dict]) -> dict:
    """Counts per label (on the right choice / chains) and per choice (supported / choices
    with a chain), right and wrong apart, from prediction records with labelled chains."""
    labels: dict[str, list[int]] = {}
    choice = {"right": [0, 0], "wrong": [0, 0]}
    thresholds = set()
    for record in records:
        if record.get("answer") is None:
            continue
        for c in record["choices"]:
            right = c["label"] == record["answer"]
            judged = [ch for ch in c.get("chains", []) if "supports" in ch]
            for ch in judged:
                kind = "points to" if ch["label"].startswith("points to") else ch["label"]
                counts = labels.setdefault(kind, [0, 0])
                counts[0] += right
                counts[1] += 1
                thresholds.add(ch.get("threshold"))
            if judged:
                side = choice["right" if right else "wrong"]
                side[0] += any(ch["supports"] for ch in judged)
                side[1] += 1
    return {
        "labels": labels,
        "choices": choice,
        "thresholds": sorted(t for t in thresholds if t is not None),
    }


def from_supports(per_question: list, margin: float = MARGIN) -> dict:
    """The margin part of the rule on chain_support.py's saved supports ([id, answer index,
    per choice its chains' supports]): a chain supports when its support exceeds the best
    support of another choice's chain by `margin`."""
    labels = {"supports": [0, 0], "does not support": [0, 0]}
    choice = {"right": [0, 0], "wrong": [0, 0]}
    from cgr.evaluation.support import margins

    for _, answer, supports in per_question:
        for c, (values, own) in enumerate(zip(supports, margins(supports), strict=True)):
            if not values:
                continue
            right = c == answer
            flags = [m >= margin for m in own]
            for f in flags:
                counts = labels["supports" if f else "does not support"]
                counts[0] += right
                counts[1] += 1
            side = choice["right" if right else "wrong"]
            side[0] += any(flags)
            side[1] += 1
    return {"labels": labels, "choices": choice, "thresholds": [margin]}


def rows_of(name: str, what: str, counts: dict) -> list[list]:
    right, wrong = counts["choices"]["right"], counts["choices"]["wrong"]
    threshold = ", ".join(f"{t:.2f}" for t in counts["thresholds"]) or "–"
    out = []
    for label, (hits, n) in sorted(counts["labels"].items()):
        out.append([what, label, shown(wilson(hits, n), hits, n), "", "", threshold])
    out.append([what, "(choices)", "", shown(wilson(*right), *right),
                shown(wilson(*wrong), *wrong), threshold])  # fmt: skip
    return out


def table() -> None:
    rows, where = [], []
    for path in sorted(RESULTS.glob("chain_labels-*.json")):
        saved = json.loads(path.read_text())
        rows += rows_of(saved["name"], saved["what"], saved)
        where.append(f"{saved['what']}: `--chains CHAINS.jsonl --name {saved['name']}` · "
                     f"{saved['machine']} · {saved.get('date', '–')} · {saved.get('commit', '–')}")  # fmt: skip
    for name, what in SAVED.items():
        saved = load_result(f"chain_support-{name}")
        if saved and saved.get("chain_support"):
            rows += rows_of(name, f"{what} (margin only, saved supports)",
                            from_supports(saved["chain_support"]))  # fmt: skip
            where.append(f"{what}: benchmarks/chain_support.py's saved `chain_support-{name}` · "
                         f"{saved.get('machine', '–')}")  # fmt: skip
    print("Chain labels: per label, the share of its chains shown for the right choice; per "
          "choice with a chain, the share given a supporting chain (right and wrong choices); "
          "% with 95 % Wilson intervals and counts; the threshold is the margin a supporting "
          "chain needs\n")  # fmt: skip
    print_table(["model, data", "label", "on the right choice", "right choices supported",
                 "wrong choices supported", "margin"], rows)  # fmt: skip
    print()
    for line in where:
        print(f"* {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=Path, help="a chains.jsonl with labelled chains")
    parser.add_argument("--name", help="the saved row's name (chain_labels-NAME.json)")
    parser.add_argument("--what", help="the model and data, as the table says them")
    parser.add_argument("--table", action="store_true", help="print the saved rows, run nothing")
    args = parser.parse_args()
    if args.table:
        table()
        return
    if not (args.chains and args.name):
        parser.error("give --chains FILE --name NAME, or --table")
    records = [json.loads(line) for line in args.chains.read_text().splitlines() if line.strip()]
    counts = from_chains(records)
    import datetime
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()  # fmt: skip
    row = {"name": args.name, "what": args.what or args.name, "questions": len(records),
           "machine": machine(), "date": datetime.date.today().isoformat(), "commit": commit,
           **counts}  # fmt: skip
    save_result(f"chain_labels-{args.name}", row)
    print_table(["model, data", "label", "on the right choice", "right choices supported",
                 "wrong choices supported", "margin"], rows_of(args.name, row["what"], counts))  # fmt: skip


if __name__ == "__main__":
    main()
