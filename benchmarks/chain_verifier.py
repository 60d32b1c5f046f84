"""A chain verifier trained on a training file, measured against the reader's support alone.

The support score (cgr/evaluation/support.py) is the reader's judgement of one chain. A
verifier adds what the chain search and the pool know about the chain, and the contrast
between the choices of one question, and is fitted on training questions: a right answer's
chains through a gold fact are the positives, the wrong answers' chains the negatives (the
right answer's other chains are left out: they may or may not support it). A logistic
regression over a few named features, so that its weights can be read and stored as numbers.

Measured on the dev file, each signal in turn ranking every choice's chains:
* AUC of a choice's best chain score, right vs wrong choices;
* right / wrong choices shown a supporting chain, at the threshold the training file
  calibrates (Youden's J over the choices' best scores) for each signal;
* the gold fact on the chain shown first;
* the signal as an answer on its own (the choice whose best chain scores highest).

    .venv/bin/python benchmarks/chain_verifier.py --checkpoint CKPT --train TRAIN.jsonl \
        --train-questions 400 --name obqa-...
    .venv/bin/python benchmarks/chain_verifier.py --table
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common  # noqa: E402
from benchmarks.chain_support import (  # noqa: E402
    CHAIN_ORDERS,
    auc,
    auc_difference,
    chain_settings,
    gold_texts,
    on_gold,
    youden,
)

SEED = 0
SUPPORT_READER = "support_reader"  # a support reader's p(choice | the chain's facts alone)
SUPPORT_READER_MARGIN = "support_reader_margin"  # its support minus the other choices' best
MARGIN = "margin"  # support minus the best support any other choice of the question has
FEATURES = (
    "support",  # the reader's p(choice | the chain's facts alone)
    MARGIN,  # cgr.evaluation.support.margins
    "search_rank",  # the chain's place in the search's order (0 first), / candidates
    "facts",  # facts on the chain
    "open_book",  # the chain holds an open-book fact
    "pool_score",  # the best retrieval score of its facts in the choice's pool
    "pool_rank",  # the best pool rank of its facts, / pool size (0 first)
)
# the margin signals, and the column of the support each is a margin over
MARGIN_OF = {MARGIN: 0, SUPPORT_READER_MARGIN: len(FEATURES)}


def chain_features(examples, support, candidates: int) -> list[list[list[list[float]]]]:
    """Per example, choice and scored chain, the FEATURES as numbers."""
    from cgr.evaluation.support import margins

    out = []
    for ex, sup in zip(examples, support, strict=True):
        rows = []
        for c, (scores, margin) in enumerate(zip(sup, margins(sup), strict=True)):
            pool = {f.text: (r, f) for r, f in enumerate(ex.pool[c] if ex.pool else [])}
            size = max(len(pool), 1)
            feats = []
            for k, (chain, s, m) in enumerate(zip(ex.chains[c], scores, margin, strict=False)):
                hits = [pool[t] for t in chain.texts if t in pool]
                feats.append([
                    s, m, k / candidates, float(len(chain.facts)),
                    float(any(f.source == "open_book" for _, f in hits)),
                    max((f.score for _, f in hits), default=0.0),
                    min((r for r, _ in hits), default=size) / size,
                ])  # fmt: skip
            rows.append(feats)
        out.append(rows)
    return out


def scored_examples(checkpoint: Path, data: str | None, limit: int, candidates: int, rng,
                    support_reader: str | None = None, ids: set[str] | None = None,
                    chains: dict | None = None):  # fmt: skip
    """The questions of `data` (a sample of `limit`, or those in `ids`), their examples,
    supports and features; with `support_reader`, its support and margin of each chain as
    the last two features.
    `chains`: data.chains settings in place of the checkpoint's (chain_order, link_similarity,
    rank_encoder), so that the verifier judges the chains a chain_support run judged."""
    from cgr.data.loaders import load_multiple_choice
    from cgr.evaluation.support import chain_support, margins

    if ids is None and data is not None and limit:  # a sample, drawn before any chain search
        every = load_multiple_choice(data)
        ids = {q.id for q in (rng.sample(every, limit) if len(every) > limit else every)}
    module, _, questions, examples = common.cached_examples(
        checkpoint, data, chains=chains, ids=ids
    )
    support = chain_support(module, examples, candidates)
    features = chain_features(examples, support, candidates)
    if support_reader:
        judged = chain_support(judge_of(support_reader), examples, candidates)
        for feats, sup in zip(features, judged, strict=True):
            for rows, scores, margin in zip(feats, sup, margins(sup), strict=True):
                for row, value, m in zip(rows, scores, margin, strict=True):
                    row.extend((value, m))
    return questions, examples, support, features


@functools.lru_cache(maxsize=1)
def judge_of(folder: str):
    """The support reader `folder`, loaded once for the training and the dev questions."""
    from cgr.pretrained.support_reader import load_support_reader

    return load_support_reader(folder)


def training_rows(questions, examples, features) -> tuple[list[list[float]], list[int]]:
    x, y = [], []
    for q, ex, feats in zip(questions, examples, features, strict=True):
        gold = gold_texts(q)
        for c, rows in enumerate(feats):
            for chain, row in zip(ex.chains[c], rows, strict=False):
                if c != q.answer_index:
                    x.append(row), y.append(0)
                elif gold and on_gold(chain.texts, gold):
                    x.append(row), y.append(1)
    return x, y


def fit(x: list[list[float]], y: list[int], names: tuple[str, ...] = FEATURES) -> dict:
    """Standardised logistic regression; its weights as numbers (nothing pickled)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    arr = np.asarray(x, dtype=float)
    mean, std = arr.mean(0), arr.std(0) + 1e-9
    model = LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced")
    model.fit((arr - mean) / std, np.asarray(y))
    return {"features": list(names), "mean": mean.tolist(), "std": std.tolist(),
            "weights": model.coef_[0].tolist(), "bias": float(model.intercept_[0])}  # fmt: skip


