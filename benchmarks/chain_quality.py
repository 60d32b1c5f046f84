"""Chain quality against human explanations: do the chains select the gold facts?

For each chain setting (the paper's graph and Ê, the package's switches one at a time), on
OpenBookQA dev (gold: `fact1`) and ARC-Challenge + ARC-Easy dev (gold: the WorldTree V2.1
explanation's facts, which the corpus holds), with the pools of `configs/obqa.yaml` /
`configs/arc_challenge.yaml` (beam retrieval, K=10, T=2, base MiniLM encoder):

* |Ê| per choice (chain facts only, before any padding);
* for the gold answer: a gold fact in Ê / on the best chain (the one `cgr explain` and the
  chains page show first), and the pool's top-|Ê| by cosine to the hypothesis (the retrieval
  score) as the baseline Ê must beat at equal size;
* precision of the gold answer's Ê against the gold facts, and the same top-|Ê| baseline's;
* share of right and of wrong hypotheses with at least one chain;
* ROC AUC of a per-choice chain score (the best mean retrieval score of its chains, no chain =
  lowest) at telling the right choice from the wrong ones.

Deterministic (no training); `--split train` measures on training questions (the tuning set:
OBQA train `fact1`, WorldTree train explanations), the default `dev` is what the docs report.

    .venv/bin/python benchmarks/chain_quality.py [--datasets obqa arc] [--settings paper default ...]
    .venv/bin/python benchmarks/chain_quality.py --table
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    load_result,
    machine,
    mcnemar_p,
    paired_hits,
    paired_interval,
    print_table,
    save_result,
    train_config,
)
from cgr.chains.builder import ChainBuilder, ChainConfig  # noqa: E402
from cgr.data.root import data_root
from cgr.evidence.selection import fact_relevance, text_key  # noqa: E402
from cgr.retrieval.factory import RetrievalConfig  # noqa: E402
from cgr.training.datamodule import QADataModule  # noqa: E402

DATA = data_root()  # cgr data get openbookqa arc worldtree entailmentbank
WORLDTREE = DATA / "corpus/worldtree_v2.1"


@dataclass(frozen=True)
class Dataset:
    config: str
    files: dict[str, list[str]]  # split -> question files
    gold_files: dict[str, list[str]]  # split -> WorldTree explanations (ARC)


DATASETS = {
    "obqa": Dataset(
        "configs/obqa.yaml",
        {
            "dev": [str(DATA / "openbookqa/Additional/dev_complete.jsonl")],
            "train": [str(DATA / "openbookqa/Additional/train_complete.jsonl")],
        },
        {"dev": [], "train": []},
    ),  # fmt: skip
    "arc": Dataset(
        "configs/arc_challenge.yaml",
        {
            "dev": [str(DATA / f"arc/ARC-{s}/ARC-{s}-Dev.jsonl") for s in ("Challenge", "Easy")],
            "train": [
                str(DATA / f"arc/ARC-{s}/ARC-{s}-Train.jsonl") for s in ("Challenge", "Easy")
            ],
        },
        {
            "dev": [str(WORLDTREE / "explanations.dev.tsv")],
            "train": [str(WORLDTREE / "explanations.train.tsv")],
        },
    ),  # fmt: skip
}
TRAIN_QUESTIONS = 600  # the tuning share of each training set (pools cost ~1 s per question)


def pools(dataset: str, split: str):
    """The questions' pools (cached under .cache/cgr/pools like training's), with gold facts;
    questions without gold facts are dropped (they cannot be scored)."""
    ds = DATASETS[dataset]
    config = train_config(ds.config)
    data = config["data"]
    files = ds.files[split]
    module = QADataModule(
        train_file=files, dev_file=files, retrieval=RetrievalConfig(**data["retrieval"]),
        chains=ChainConfig(enabled=False), max_evidence=10_000,
        gold_facts_files=ds.gold_files[split] or None,
        max_train_questions=TRAIN_QUESTIONS if split == "train" else None,
    )  # fmt: skip
    examples = module.load_pools(split, files)
    return [ex for ex in examples if ex.gold_facts and ex.answer_index is not None], config


# the paper's graph and Ê (§2.2-2.3, Eq. 4): roots never link, attribute values replace their
# node, no stemming or hub filter, Ê = the facts of every chain found, chains not filtered
PAPER = {"merge_roots": False, "merge_noun_roots": False, "replace_attributed": True,
         "stem_concepts": False, "max_link_share": 1.0, "evidence_chains": 1000,
         "explain_top_facts": 0, "chain_order": "length"}  # fmt: skip
SETTINGS = {
    "paper": {},
    "noun_roots": {"merge_noun_roots": True},
    "relevance_order": {"chain_order": "relevance"},
    # chains through the most relevant fact of the book first (OBQA: its open book; ARC:
    # WorldTree's tablestore, configs/chains/worldtree.yaml)
    "open_book_order": {"chain_order": "open_book"},
    "stem": {"stem_concepts": True},
    "hubs": {"max_link_share": 0.2},
    "evidence_chains_20": {"evidence_chains": 20},
    "explain_top_15": {"explain_top_facts": 15},
    "merge_roots": {"merge_roots": True},
    # the package's graph before it followed the paper: every root links, stems, 300 chains
    "package_before": {"merge_roots": True, "stem_concepts": True, "evidence_chains": 300,
                       "explain_top_facts": 15, "replace_attributed": False},
    # configs/chains/default.yaml: the paper's graph with noun roots linking, chains through the
    # most relevant open-book fact first
    "default": {"merge_noun_roots": True, "chain_order": "open_book"},
    # the default with Ê from the 5 best chains only: with open-book chains first, fewer chains
    # keep the gold fact better than the pool's equally many most similar facts (OBQA)
    "default_evidence_chains_5": {"merge_noun_roots": True, "chain_order": "open_book",
                                  "evidence_chains": 5},
    # Ê from the best chain alone (the one the chains page shows first)
    "default_evidence_chains_1": {"merge_noun_roots": True, "chain_order": "open_book",
                                  "evidence_chains": 1},
    # the default, and a fact reaches a question or answer node through a concept the base
    # encoder puts at cosine >= 0.5 to it (threshold chosen on OBQA train, 600 questions)
    "similar_links": {"merge_noun_roots": True, "chain_order": "open_book",
                      "link_similarity": 0.5},
    # the default and similar_links with the chains ranked by a chain ranker trained on the
    # dataset's training questions (RANKER; cgr.chains.ranker) instead of the base encoder
    "ranker": {"merge_noun_roots": True, "chain_order": "open_book", "rank_encoder": "ranker"},
    "similar_links_ranker": {"merge_noun_roots": True, "chain_order": "open_book",
                             "link_similarity": 0.5, "rank_encoder": "ranker"},
}  # fmt: skip
# where a setting's "ranker" is: `cgr ranker --config <the dataset's config> --out <this>`
RANKER = "checkpoints/ranker-{dataset}"
# where --support-reader's support reader is: `cgr support-reader --config <config> --out <this>`
SUPPORT_READER = "checkpoints/support-{dataset}"


def chain_config(config: dict, setting: str, ranker: str | None = None) -> ChainConfig:
    """`ranker`: the chain ranker of the settings that name one."""
    from cgr.amr.parsers import AMRConfig

    chains = config["data"]["chains"]
    base = {k: v for k, v in chains.items() if k not in ("enabled", "amr", "workers")}
    # a generous budget: a search cut by time would make the table depend on the machine
    values = {**base, **PAPER, **SETTINGS[setting], "time_budget_s": 5.0}
    if values.get("rank_encoder"):
        values["rank_encoder"] = ranker
    return ChainConfig(amr=AMRConfig(**chains["amr"]), **values)


def base_encode(config: dict):
    """The dataset's base encoder's `encode` (texts -> unit vectors), for `link_similarity`."""
    from benchmarks.chains import datamodule

    return datamodule(config, config["data"]["dev_file"]).pipeline._base().encode


def ranker_info(folder: str) -> dict:
    """A chain ranker's folder and what `cgr ranker` trained it with (its ranker.json)."""
    from cgr.chains.ranker import RANKER_FILE

    path = Path(folder) / RANKER_FILE
    return {"folder": folder, **(json.loads(path.read_text()) if path.is_file() else {})}


