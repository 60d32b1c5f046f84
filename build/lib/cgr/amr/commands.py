"""`cgr amr parse` and `cgr amr smatch`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cgr.amr.parsers import AMRConfig, CachedParser
from cgr.amr.smatch_score import read_gold, smatch_f1
from cgr.data.loaders import require_file
from cgr.validation import at_least


def _add_backend(parser: argparse.ArgumentParser) -> None:
    defaults = AMRConfig()
    parser.add_argument("--backend", default=defaults.backend, choices=["embedded", "amrlib"])
    parser.add_argument("--model-dir", default=None, help="amrlib model folder (backend amrlib)")
    parser.add_argument("--cache", default=defaults.cache, help="sqlite parse cache")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)


def _parser(args) -> CachedParser:
    return CachedParser(AMRConfig(args.backend, args.model_dir, args.batch_size, args.cache))


def parse_command(args) -> int:
    lines = require_file(args.input, "sentences file").read_text(encoding="utf-8").splitlines()
    sentences = [line.strip() for line in lines]
    start = time.perf_counter()
    graphs = _parser(args).parse([s for s in sentences if s])
    seconds = time.perf_counter() - start
    it = iter(graphs)
    failed = 0
    blocks = []
    for sentence in sentences:
        graph = next(it) if sentence else None
        if graph is None:
            failed += 1
            graph = f"# ::snt {sentence}\n(e / empty-graph)"  # keeps one graph per input line
        elif "# ::snt" not in graph:
            graph = f"# ::snt {sentence}\n{graph}"
        blocks.append(graph)
    Path(args.out).write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    print(f"parsed {len(sentences)} sentences ({failed} failed) in {seconds:.1f}s -> {args.out}")
    return 0


def smatch_command(args) -> int:
    at_least("--limit", args.limit, 0)  # a negative one would drop graphs from the end
    gold = read_gold(args.gold)[: args.limit or None]
    graphs = _parser(args).parse([s for s, _ in gold])
    scores = smatch_f1(graphs, [g for _, g in gold])
    print(f"graphs: {len(gold)}, failed parses: {sum(g is None for g in graphs)}")
    print(f"smatch_precision: {scores['precision']:.4f}")
    print(f"smatch_recall: {scores['recall']:.4f}")
    print(f"smatch_f1: {scores['f1']:.4f}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="cgr amr", description="AMR parsing with the cgr backends."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="one PENMAN graph (with # ::snt) per input line")
    p.add_argument("--in", dest="input", required=True)
    p.add_argument("--out", required=True)
    _add_backend(p)
    p.set_defaults(run=parse_command)
    s = sub.add_parser("smatch", help="parse the # ::snt sentences of a gold file, print Smatch F1")
    s.add_argument("--gold", required=True)
    s.add_argument("--limit", type=int, default=0, help="score only the first N gold graphs")
    _add_backend(s)
    s.set_defaults(run=smatch_command)
    args = parser.parse_args(argv)
    return args.run(args)
