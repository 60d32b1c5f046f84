"""Is the AMR parser what limits the chains? The parser against the Little Prince gold graphs
(AMR Bank 3.0, all 1,062), scored two ways:

* Smatch (precision, recall, F1 of the graphs' triples), the field's parser score;
* the chain concepts: the concept set `cgr.chains.concepts.amr_concepts` gives the chain
  search (the paper's rules: the root left out, attribute values replacing their node), of the
  parsed graph against that of the gold graph, micro-averaged over sentences; once with the
  package's default switches (`configs/chains/default.yaml`: noun roots link) and once with
  every root kept, so the root's share of the misses shows; and how often the root concept
  (the one the paper's rule keeps from linking) is the gold graph's.

A chain links two facts by a shared concept, so the chain-concept scores, not Smatch's roles,
say how far the parser decides which facts a chain can join. Deterministic.

    .venv/bin/python benchmarks/amr_parser.py [--backend embedded|amrlib --model-dir DIR]
    .venv/bin/python benchmarks/amr_parser.py --table
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_result, machine, print_table, save_result  # noqa: E402
from cgr.data.root import data_root

GOLD = data_root() / "amr/amr-bank-struct-v3.0.txt"  # cgr data get amr
# the chain settings the concepts are read with: the package's default, and every root linking
SETTINGS = {"default": {"merge_noun_roots": True}, "roots kept": {"merge_roots": True}}


def concept_scores(predicted: list, gold: list, **switches) -> dict[str, float]:
    """Micro precision / recall / F1 of the chain concepts, and the root concept's accuracy."""
    from cgr.chains.concepts import amr_concepts

    hits = found = wanted = roots = 0
    for pred, ref in zip(predicted, gold, strict=True):
        p, g = amr_concepts(pred, **switches), amr_concepts(ref, **switches)
        hits, found, wanted = hits + len(p.concepts & g.concepts), found + len(p.concepts), wanted + len(g.concepts)  # fmt: skip
        roots += p.root is not None and p.root == g.root
    precision, recall = hits / max(found, 1), hits / max(wanted, 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "root_accuracy": roots / len(gold)}


def measure(backend: str, model_dir: str | None) -> dict:
    from cgr.amr.parsers import AMRConfig, CachedParser
    from cgr.amr.smatch_score import read_gold, smatch_f1

    gold = read_gold(GOLD)
    start = time.perf_counter()
    parsed = CachedParser(AMRConfig(backend, model_dir), progress=False).parse([s for s, _ in gold])
    seconds = time.perf_counter() - start
    graphs = [g for _, g in gold]
    return {
        "backend": backend,
        "graphs": len(gold),
        "failed_parses": sum(g is None for g in parsed),
        "parse_s": seconds,
        "smatch": smatch_f1(parsed, graphs),
        "concepts": {name: concept_scores(parsed, graphs, **s) for name, s in SETTINGS.items()},
    }


def table(backends: list[str]) -> None:
    rows, found = [], []
    for backend in backends:
        if (row := load_result(f"amr_parser-{backend}")) is None:
            continue
        found.append(row)
        s, c = row["smatch"], row["concepts"]
        rows.append([backend, row["graphs"], *(f"{100 * s[k]:.1f}" for k in ("precision", "recall", "f1")),
                     *(f"{100 * c[n][k]:.1f}" for n in SETTINGS for k in ("precision", "recall", "f1")),
                     f"{100 * c['default']['root_accuracy']:.1f}"])  # fmt: skip
    if rows:
        print(f"Little Prince gold AMRs ({found[0]['machine']}, {found[0]['date']}):\n")
        cells = [f"{n} {k}" for n in ("chain concepts", "concepts, roots kept") for k in ("P", "R", "F1")]  # fmt: skip
        print_table(["parser", "graphs", "Smatch P", "Smatch R", "Smatch F1", *cells, "root right %"], rows)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="embedded", choices=["embedded", "amrlib"])
    parser.add_argument("--model-dir", default=None, help="amrlib model folder (backend amrlib)")
    parser.add_argument("--table", action="store_true", help="print the saved rows, run nothing")
    args = parser.parse_args()
    if not args.table:
        row = measure(args.backend, args.model_dir)
        row.update(machine=machine(), date=time.strftime("%Y-%m-%d"))
        save_result(f"amr_parser-{args.backend}", row)
    table(["embedded", "amrlib"])


if __name__ == "__main__":
    main()