def support_info(folder: str) -> dict:
    """A support reader's folder and what `cgr support-reader` trained it with (its held-out
    question ids left out)."""
    from cgr.pretrained.support_reader import check_support_reader

    info = check_support_reader(folder)
    return {"folder": folder, **{k: v for k, v in info.items() if k != "held_out"},
            "held_out": len(info.get("held_out", []))}  # fmt: skip


def open_book_keys(config: dict) -> frozenset[str]:
    """The book of `chain_order: open_book` as text keys: the dataset config's `data.chains.book`,
    else its open book (none: the order is `relevance`)."""
    from cgr.data.corpus import text_keys

    chains = ChainConfig(chain_order="open_book", book=config["data"]["chains"].get("book"))
    files = chains.book_files(config["data"]["retrieval"].get("open_book"))
    return text_keys(files) if files else frozenset()


def auc(right: list[float], wrong: list[float]) -> float:
    """ROC AUC: the chance a right choice scores above a wrong one (ties count half)."""
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return wins / (len(right) * len(wrong)) if right and wrong else float("nan")


def chain_score(chains, scores: dict[str, float]) -> float:
    """A choice's chain score: its best chain's mean retrieval score; no chain scores lowest."""
    return max((statistics.mean(scores[f] for f in c.facts) for c in chains), default=-1e9)