def verify(verifier: dict, row: list[float]) -> float:
    z = verifier["bias"] + sum(
        w * (v - m) / s
        for w, v, m, s in zip(
            verifier["weights"], row, verifier["mean"], verifier["std"], strict=True
        )
    )
    return 1 / (1 + math.exp(-z))


def signals(verifier: dict) -> dict:
    """Each signal as a function of a chain's feature row (a support reader's support and
    margin follow FEATURES)."""
    out = {"support": lambda r: r[0], "verifier": lambda r: verify(verifier, r)}
    if MARGIN in verifier["features"]:  # runs saved before the margin was a signal lack it
        out[MARGIN] = lambda r: r[1]
    if SUPPORT_READER in verifier["features"]:
        out[SUPPORT_READER] = lambda r: r[len(FEATURES)]
        if SUPPORT_READER_MARGIN in verifier["features"]:
            out[SUPPORT_READER_MARGIN] = lambda r: r[len(FEATURES) + 1]
    return out


def best_scores(features, signal, margin_of: int | None = None) -> list[list[tuple[float, int | None]]]:  # fmt: skip
    """Per example and choice: its best chain's score under `signal` and that chain's index.
    A choice with no chain scores 0, or, for a margin over the support in column `margin_of`
    (MARGIN_OF), 0 minus the best support of the other choices (as margins() reads it)."""
    from cgr.evaluation.support import margins

    out = []
    for feats in features:
        empty = [0.0] * len(feats)
        if margin_of is not None:  # a chainless choice's best support is 0: its margin, -others
            best = [[max((r[margin_of] for r in rows), default=0.0)] for rows in feats]
            empty = [m[0] for m in margins(best)]
        out.append([max([(signal(r), k) for k, r in enumerate(rows)], default=(e, None))
                    for rows, e in zip(feats, empty, strict=True)])  # fmt: skip
    return out


