"""Corpus-level Smatch F1 of parsed graphs against a gold AMR file (the `smatch` package)."""

from __future__ import annotations

from pathlib import Path

import penman

from cgr.data.loaders import require_file
from cgr.errors import DataFormatError

EMPTY = "(e / empty-graph)"  # stands for a failed parse: every gold triple counts as missed


def read_gold(path: str | Path) -> list[tuple[str, penman.Graph]]:
    """(sentence, graph) for every graph with an `::id` and `::snt` (skips the unlabeled example)."""
    p = require_file(path, "gold AMR")
    out = []
    for graph in penman.iterdecode(p.read_text(encoding="utf-8")):
        if "id" in graph.metadata and "snt" in graph.metadata:
            out.append((graph.metadata["snt"], graph))
    if not out:
        raise DataFormatError(str(p), None, "# ::snt", "no graphs with ::id and ::snt metadata")
    return out


def one_line(graph: str | penman.Graph | None) -> str:
    if graph is None:
        return EMPTY
    g = penman.decode(graph) if isinstance(graph, str) else graph
    g.metadata = {}
    return penman.encode(g, indent=None)


def smatch_f1(predicted: list[str | None], gold: list[penman.Graph]) -> dict[str, float]:
    import smatch

    match = test = gold_total = 0
    for pred, ref in zip(predicted, gold, strict=True):
        m, t, g = smatch.get_amr_match(one_line(pred), one_line(ref))
        smatch.match_triple_dict.clear()
        match, test, gold_total = match + m, test + t, gold_total + g
    precision, recall, f1 = smatch.compute_f(match, test, gold_total)
    return {"precision": precision, "recall": recall, "f1": f1}
