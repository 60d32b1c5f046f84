"""The results tables of docs/benchmarks.md, generated from benchmarks/results/: each table sits
between `<!-- table: NAME -->` and `<!-- /table -->`, and NAME's benchmark script prints it from
its saved results (`--table`, markdown). One command rewrites them; `--check` fails when a page
says something the saved results do not (a test runs it).

    .venv/bin/python benchmarks/report.py --write
    .venv/bin/python benchmarks/report.py --check
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import re
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = [
    ROOT / "docs" / name
    for name in (
        "benchmarks.md",
        "benchmarks-multihop.md",
        "status.md",
        "riches.md",
        "chains.md",
        "bad-input.md",
    )
] + [ROOT / "README.md"]
CGR_OBQA = ["cgr_ablations.py", "--train-questions", "0", "--seeds", "1", "2", "3"]
IRCOT_HOTPOTQA = ["ircot.py", "--table", "--datasets", "hotpotqa", "--methods", "oner", "ircot"]
BUDGET_CELLS = [f"ircot-{d}-ircot_chains-100-llamacpp" for d in ("hotpotqa", "2wiki", "musique")]
CGR_EVIDENCE = [
    f"checkpoints/bench/cgr_ablations-obqa-cgr-q0-e1-l128-s{s}/best.ckpt" for s in (1, 2, 3)
]
SPEED_TAGS = ["quickstart-r1", "quickstart-r2", "quickstart-r3", "quickstart-fused",
              "quickstart-nobf16", "obqa-b32"]  # fmt: skip
# table name -> the benchmark script and its arguments (each prints from saved results only: the
# check runs on a fresh clone, without ../shared, checkpoints or caches)
TABLES = {
    "results-summary": ["summary.py", "--table"],
    "status-obqa": ["summary.py", "--status"],
    "figure4-loss-terms": ["mechanism.py", "--table"],
    "evidence-order": ["cgr_ablations.py", "--train-questions", "0", "--epochs", "1", "--lr", "1e-4",
                       "--seeds", "1", "--rows", "no_chain_losses", "--settings", "authors",
                       "--evidence-order", "retriever", "--table", "--order-table"],
    "settings-pairs": ["cgr_ablations.py", "--train-questions", "0", "--epochs", "1", "--lr", "1e-4",
                       "--seeds", "1", "2", "--rows", "no_chain_losses", "no_global", "cgr", "--table",
                       "--settings-table"],
    "similar-links-training": ["cgr_ablations.py", "--train-questions", "0", "--epochs", "1", "--lr",
                               "1e-4", "--seeds", "1", "--rows", "no_chain_losses", "--settings",
                               "authors", "--link-similarity", "0.5", "--table", "--similarity-table"],
    "cgr-obqa-e1": [*CGR_OBQA, "--rows", "reader", "iterative", "cgr", "--table", "--brief"],
    "cgr-obqa-e2": [*CGR_OBQA, "--epochs", "2", "--rows", "iterative", "chains", "cgr",
                    "no_chain_losses", "--table", "--brief"],
    "cgr-obqa-mpnet": ["cgr_ablations.py", "--reader", "mpnet", "--train-questions", "0",
                       "--seeds", "1", "2", "--rows", "reader", "iterative", "cgr", "--table", "--brief"],
    "cgr-arc": ["cgr_ablations.py", "--dataset", "arc_challenge", "--train-questions", "3200",
                "--seeds", "1", "2", "3", "--rows", "reader", "iterative", "cgr", "--table"],
    "cgr-arc-e2": ["cgr_ablations.py", "--dataset", "arc_challenge", "--train-questions", "3200",
                   "--epochs", "2", "--lr", "1e-4", "--seeds", "1", "--rows", "iterative", "cgr",
                   "--table"],
    "cgr-evidence": ["cgr_evidence.py", "--table", "--checkpoint", *CGR_EVIDENCE],
    "evidence-obqa": ["evidence.py", "--table", "--settings", "none", "bm25", "dense", "dense_l256",
                      "beam", "chains", "chains_retriever", "beam_open_book5", "gold"],
    "reader-budget": ["evidence.py", "--reader-table"],
    "chain-quality-dev": ["chain_quality.py", "--table", "--without-support"],
    "chain-quality-train": ["chain_quality.py", "--split", "train", "--table", "--without-support"],
    "chain-support": ["chain_support.py", "--table"],
    "chain-labels": ["chain_labels.py", "--table"],
    "ircot-server": ["ircot_server.py", "--table"],
    "chain-quality-support": ["chain_quality.py", "--support-table"],
    "chain-verifier": ["chain_verifier.py", "--table"],
    "explain-speed": ["explain_speed.py", "--table"],
    "amr-parser": ["amr_parser.py", "--table"],
    "ircot": ["ircot.py", "--table", "--no-types", "--methods", "nor", "oner", "ircot", "beam", "chains",
              "ircot_chains"],
    "ircot-question-recall": ["ircot.py", "--table", "--question-recall", "2", "4", "6", "8", "10", "15"],
    "ircot-float32": [*IRCOT_HOTPOTQA, "--backend", "transformers"],
    "ircot-int8": [*IRCOT_HOTPOTQA, "--backend", "transformers", "--quantize", "int8"],
    "ircot-generation": ["ircot_generation.py", "--n", "8", "--table"],
    "multihop": ["multihop.py", "--n", "500", "--table"],
    "multihop-bridges": ["multihop.py", "--bridges", "--table"],
    "multihop-ircot-budget": ["multihop.py", "--n", "100", "--ks", "4", "15", "--no-types", "--table"],
    "multihop-per-question-budget": ["multihop.py", "--budget-from", *BUDGET_CELLS, "--methods",
                                     "bm25", "dense", "beam", "chains", "--table"],
    "train-speed": ["train_speed.py", "--table", "--tags", *SPEED_TAGS],
    "refresh-speed": ["refresh_speed.py", "--table"],
    "retrieval-speed": ["retrieval_speed.py", "--table"],
    "riches-quality": ["riches.py", "--table", "--scale"],
    "riches-index": ["riches.py", "--table", "--datasets"],
    "bad-inputs": ["bad_inputs.py", "--table"],
    "open-corpus": ["open_corpus.py", "--table"],
}  # fmt: skip
BLOCK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def table(name: str) -> str:
    """What NAME's script prints, run in this process (the imports are shared)."""
    script, *args = TABLES[name]
    out, argv = io.StringIO(), sys.argv
    sys.argv = [script, *args]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(ROOT / "benchmarks" / script), run_name="__main__")
    finally:
        sys.argv = argv
    return markdown_blocks(out.getvalue())