def calibrate(best, questions) -> float:
    """The threshold the training questions give a signal (Youden's J, right vs wrong)."""
    return youden([(s, c == q.answer_index) for q, row in zip(questions, best, strict=True)
                   for c, (s, _) in enumerate(row)])  # fmt: skip


def evaluate(questions, examples, best, threshold: float) -> dict:
    right, wrong, answered, gold_first, with_gold = [], [], [], 0, 0
    for q, ex, row in zip(questions, examples, best, strict=True):
        for c, (s, _) in enumerate(row):
            (right if c == q.answer_index else wrong).append(s)
        answered.append(int(max(range(len(row)), key=lambda c: row[c][0]) == q.answer_index))
        if gold := gold_texts(q):
            with_gold += 1
            k = row[q.answer_index][1]
            gold_first += k is not None and on_gold(ex.chains[q.answer_index][k].texts, gold)
    return {
        "auc": auc(right, wrong), "threshold": threshold,
        "right_supported": 100 * sum(s >= threshold for s in right) / len(right),
        "wrong_supported": 100 * sum(s >= threshold for s in wrong) / len(wrong),
        "gold_first": 100 * gold_first / with_gold if with_gold else None,
        "answer_accuracy": 100 * sum(answered) / len(questions),
        "answered": answered,  # per dev question, in the file's order: for paired intervals
        "best": [[q.answer_index, [round(s, 5) for s, _ in row]]
                 for q, row in zip(questions, best, strict=True)],  # for paired AUC intervals
    }  # fmt: skip


def measure(checkpoint: Path, train: str, limit: int, candidates: int,
            support_reader: str | None = None, chains: dict | None = None) -> dict:  # fmt: skip
    """The verifier fitted on `limit` training questions, or with `support_reader` on the ones
    it left out (it trained on the others), and every signal measured on the dev file."""
    from benchmarks.chain_support import held_out_ids

    rng = random.Random(SEED)
    tq, tex, _, tfeats = scored_examples(checkpoint, train, limit, candidates, rng,
                                         support_reader, held_out_ids(support_reader),
                                         chains)  # fmt: skip
    x, y = training_rows(tq, tex, tfeats)
    judged = (SUPPORT_READER, SUPPORT_READER_MARGIN) if support_reader else ()
    verifier = fit(x, y, FEATURES + judged)
    verifier["support_reader"] = support_reader
    verifier["chains"] = chains or {}
    thresholds = {name: calibrate(best_scores(tfeats, signal, MARGIN_OF.get(name)), tq)
                  for name, signal in signals(verifier).items()}  # fmt: skip
    out = {"train_questions": len(tq), "positives": sum(y), "negatives": len(y) - sum(y)}
    return out | measure_dev(checkpoint, train, candidates, verifier, thresholds)


def measure_dev(checkpoint: Path, train: str, candidates: int, verifier: dict,
                thresholds: dict[str, float]) -> dict:  # fmt: skip
    """Every signal on the checkpoint's dev file, with a fitted verifier and the thresholds the
    training questions gave (a saved run is measured again on dev alone with them)."""
    dq, dex, _, dfeats = scored_examples(checkpoint, None, 0, candidates, random.Random(SEED),
                                         verifier.get("support_reader"),
                                         chains=verifier.get("chains"))  # fmt: skip
    rows = {name: evaluate(dq, dex, best_scores(dfeats, signal, MARGIN_OF.get(name)), thresholds[name])
            for name, signal in signals(verifier).items()}  # fmt: skip
    return {
        "checkpoint": str(checkpoint), "train": train, "candidates": candidates,
        "dev_questions": len(dq), "verifier": verifier, "signals": rows, "machine": common.machine(),
    }  # fmt: skip


