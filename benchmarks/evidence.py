"""Where the evidence is lost: for each evidence setting, on the dev set,
gold-fact recall of what is retrieved, how many facts reach the reader inside max_length, how
often the gold fact is retrieved but not read, and (from real `cgr train` runs) the reader's
accuracy split by "gold fact read / not read" and its most frequent answer position.

Settings: none (no facts), bm25 (top 10), dense (one step, K=10 + 10 open-book facts), beam (the
beam-iterative pool, K=10, T=2), chains (Ê: chain facts first, padded with pool facts), gold (the
oracle: every choice reads the question's gold facts). Gold facts: OBQA dev `fact1`; ARC-Challenge
dev: WorldTree V2.1 explanations (155 of the 299 questions have one; EntailmentBank's task-1 dev
questions are ARC train questions, so none of them is in ARC-Challenge dev).

The statistics are computed live (pools come from the pool cache); accuracy rows are read from
benchmarks/results/evidence-*.json, written by `--train` (one real `cgr train` run per setting x
seed, saved as each finishes).

    .venv/bin/python benchmarks/evidence.py                        # the table (OBQA dev)
    .venv/bin/python benchmarks/evidence.py --train --settings none beam gold --seeds 1
    .venv/bin/python benchmarks/evidence.py --dataset arc_challenge
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    gold_split,
    load_result,
    machine,
    print_table,
    run_training,
    save_result,
    train_config,
)
from cgr.chains.builder import ChainConfig  # noqa: E402
from cgr.evidence.selection import EvidenceConfig, text_key  # noqa: E402
from cgr.reader.packing import EvidencePacker  # noqa: E402
from cgr.retrieval.factory import RetrievalConfig  # noqa: E402
from cgr.training.datamodule import QADataModule  # noqa: E402

READER = "cgr.training.module.ReaderModule"
# setting -> (label, retrieval method, chains on, data.evidence overrides, model overrides)
SETTINGS = {
    "none": ("no facts", "none", False, {}, {}),
    "bm25": ("BM25 top-10", "bm25", False, {}, {}),
    "dense": ("dense, one step", "dense", False, {}, {}),
    "dense_retrieval_order": ("dense, retrieval order", "dense", False, {"order": "retrieval"}, {}),
    "dense_drop_shared": ("dense, shared facts dropped", "dense", False, {"shared_facts": "drop"}, {}),
    "dense_l256": ("dense, max length 256", "dense", False, {}, {"max_length": 256}),
    "dense_lr2e-5": ("dense, lr 2e-5", "dense", False, {}, {"lr": 2e-5}),
    "dense_lr1e-4": ("dense, lr 1e-4", "dense", False, {}, {"lr": 1e-4}),
    "none_lr1e-4": ("no facts, lr 1e-4", "none", False, {}, {"lr": 1e-4}),
    "dense_warmup0": ("dense, no warm-up", "dense", False, {}, {"warmup_ratio": 0.0}),
    "dense_warmup20": ("dense, warm-up 20 %", "dense", False, {}, {"warmup_ratio": 0.2}),
    "dense_mpnet": ("dense, one step; mpnet reader", "dense", False, {}, {"reader_model": "mpnet"}),
    "none_mpnet": ("no facts; mpnet reader", "none", False, {}, {"reader_model": "mpnet"}),
    "beam": ("beam-iterative pool", "beam", False, {}, {}),
    "chains": ("Ê (chains, padded)", "beam", True, {}, {}),
    # the authors' pathway (cgr.evidence.selection, order retriever): before any refresh the
    # current retriever is the base encoder, so this is what epoch 1 of such a run reads
    "chains_retriever": ("Ê, the authors' order (the retriever ranks, open book first)", "beam", True,
                         {"order": "retriever"}, {}),
    # chains over the one-step dense pool (19 facts per choice) instead of the 55-fact beam pool
    "dense_chains": ("Ê over the dense one-step pool (padded)", "dense", True, {}, {}),
    "dense_chains_lr1e-4": ("Ê over the dense pool, lr 1e-4", "dense", True, {}, {"lr": 1e-4}),
    # the open book's best N facts first (OBQA's gold facts are open-book sentences)
    "beam_open_book3": ("beam pool, 3 open-book facts first", "beam", False, {"open_book_first": 3}, {}),
    "beam_open_book5": ("beam pool, 5 open-book facts first", "beam", False, {"open_book_first": 5}, {}),
    "beam_open_book10": ("beam pool, 10 open-book facts first", "beam", False, {"open_book_first": 10}, {}),
    "chains_open_book5": ("Ê, then 5 open-book facts", "beam", True, {"open_book_first": 5}, {}),
    "beam_open_book5_lr1e-4": ("beam pool, 5 open-book facts first, lr 1e-4", "beam", False,
                               {"open_book_first": 5}, {"lr": 1e-4}),
    "gold": ("oracle: gold fact(s)", "gold", False, {}, {}),
    "gold_lr1e-4": ("oracle: gold fact(s), lr 1e-4", "gold", False, {}, {"lr": 1e-4}),
    "gold_mpnet": ("oracle: gold fact(s); mpnet reader", "gold", False, {}, {"reader_model": "mpnet"}),
}  # fmt: skip
DEFAULT_SETTINGS = ["none", "bm25", "dense", "beam", "chains", "gold"]
CONFIGS = {"obqa": "configs/obqa.yaml", "arc_challenge": "configs/arc_challenge.yaml"}


def setting_config(base: dict, setting: str, seed: int, args) -> dict:
    _, method, chains, evidence, model = SETTINGS[setting]
    config = copy.deepcopy(base)
    config["seed_everything"] = seed
    config["trainer"]["max_epochs"] = args.epochs
    config["model"] = {"class_path": READER, "init_args": {
        **{k: v for k, v in config["model"]["init_args"].items()
           if k in ("reader_model", "lr", "weight_decay", "warmup_ratio")},
        "max_length": args.max_length, **model}}  # fmt: skip
    data = config["data"]
    data["evidence"] = {**data.get("evidence", {}), **evidence}
    data["max_train_questions"] = args.train_questions
    data["retrieval"]["method"] = method
    data["chains"]["enabled"] = chains
    return config


def datamodule(config: dict) -> QADataModule:
    data = copy.deepcopy(config["data"])
    chains = data.pop("chains")
    chains["amr"] = __import__("cgr.amr.parsers", fromlist=["AMRConfig"]).AMRConfig(**chains["amr"])
    return QADataModule(retrieval=RetrievalConfig(**data.pop("retrieval")), chains=ChainConfig(**chains),
                        evidence=EvidenceConfig(**data.pop("evidence", {})), **data)  # fmt: skip


def gold_ranks(facts, gold: set[str]) -> list[int]:
    return [i for i, f in enumerate(facts) if text_key(f.text) in gold]


def statistics_for(config: dict, max_length: int) -> dict:
    """Recall and reading statistics of the gold answer's evidence on the dev file."""
    dm = datamodule(config)
    pools = dm.load_pools("dev", config["data"]["dev_file"])
    offered = dm.select(copy.deepcopy(pools))
    reader_name = config["model"]["init_args"]["reader_model"]
    from transformers import AutoTokenizer

    from cgr.models import resolve_model

    packer = EvidencePacker(AutoTokenizer.from_pretrained(resolve_model(reader_name)), max_length)
    rec = {1: [], 5: [], 15: []}
    anywhere, read_share, cut, facts_read, pool_sizes = [], [], [], [], []
    for raw, ex in zip(pools, offered, strict=True):
        items = [
            (ex.question, c, [f.text for f in facts])
            for c, facts in zip(ex.choices, ex.facts, strict=True)
        ]
        packed = packer.pack(items)
        facts_read.extend(len(p.read) for p in packed)
        if not raw.gold_facts or ex.answer_index is None:
            continue
        gold = {text_key(g) for g in raw.gold_facts}
        pool = raw.pool[ex.answer_index]
        # "what is retrieved": the pool in the order the reader is offered it
        order = ex.facts[ex.answer_index]
        ranks = gold_ranks(order, gold)
        for k in rec:
            rec[k].append(sum(r < k for r in ranks) / len(gold))
        found = {text_key(f.text) for f in pool} & gold
        anywhere.append(len(found) / len(gold))
        read = {text_key(order[i].text) for i in packed[ex.answer_index].read} & gold
        read_share.append(bool(read))
        cut.append(bool(found) and not read)
        pool_sizes.append(len(pool))
    mean = lambda xs: 100 * statistics.mean(xs) if xs else float("nan")  # noqa: E731
    return {"questions_with_gold": len(anywhere), "recall@1": mean(rec[1]), "recall@5": mean(rec[5]),
            "recall@15": mean(rec[15]), "recall_pool": mean(anywhere), "gold_read": mean(read_share),
            "retrieved_not_read": mean(cut), "facts_read": statistics.mean(facts_read) if facts_read else 0.0,
            "pool_size": statistics.mean(pool_sizes) if pool_sizes else 0.0}  # fmt: skip