def markdown_blocks(printed: str) -> str:
    """A blank line between a table and the text around it (a table glued to a caption line
    renders as part of the paragraph) and between two printed lines (each its own paragraph,
    as on the terminal), none at either end."""
    lines: list[str] = []
    for line in printed.strip().splitlines():
        line = line.strip() if not line.startswith("|") else line.rstrip()
        if (
            lines
            and lines[-1]
            and line
            and not (line.startswith("|") and lines[-1].startswith("|"))
        ):
            lines.append("")
        lines.append(line)
    return "\n" + "\n".join(lines) + "\n\n"


def rendered(text: str, cache: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        name = match.group(2)
        if name not in TABLES:
            raise SystemExit(f"unknown table {name!r} (benchmarks/report.py TABLES)")
        if name not in cache:
            cache[name] = table(name)
        return f"{match.group(1)}{cache[name]}{match.group(4)}"

    return BLOCK.sub(fill, text)


def main() -> int:
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the tables in the pages")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page differs")
    args = parser.parse_args()
    cache: dict[str, str] = {}
    stale = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = rendered(text, cache)
        if new != text:
            stale.append(page)
            if args.write:  # atomic: a full disk leaves the old page, never half of it
                from cgr.files import atomic_write_text

                atomic_write_text(page, new)
            else:
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), str(page), "from benchmarks/results"))  # fmt: skip
    if missing := sorted(set(TABLES) - set(cache)):  # a page cut short lost its blocks
        print(f"table(s) in no page (a page cut short? restore it from git): {', '.join(missing)}")
        return 1
    if args.check and stale:
        print(f"\n{len(stale)} page(s) differ from the saved results: benchmarks/report.py --write")
        return 1
    print(f"{len(cache)} table(s) {'written' if args.write else 'checked'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