def hypothesis_cosine(config: dict, examples) -> list[list[dict[str, float]]]:
    """Per example and choice, each pool fact's cosine to the hypothesis (the baseline's order)."""
    from benchmarks.chains import datamodule

    scorer = datamodule(config, config["data"]["dev_file"]).pipeline._relevance_scorer()
    return fact_relevance(examples, "hypothesis", scorer)


def measure(
    examples, cfg: ChainConfig, cosine, relevance=None, open_book=frozenset(), encode=None,
    judge=None,
) -> dict:  # fmt: skip
    """`cosine`: hypothesis_cosine of the examples; `relevance` (cosine to "question choice",
    the reader's order) ranks for explain_top_facts and `chain_order: relevance | open_book`;
    `open_book`: the open book's text keys (`chain_order: open_book`); `encode`: the base
    encoder (`link_similarity`); `judge`: a support reader whose support of the chains is
    measured too (support_measures)."""
    examples = copy.deepcopy(examples)
    builder = ChainBuilder(cfg, progress=False, open_book=open_book, encode=encode)
    start = time.perf_counter()
    builder.attach(examples, relevance)
    seconds = time.perf_counter() - start
    sizes, in_pool, in_e, on_best, on_any, base_hit, prec, base_prec = ([] for _ in range(8))
    with_chain = {True: [], False: []}
    score = {True: [], False: []}
    for ex, sims in zip(examples, cosine, strict=True):
        gold = {text_key(g) for g in ex.gold_facts}
        for c, (pool, chains, e_texts) in enumerate(
            zip(ex.pool, ex.chains, ex.chain_facts, strict=True)
        ):
            right = c == ex.answer_index
            sizes.append(len(e_texts))
            with_chain[right].append(bool(e_texts))
            score[right].append(chain_score(chains, {f.fact_id: f.score for f in pool}))
            if not right:
                continue
            keys = [text_key(t) for t in e_texts]
            ranked = sorted(pool, key=lambda f: -sims[c][f.fact_id])
            top = [text_key(f.text) for f in ranked[: len(e_texts)]]
            in_pool.append(bool(gold & {text_key(f.text) for f in pool}))
            in_e.append(bool(gold & set(keys)))
            base_hit.append(bool(gold & set(top)))
            best = chains[0].texts if chains else ()
            on_best.append(bool(gold & {text_key(t) for t in best}))
            on_any.append(bool(gold & {text_key(t) for ch in chains for t in ch.texts}))
            if keys:
                prec.append(len(gold & set(keys)) / len(set(keys)))
                base_prec.append(len(gold & set(top)) / len(set(top)))
    mean = lambda xs: statistics.mean(xs) if xs else float("nan")  # noqa: E731
    judged = {} if judge is None else {"support_reader": support_measures(examples, judge)}
    return judged | {
        "questions": len(examples), "mean_E": mean(sizes), "gold_in_pool": mean(in_pool),
        "gold_in_E": mean(in_e), "gold_in_pool_top_E": mean(base_hit),
        "gold_on_kept_chain": mean(on_any), "gold_on_best_chain": mean(on_best),
        "precision_E": mean(prec), "precision_pool_top_E": mean(base_prec),
        "right_with_chain": mean(with_chain[True]), "wrong_with_chain": mean(with_chain[False]),
        "chain_score_auc": auc(score[True], score[False]), "search_s": seconds,
        "counters": dict(builder.counters),
        # per question, in the examples' order: for paired differences between settings
        "question_ids": [ex.question_id for ex in examples], "on_best": on_best,
    }  # fmt: skip