def tag(dataset: str, setting: str, seed: int, args) -> str:
    length = SETTINGS[setting][4].get("max_length", args.max_length)
    return f"evidence-{dataset}-{setting}-q{args.train_questions}-e{args.epochs}-l{length}-s{seed}"


def reader_table(dataset: str) -> None:
    """Every saved training run of this dataset, one row per setting and
    budget, with its change against the dense one-step run at 1 epoch, max length 128 (the
    reference) and the dev accuracy after each epoch (from the run's log)."""
    from benchmarks.common import RESULTS

    runs: dict[tuple, list[dict]] = {}
    for path in sorted(RESULTS.glob(f"evidence-{dataset}-*.json")):
        r = json.loads(path.read_text())
        if "accuracy" not in r or "budget" not in r:
            continue
        b = r["budget"]
        length = SETTINGS[r["setting"]][4].get("max_length", b["max_length"])
        runs.setdefault((r["setting"], b["train_questions"], b["epochs"], length), []).append(r)
    reference = runs.get(("dense", 0, 1, 128))
    base = statistics.mean(r["accuracy"] for r in reference) if reference else None
    rows = []
    for (setting, questions, epochs, length), rs in sorted(
        runs.items(), key=lambda kv: kv[0][1:] + kv[0][:1]
    ):
        acc = [100 * r["accuracy"] for r in rs]
        mean = statistics.mean(acc)
        spread = f" ± {statistics.stdev(acc):.1f}" if len(acc) > 1 else ""
        change = f"{mean - 100 * base:+.1f}" if base is not None and questions == 0 else "–"
        curves = ["/".join(f"{100 * a:.1f}" for a in r.get("val_acc_by_epoch", [])) for r in rs]
        rows.append([SETTINGS[setting][0], questions or "all", epochs, length, f"{mean:.1f}{spread}",
                     len(rs), change, "; ".join(c for c in curves if c) or "–",
                     f"{statistics.mean(r['minutes'] for r in rs):.0f}"])  # fmt: skip
    print(f"{dataset} dev: the reader by setting and budget (MiniLM unless named; change against "
          "dense one step, 1 epoch, max length 128, all train questions)")  # fmt: skip
    print_table(["evidence / change", "train questions", "epochs", "max length", "dev acc % (best ckpt)",
                 "seeds", "change", "val acc after each epoch", "minutes"], rows)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="obqa", choices=list(CONFIGS))
    parser.add_argument("--settings", nargs="*", default=DEFAULT_SETTINGS, choices=list(SETTINGS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--train", action="store_true", help="run the missing accuracy rows")
    parser.add_argument("--train-questions", type=int, default=0, help="0: the whole train set")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--reader-table", action="store_true", help="only the saved runs by budget")
    parser.add_argument("--table", action="store_true",
                        help="only the saved statistics and runs of --settings (nothing computed)")  # fmt: skip
    args = parser.parse_args()
    if args.reader_table:
        reader_table(args.dataset)
        return
    base = train_config(CONFIGS[args.dataset])
    table = []
    for setting in args.settings:
        config = setting_config(base, setting, args.seeds[0], args)
        length = SETTINGS[setting][4].get("max_length", args.max_length)  # what this reader reads
        stats_name = f"evidence-stats-{args.dataset}-{setting}-l{length}"
        if args.table:
            if (stats := load_result(stats_name)) is None:
                continue
        else:
            stats = statistics_for(config, length)
            save_result(stats_name, {"setting": setting, **stats})
        runs = []
        for seed in args.seeds:
            name = tag(args.dataset, setting, seed, args)
            result = load_result(name)
            if result is None and args.train and not args.table:
                result = run_training(setting_config(base, setting, seed, args), name)
                result.update(gold_split(config, name))
                save_result(
                    name, {"setting": setting, "seed": seed, "budget": vars(args), **result}
                )
                print(
                    f"{name}: accuracy {result['accuracy']:.4f} in {result['minutes']:.1f} min",
                    flush=True,
                )
            if result is not None:
                runs.append(result)

        def cell(key: str, scale: float = 1.0, runs=runs) -> str:
            if not runs:
                return "not run"
            value = statistics.mean(scale * r[key] for r in runs)
            return "–" if math.isnan(value) else f"{value:.1f}"  # a split with no question

        table.append([SETTINGS[setting][0], f"{stats['recall@1']:.1f}", f"{stats['recall@5']:.1f}",
                      f"{stats['recall@15']:.1f}", f"{stats['recall_pool']:.1f}", f"{stats['facts_read']:.1f}",
                      f"{stats['gold_read']:.1f}", f"{stats['retrieved_not_read']:.1f}", cell("accuracy", 100),
                      cell("acc_gold_read"), cell("acc_gold_not_read"), cell("top_position_share"), len(runs)])  # fmt: skip
    budget = f"{args.train_questions or 'all'} train questions x {args.epochs} epoch(s)"
    where = "statistics computed where saved" if args.table else machine()
    print(f"{args.dataset} dev; reader {base['model']['init_args']['reader_model']} unless named, max length {args.max_length} unless named; "
          f"{budget}; seeds {args.seeds}; {where}")  # fmt: skip
    print_table(["evidence", "gold R@1", "R@5", "R@15", "in pool", "facts read/choice", "gold read %",
                 "retrieved, not read %", "dev acc %", "acc, gold read", "acc, gold not read",
                 "top position %", "runs"], table)  # fmt: skip


if __name__ == "__main__":
    main()
