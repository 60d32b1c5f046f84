"""What one CGR evidence refresh costs (the re-retrieval of train and dev evidence with the
trained query encoder before each epoch after the first): the seconds of beam retrieval
(hypotheses, ~44 query encodings each at K=10, T=2) and of chains (AMR concepts, chain search,
evidence selection) for a sample of OBQA train questions, scaled to a full refresh (4,957 train
+ 500 dev questions). The base query encoder stands in for the trained one (same cost).

    .venv/bin/python benchmarks/refresh_speed.py --questions 256 --label fact-path-search
    .venv/bin/python benchmarks/refresh_speed.py --table
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, load_result, machine, print_table, save_result  # noqa: E402

CONFIG = "configs/obqa_cgr_cpu.yaml"
REFRESH_QUESTIONS = 4957 + 500  # OBQA train + dev


def measure(questions: int) -> dict:
    from cgr.data.loaders import load_multiple_choice
    from cgr.evidence.pipeline import EvidencePipeline
    from cgr.training.config import resolved_config

    data = resolved_config(CONFIG)["data"]
    records = load_multiple_choice(data["train_file"])
    pipeline = EvidencePipeline.from_settings(data, progress=False)
    pipeline.select(pipeline.pools(records[-8:]))  # models, index, chain workers loaded
    sample = records[:questions]
    start = time.perf_counter()
    examples = pipeline.pools(sample)
    retrieved = time.perf_counter()
    pipeline.select(examples)
    done = time.perf_counter()
    hypotheses = sum(len(ex.hypotheses) for ex in examples)
    chains = sum(bool(chains) for ex in examples for chains in ex.chains)
    return {"questions": questions, "retrieval_s": retrieved - start, "chains_s": done - retrieved,
            "hypotheses_with_chains": chains / hypotheses, "machine": machine()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=256)
    parser.add_argument("--label", default="current", help="names the saved row (e.g. the search)")
    parser.add_argument("--note", default="", help="e.g. 'cores shared with a training run'")
    parser.add_argument("--table", action="store_true", help="print the saved rows only")
    args = parser.parse_args()
    if not args.table:
        row = {"label": args.label, "note": args.note, **measure(args.questions)}
        save_result(f"refresh_speed-{args.label}", row)
    rows = []
    for path in sorted(RESULTS.glob("refresh_speed-*.json")):
        r = load_result(path.stem)
        scale = REFRESH_QUESTIONS / r["questions"] / 60
        rows.append([r["label"], r["questions"], f"{1000 * r['retrieval_s'] / r['questions']:.0f}",
                     f"{1000 * r['chains_s'] / r['questions']:.0f}",
                     f"{scale * r['retrieval_s']:.1f}", f"{scale * r['chains_s']:.1f}",
                     f"{100 * r['hypotheses_with_chains']:.1f}", r["note"] or "–"])  # fmt: skip
    print(f"One evidence refresh of OBQA ({REFRESH_QUESTIONS:,} questions), from a timed sample; "
          f"{CONFIG} settings")  # fmt: skip
    print_table(["search", "questions timed", "retrieval ms/question", "chains ms/question",
                 "refresh retrieval min", "refresh chains min", "hypotheses with a chain %", "note"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
