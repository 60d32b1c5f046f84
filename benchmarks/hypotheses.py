"""What the hypothesis seam repair changes on real dev sets: how many (question, choice)
hypotheses read differently with it ("used for to cut" -> "used to cut", "made of of wood" ->
"made of wood"), and a sample to check by eye.

    .venv/bin/python benchmarks/hypotheses.py            # OBQA + ARC-Easy + ARC-Challenge dev
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgr.data.hypothesis import HypothesisGenerator  # noqa: E402
from cgr.data.loaders import load_multiple_choice  # noqa: E402
from cgr.data.root import data_root  # noqa: E402

DATA = data_root()  # cgr data get openbookqa arc
FILES = {
    "OBQA dev": DATA / "openbookqa" / "Main" / "dev.jsonl",
    "ARC-Easy dev": DATA / "arc" / "ARC-Easy" / "ARC-Easy-Dev.jsonl",
    "ARC-Challenge dev": DATA / "arc" / "ARC-Challenge" / "ARC-Challenge-Dev.jsonl",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=12, help="changed hypotheses printed")
    args = parser.parse_args()
    repaired, raw = HypothesisGenerator(), HypothesisGenerator(repair_joins=False)
    changed_all: list[tuple[str, str, str]] = []
    print("| dev set | hypotheses | changed by the repair | share |")
    print("|---|---|---|---|")
    for name, path in FILES.items():
        questions = load_multiple_choice(path)
        items = [(q.stem, [c.text for c in q.choices]) for q in questions]
        before, after = raw.generate_many(items), repaired.generate_many(items)
        pairs = [(q.id, a, b) for q, bs, as_ in zip(questions, before, after, strict=True)
                 for b, a in zip(bs, as_, strict=True)]  # fmt: skip
        changed = [(qid, b, a) for qid, a, b in pairs if a != b]
        changed_all += changed
        print(
            f"| {name} | {len(pairs)} | {len(changed)} | {100 * len(changed) / len(pairs):.1f} % |"
        )
    print()
    for qid, before, after in random.Random(0).sample(
        changed_all, min(args.sample, len(changed_all))
    ):
        print(f"{qid}: {before!r}\n    -> {after!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