def support_measures(examples, judge, resamples: int = 1000) -> dict:
    """A support reader's judgement of the chains (cgr.evaluation.support, the first
    CANDIDATES chains per choice): AUC of a choice's best support, right vs wrong (no chain:
    0), against the chain AUC column's chain score, paired (bootstrap over questions);
    choices shown a supporting chain (>= SUPPORTED); the choice with the best support as the
    answer; the gold fact on the chain shown first with supporting chains first against the
    search's order, paired."""
    import random

    from benchmarks.chain_support import WRONG_CAP, margin_split, right_at_wrong
    from benchmarks.chain_support import auc as fast_auc
    from cgr.evaluation.support import SUPPORTED, chain_support, ranking

    support = chain_support(judge, examples, progress=True)
    rows, first, search = [], [], []
    for ex, sup in zip(examples, support, strict=True):
        best = [max(s, default=0.0) for s in sup]
        chained = [chain_score(chains, {f.fact_id: f.score for f in pool})  # the chain AUC's score
                   for chains, pool in zip(ex.chains, ex.pool, strict=True)]  # fmt: skip
        rows.append((ex.answer_index, best, chained))
        gold = {text_key(g) for g in ex.gold_facts}
        chains, sup_a = ex.chains[ex.answer_index], sup[ex.answer_index]
        shown = chains[ranking(sup_a, "supported_first")[0]] if sup_a else None
        first.append(bool(shown and gold & {text_key(t) for t in shown.texts}))
        search.append(bool(chains and gold & {text_key(t) for t in chains[0].texts}))

    def aucs(sample) -> tuple[float, float]:
        right = [(b[a], c[a]) for a, b, c in sample]
        wrong = [(b[i], c[i]) for a, b, c in sample for i in range(len(b)) if i != a]
        return (fast_auc([r[0] for r in right], [w[0] for w in wrong]),
                fast_auc([r[1] for r in right], [w[1] for w in wrong]))  # fmt: skip

    judged, scored = aucs(rows)
    rng = random.Random(0)
    diffs = sorted(
        (lambda pair: pair[0] - pair[1])(aucs([rows[rng.randrange(len(rows))] for _ in rows]))
        for _ in range(resamples)
    )
    right = [b[a] for a, b, _ in rows]
    wrong = [b[i] for a, b, _ in rows for i in range(len(b)) if i != a]
    # the contrast with the other choices' best (cgr.evaluation.support.margins), and the
    # most right choices one margin threshold marks at <= WRONG_CAP % of wrong ones (a choice
    # with no chain is never marked)
    margin, marked = margin_split(
        (ex.answer_index, sup) for ex, sup in zip(examples, support, strict=True)
    )
    a_only = sum(s and not f for s, f in zip(search, first, strict=True))
    b_only = sum(f and not s for s, f in zip(search, first, strict=True))
    return {
        "auc": judged, "chain_score_auc": scored,
        "auc_diff": [judged - scored, diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]],
        "right_supported": 100 * sum(v >= SUPPORTED for v in right) / len(right),
        "wrong_supported": 100 * sum(v >= SUPPORTED for v in wrong) / len(wrong),
        "as_answer": 100 * statistics.mean(max(range(len(b)), key=b.__getitem__) == a
                                           for a, b, _ in rows),
        "gold_first": 100 * statistics.mean(first), "gold_first_search": 100 * statistics.mean(search),
        "gold_first_diff": list(paired_interval(a_only, b_only, len(rows))),
        "margin_auc": fast_auc(margin[True], margin[False]),
        "right_at_wrong_cap": right_at_wrong(marked[True], marked[False], WRONG_CAP),
        # per question: its id, the answer, each choice's best support (to pair two judges)
        "best_support": [[ex.question_id, a, [round(v, 5) for v in b]]
                         for ex, (a, b, _) in zip(examples, rows, strict=True)],
    }  # fmt: skip