def paired_answer(row: dict) -> list[str]:
    """Each signal against support as the answer, paired over the dev questions."""
    lines = []
    base = row["signals"]["support"].get("answered")
    for name, signal in row["signals"].items():
        other = signal.get("answered")
        if name == "support" or not base or not other:
            continue
        a_only = sum(x and not y for x, y in zip(base, other, strict=True))
        b_only = sum(y and not x for x, y in zip(base, other, strict=True))
        diff, lo, hi = common.paired_interval(a_only, b_only, len(base))
        line = (f"{name} − support as the answer: {diff:+.1f} [{lo:+.1f}, {hi:+.1f}] points "
                f"over {len(base)} paired questions, exact McNemar p = "
                f"{common.mcnemar_p(a_only, b_only):.2f}")  # fmt: skip
        if (a := row["signals"]["support"].get("best")) and (b := signal.get("best")):
            d, lo, hi = auc_difference(list(zip(a, b, strict=True)))
            line += f"; AUC right vs wrong {d:+.3f} [{lo:+.3f}, {hi:+.3f}] (bootstrap 95 %)"
        lines.append(line)
    return lines


def table() -> None:
    rows = []
    for path in sorted(common.RESULTS.glob("chain_verifier-*.json")):
        r = common.load_result(path.stem)
        for name, s in r["signals"].items():
            rows.append([path.stem.removeprefix("chain_verifier-"), name, r["train_questions"],
                         f"{s['auc']:.3f}", f"{s['threshold']:.2f}",
                         f"{s['right_supported']:.1f} / {s['wrong_supported']:.1f}",
                         f"{s['gold_first']:.1f}" if s["gold_first"] is not None else "–",
                         f"{s['answer_accuracy']:.1f}", r.get("date", "")])  # fmt: skip
    print("Chain verifier (benchmarks/chain_verifier.py): each signal ranking every choice's "
          "chains, on the dev file; thresholds calibrated on the training questions (Youden's J)")  # fmt: skip
    common.print_table(["run", "signal", "train questions", "AUC right vs wrong", "threshold",
                 "supported right / wrong", "gold on first chain", "as the answer", "date"], rows)  # fmt: skip
    for path in sorted(common.RESULTS.glob("chain_verifier-*.json")):
        for line in paired_answer(common.load_result(path.stem)):
            print(f"{path.stem.removeprefix('chain_verifier-')}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--train", help="a training file with answer keys and gold facts")
    parser.add_argument("--train-questions", type=int, default=400)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--name")
    parser.add_argument("--support-reader",
                        help="a support reader's folder (cgr support-reader): its support as a "
                             "signal and a verifier feature, calibrated on the training "
                             "questions it left out")  # fmt: skip
    parser.add_argument(
        "--search-order",
        choices=CHAIN_ORDERS,
        help="data.chains.chain_order (default: the checkpoint's)",
    )
    parser.add_argument(
        "--link-similarity", type=float, help="data.chains.link_similarity (0: off)"
    )
    parser.add_argument(
        "--rank-encoder", help="data.chains.rank_encoder: a chain ranker (cgr ranker)"
    )
    parser.add_argument("--dev-only", action="store_true",
                        help="measure a saved run (--name) on dev again, with its verifier and thresholds")  # fmt: skip
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if not args.table:
        import datetime

        name = f"chain_verifier-{args.name}"
        if args.dev_only:
            saved = common.load_result(name)
            if saved is None:
                raise SystemExit(f"no saved run {name}")
            thresholds = {k: v["threshold"] for k, v in saved["signals"].items()}
            row = saved | measure_dev(Path(saved["checkpoint"]), saved["train"],
                                      saved["candidates"], saved["verifier"], thresholds)  # fmt: skip
        else:
            chains = chain_settings(args)
            if args.search_order:
                chains["chain_order"] = args.search_order
            row = measure(args.checkpoint, args.train, args.train_questions, args.candidates,
                          args.support_reader, chains)  # fmt: skip
        row["date"] = datetime.date.today().isoformat()
        common.save_result(name, row)
    table()


if __name__ == "__main__":
    main()
