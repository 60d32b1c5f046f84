"""The margin a chain needs to be labelled "supports" (cgr.evaluation.support.chain_label),
fitted to the model on its own training questions (never dev or test) when `cgr train` ends,
stored beside the checkpoint (`chain_labels.json`) and in an exported model folder
(`cgr_config.json`, `chain_labels`), and used by every command that labels chains. A model
without one labels with the stated default (cgr.evaluation.support.MARGIN) and says so.

The fit: over the training questions' choices that have chains, the best margin among the
choice's chains whose reading prefers the choice (support minus the best support of another
choice's chain), and the threshold that best separates right choices from wrong ones (the most
right choices given a supporting chain minus wrong ones; ties to the higher threshold). The
record keeps what it was fitted on and the shares it reaches, overall and by number of
choices."""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from pathlib import Path

from cgr.errors import ConfigError

FILE = "chain_labels.json"
GRID = [round(0.01 * i, 2) for i in range(0, 51)]  # margins 0.00 .. 0.50
MAX_QUESTIONS = 1000  # a fit on more training questions than this reads the first ones


def best_margins(records: list[dict]) -> list[tuple[float, bool, int]]:
    """(best margin of a chain that could support, right choice?, number of choices) for every
    choice with a judged chain of the prediction records (Prediction.to_dict); a choice none of
    whose chains' readings prefer it gets -1 (no threshold makes it supported)."""
    rows = []
    for record in records:
        answer = record.get("answer")
        if answer is None:
            continue
        n = len(record["choices"])
        for choice in record["choices"]:
            judged = [c for c in choice.get("chains", [])
                      if _number(c.get("margin")) and _number(c.get("lead"))]  # fmt: skip
            if judged:
                best = max((c["margin"] for c in judged if c["lead"] > 0), default=-1.0)
                rows.append((best, choice["label"] == answer, n))
    return rows


def _shares(rows: list[tuple[float, bool, int]], threshold: float) -> tuple[float, float]:
    right = [r for r in rows if r[1]]
    wrong = [r for r in rows if not r[1]]
    tpr = sum(r[0] >= threshold for r in right) / len(right) if right else math.nan
    fpr = sum(r[0] >= threshold for r in wrong) / len(wrong) if wrong else math.nan
    return tpr, fpr


def fit_margin(records: list[dict], fitted_on: dict) -> dict:
    rows = best_margins(records)
    if not any(r[1] for r in rows) or all(r[1] for r in rows):
        raise ConfigError("chain labels: no training question has chains on both a right and a "
                          "wrong choice to fit a margin on")  # fmt: skip
    scored = [(tpr - fpr, margin) for margin in GRID for tpr, fpr in [_shares(rows, margin)]]
    _, margin = max(scored)
    tpr, fpr = _shares(rows, margin)
    by_choices = {}
    groups: dict[int, list] = defaultdict(list)
    for row in rows:
        groups[row[2]].append(row)
    for n, group in sorted(groups.items()):
        t, f = _shares(group, margin)
        by_choices[str(n)] = {"choices": len(group), "right_supported": _round(t),
                              "wrong_supported": _round(f)}  # fmt: skip
    return {"margin": margin, "rule": "the margin with the most right minus wrong choices given "
            "a supporting chain", "fitted_on": {**fitted_on, "choices_with_chains": len(rows)},
            "right_supported": _round(tpr), "wrong_supported": _round(fpr),
            "by_choices": by_choices}  # fmt: skip


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def read_margin(record: object, where: str) -> float | None:
    """The fitted margin of a stored record, checked (a shared file is data, not trusted); None
    for no record, or one fitted to the older lead rule (said)."""
    if record is None:
        return None
    if isinstance(record, dict) and "margin" not in record and "lead" in record:
        logging.getLogger(__name__).info(
            "%s: chain_labels holds a lead fitted to an older rule; the stated default margin "
            "labels the chains (re-export or retrain to fit one)", where)  # fmt: skip
        return None
    margin = record.get("margin") if isinstance(record, dict) else None
    if not _number(margin) or not 0 <= margin <= 1:
        raise ConfigError(f"{where}: chain_labels.margin must be a number in [0, 1], not "
                          f"{margin!r}")  # fmt: skip
    return float(margin)


def beside(checkpoint: Path) -> dict | None:
    """The fit `cgr train` stored beside a checkpoint, if any."""
    path = Path(checkpoint).parent / FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a chain-label fit ({e})") from None


def training_sample(train: str | list[str], out: Path, limit: int = MAX_QUESTIONS) -> int:
    """The first `limit` training questions (over the train files, in order) written to `out`
    as official-format jsonl lines: what the fit reads."""
    from cgr.data.root import data_path

    files = train if isinstance(train, list) else [train]
    kept = []
    for name in files:
        for line in data_path(name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                kept.append(line)
            if len(kept) >= limit:
                break
        if len(kept) >= limit:
            break
    out.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return len(kept)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