def support_table(datasets: list[str], split: str, settings: list[str]) -> None:
    """The support readers' rows (chain_quality.py --support-reader), one block per dataset:
    the one a setting's own row holds, then those saved apart (--judge-name)."""
    from benchmarks import common
    from benchmarks.chain_support import WRONG_CAP

    for dataset in datasets:
        rows = []
        for setting in settings:
            name = result_name(dataset, split, setting)
            judged = [load_result(name) or {}]
            judged += [
                load_result(p.stem) for p in sorted(common.RESULTS.glob(f"{name}-judge-*.json"))
            ]
            for row in judged:
                if s := row.get("support_reader"):
                    rows.append(support_row(setting, s, row.get("support_reader_info") or {}))
        if not rows:
            continue
        print(f"\n{dataset} {split}, the chains judged by a support reader (cgr support-reader: "
              "its folder, base model, training rows, epochs); support = p(choice | the "
              "chain's facts alone); margin: support minus the best support of another "
              f"choice's chain; right % at <= {WRONG_CAP:.0f} % wrong: the most right choices one "
              "margin threshold (chosen on these questions) marks:")  # fmt: skip
        print_table(["setting", "support reader", "support AUC / chain AUC",
                     "difference (paired 95 %)", "margin AUC", f"right % at <= {WRONG_CAP:.0f} % wrong",
                     "supported right / wrong %", "as the answer %",
                     "gold on first chain, supported first / search %",
                     "difference (paired 95 %)"], rows)  # fmt: skip


def support_row(setting: str, s: dict, info: dict) -> list[str]:
    d, lo, hi = s["auc_diff"]
    g, glo, ghi = s["gold_first_diff"]
    base = Path(str(info.get("base_model", "?"))).name
    judge = (
        f"{info.get('folder')}: {base}, {info.get('rows', '?')} rows, {info.get('epochs', '?')} ep."
    )
    margin = f"{s['margin_auc']:.2f}" if "margin_auc" in s else "–"  # saved before it was
    reach = f"{s['right_at_wrong_cap']:.1f}" if "right_at_wrong_cap" in s else "–"
    return [setting, judge, f"{s['auc']:.2f} / {s['chain_score_auc']:.2f}",
            f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]", margin, reach,
            f"{s['right_supported']:.1f} / {s['wrong_supported']:.1f}",
            f"{s['as_answer']:.1f}", f"{s['gold_first']:.1f} / {s['gold_first_search']:.1f}",
            f"{g:+.1f} [{glo:+.1f}, {ghi:+.1f}]"]  # fmt: skip


def result_name(dataset: str, split: str, setting: str) -> str:
    return f"chain_quality-{dataset}-{split}-{setting}"


COLUMNS = [
    ("|Ê|", "mean_E", 1), ("gold in pool", "gold_in_pool", 100), ("gold in Ê", "gold_in_E", 100),
    ("gold in pool top-|Ê|", "gold_in_pool_top_E", 100), ("gold on best chain", "gold_on_best_chain", 100),
    ("precision Ê", "precision_E", 100), ("precision top-|Ê|", "precision_pool_top_E", 100),
    ("right with chain", "right_with_chain", 100), ("wrong with chain", "wrong_with_chain", 100),
    ("chain AUC", "chain_score_auc", 1),
]  # fmt: skip


def table(datasets: list[str], split: str, settings: list[str]) -> None:
    for dataset in datasets:
        rows, found = [], []
        for setting in settings:
            row = load_result(result_name(dataset, split, setting))
            if row is None:
                continue
            found.append(row)
            cells = [f"{scale * row[key]:.1f}" if scale == 100 else f"{row[key]:.2f}"
                     for _, key, scale in COLUMNS]  # fmt: skip
            rows.append([setting, *cells])
        if not rows:
            continue
        n = found[0]["questions"]
        print(f"\n{dataset} {split} ({n} questions with gold facts; {found[0]['machine']}):")
        print_table(["setting", *(c for c, _, _ in COLUMNS)], rows)
        lines = [line for setting, against in PAIRED if setting in settings
                 and (line := paired_line(dataset, split, setting, against))]  # fmt: skip
        if lines:  # one block under the table
            print("\n" + "\n".join(lines))


# settings whose gold-on-best-chain difference the table states, paired over the questions
PAIRED = [("similar_links", "default"), ("ranker", "default"),
          ("similar_links_ranker", "similar_links")]  # fmt: skip


def paired_line(dataset: str, split: str, setting: str, against: str) -> str | None:
    """`setting` − `against`: the gold fact on the best chain, in points, with its paired 95 %
    interval (McNemar p) over the questions both rows scored; None without per-question rows."""
    rows = [load_result(result_name(dataset, split, s)) for s in (setting, against)]
    if any(r is None or "on_best" not in r for r in rows):
        return None
    b, a = ({q: hit for q, hit in zip(r["question_ids"], r["on_best"], strict=True)} for r in rows)
    a_only, b_only, questions = paired_hits(a, b)
    diff, low, high = paired_interval(a_only, b_only, questions)
    return (f"{dataset} {split}, {setting} − {against}: gold on the best chain {diff:+.1f} "
            f"[{low:+.1f}, {high:+.1f}] points over {questions} paired questions "
            f"(McNemar p = {mcnemar_p(a_only, b_only):.2g})")  # fmt: skip


def sweep(dataset: str, split: str, thresholds: list[float]) -> None:
    """The similar_links setting at each threshold: gold on the best / on a kept chain, right
    and wrong choices with a chain (%)."""
    from benchmarks.chains import relevance_keys

    examples, config = pools(dataset, split)
    cosine, relevance = hypothesis_cosine(config, examples), relevance_keys(config, examples)
    encode = base_encode(config)
    rows = []
    for threshold in thresholds:
        cfg = replace(chain_config(config, "similar_links"), link_similarity=threshold)
        row = measure(examples, cfg, cosine, relevance, open_book_keys(config), encode)
        keys = ("gold_on_best_chain", "gold_on_kept_chain", "right_with_chain", "wrong_with_chain")
        rows.append([threshold, *(f"{100 * row[k]:.1f}" for k in keys)])
    print(f"\n{dataset} {split}, similar links by threshold ({len(examples)} questions):")
    print_table(["link_similarity", "gold on best chain", "gold on a kept chain",
                 "right with chain", "wrong with chain"], rows)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--split", default="dev", choices=["dev", "train"])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--table", action="store_true", help="print the saved rows, run nothing")
    parser.add_argument("--support-table", action="store_true",
                        help="print the saved support reader rows only, run nothing")  # fmt: skip
    parser.add_argument("--without-support", action="store_true",
                        help="with --table: leave out the support reader, chain support and "
                             "verifier tables")  # fmt: skip
    parser.add_argument("--rank-encoder", metavar="DIR",
                        help=f"the ranker settings' chain ranker (default: {RANKER})")  # fmt: skip
    parser.add_argument("--support-reader", metavar="DIR", nargs="?", const=SUPPORT_READER,
                        help="judge each setting's chains with a support reader too (cgr "
                             f"support-reader; without DIR: {SUPPORT_READER})")  # fmt: skip
    parser.add_argument("--judge-name", metavar="NAME",
                        help="with --support-reader: save its rows apart (RESULT-judge-NAME), "
                             "leaving each setting's own row and the support reader it holds")  # fmt: skip
    parser.add_argument("--link-similarity", nargs="+", type=float, metavar="T",
                        help="print the similar_links setting at each threshold, save nothing "
                             "(how its threshold was chosen)")  # fmt: skip
    args = parser.parse_args()
    if args.judge_name and not args.support_reader:
        parser.error("--judge-name names a support reader's rows: give --support-reader DIR")
    if args.link_similarity:
        for dataset in args.datasets:
            sweep(dataset, args.split, args.link_similarity)
        return
    if args.support_table:
        support_table(args.datasets, args.split, args.settings)
        return
    if args.table:
        table(args.datasets, args.split, args.settings)
        if not args.without_support:  # the chains' support: a support reader, checkpoints
            from benchmarks import chain_labels, chain_support, chain_verifier

            support_table(args.datasets, args.split, args.settings)
            print()
            chain_support.table()
            print()
            chain_labels.table()
            print()
            chain_verifier.table()
        return
    for dataset in args.datasets:
        examples, config = pools(dataset, args.split)
        relevance, cosine, encode = None, hypothesis_cosine(config, examples), None
        open_book = open_book_keys(config)
        ranker = args.rank_encoder or RANKER.format(dataset=dataset)
        judge, judged_by = None, None
        if args.support_reader:
            from cgr.pretrained.support_reader import load_support_reader

            folder = args.support_reader.format(dataset=dataset)
            judge, judged_by = load_support_reader(folder), support_info(folder)
        for setting in args.settings:
            if SETTINGS[setting].get("rank_encoder") and not Path(ranker).exists():
                print(f"{dataset} {setting}: no chain ranker at {ranker} (cgr ranker --config "
                      f"{DATASETS[dataset].config} --out {ranker}); skipped", flush=True)  # fmt: skip
                continue
            cfg = chain_config(config, setting, ranker)
            if (cfg.explain_top_facts or cfg.chain_order != "length") and relevance is None:
                from benchmarks.chains import relevance_keys

                relevance = relevance_keys(config, examples)
            ranked = relevance
            if cfg.rank_encoder:  # the chains ranked by the ranker's relevance instead
                from cgr.evidence.relevance import ranker_relevance

                ranked = fact_relevance(examples, "question_choice", ranker_relevance(ranker))
            if cfg.link_similarity is not None and encode is None:  # one encoder per dataset
                encode = base_encode(config)
            row = measure(examples, cfg, cosine, ranked, open_book,
                          encode if cfg.link_similarity is not None else None, judge)  # fmt: skip
            if cfg.rank_encoder:  # which ranker, and what it was trained with
                row["ranker"] = ranker_info(cfg.rank_encoder)
            if judge is not None:
                row["support_reader_info"] = judged_by
            row.update(dataset=dataset, split=args.split, setting=setting,
                       chains=SETTINGS[setting], machine=machine(), date=time.strftime("%Y-%m-%d"))  # fmt: skip
            judged_apart = f"-judge-{args.judge_name}" if args.judge_name else ""
            save_result(result_name(dataset, args.split, setting) + judged_apart, row)
            print(
                dataset,
                args.split,
                setting,
                {k: v for k, v in row.items() if not isinstance(v, dict | list)},
                flush=True,
            )
    table(args.datasets, args.split, args.settings)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--warm"]:  # pools only, for every dataset and split
        for name in sys.argv[2:] or DATASETS:
            for split in ("dev", "train"):
                print(name, split, len(pools(name, split)[0]), flush=True)
    else:
        main()
