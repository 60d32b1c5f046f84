"""Reasoning-chain statistics on a dev set with the ~70k-fact corpus:
share of correct / wrong answer hypotheses with a chain, chain-length histogram, mean |Ê|
(chain facts only, before padding), chain search time per question (p50 / p99, warm parse
cache), embedded-parser sentences/s, and with --checkpoint the reader's accuracy by the length
of the gold answer's shortest chain (a PNG, as the paper's Fig. 5). With --entailmentbank, the
recall of EntailmentBank gold facts in the retrieval pool vs in Ê.

    .venv/bin/python benchmarks/chains.py --config configs/obqa.yaml --name obqa [--checkpoint C]
    .venv/bin/python benchmarks/chains.py --config configs/arc_challenge.yaml --name arc_challenge --entailmentbank
    .venv/bin/python benchmarks/chains.py --config configs/obqa.yaml --top-facts 5 10 15 20 30 1000 [--rank-by relevance]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, machine, print_table, save_result, train_config  # noqa: E402
from cgr.amr.parsers import AMRConfig  # noqa: E402
from cgr.chains.builder import ChainBuilder, ChainConfig  # noqa: E402
from cgr.data.loaders import iter_jsonl, load_multiple_choice  # noqa: E402
from cgr.data.records import fact_id  # noqa: E402
from cgr.data.root import data_root
from cgr.evidence.selection import EvidenceConfig, fact_relevance, select_evidence, text_key  # noqa: E402
from cgr.retrieval.factory import RetrievalConfig  # noqa: E402
from cgr.training.datamodule import QADataModule  # noqa: E402


def datamodule(config: dict, question_file: str | list[str]) -> QADataModule:
    data = config["data"]
    return QADataModule(train_file=question_file, dev_file=question_file, retrieval=RetrievalConfig(**data["retrieval"]),
                        chains=ChainConfig(enabled=False), max_evidence=10_000)  # fmt: skip


def pools(config: dict, question_file: str | list[str], split: str = "dev"):
    return datamodule(config, question_file).load_pools(split, question_file)


def relevance_keys(config: dict, examples) -> list[list[dict[str, float]]]:
    """Per example and choice, each pool fact's cosine to "question choice" (the order the
    reader is offered facts in, `data.evidence.order: question_choice`)."""
    scorer = datamodule(config, config["data"]["dev_file"]).pipeline._relevance_scorer()
    return fact_relevance(examples, "question_choice", scorer)


def chain_config(settings: dict, **overrides) -> ChainConfig:
    """`data.chains` of a config (a dict, `amr` included) as a ChainConfig, with overrides."""
    amr = {**settings.get("amr", {}), **overrides.get("amr", {})}
    rest = {k: v for k, v in {**settings, **overrides}.items() if k not in ("enabled", "amr")}
    return ChainConfig(amr=AMRConfig(**amr), **rest)


def with_chains(examples, chain_cfg: ChainConfig, max_evidence: int, relevance=None):
    """`relevance` (relevance_keys) ranks facts for `explain_top_facts` as training does."""
    examples = copy.deepcopy(examples)
    builder = ChainBuilder(chain_cfg, progress=False)
    start = time.perf_counter()
    builder.attach(examples, relevance)
    seconds = time.perf_counter() - start
    only_chain_facts = not chain_cfg.pad_evidence  # the facts read: Ê (padded or not), pool order
    select_evidence(
        examples, EvidenceConfig(order="retrieval"), max_evidence, None, only_chain_facts
    )
    return examples, builder, seconds


def chain_signal(examples) -> dict:
    """How much the chains alone say about the answer: right vs wrong answers with a 1-fact
    chain, and the accuracy of picking the choice with the most chains (ties split)."""
    one = {True: [], False: []}
    picked = 0.0
    for ex in examples:
        counts = [len(chains) for chains in ex.chains]
        winners = [i for i, n in enumerate(counts) if n == max(counts)]
        picked += (ex.answer_index in winners) / len(winners)
        for i, chains in enumerate(ex.chains):
            one[i == ex.answer_index].append(any(len(c.facts) == 1 for c in chains))
    return {"gold_with_one_fact_chain": statistics.mean(one[True]),
            "wrong_with_one_fact_chain": statistics.mean(one[False]),
            "most_chains_accuracy": picked / len(examples)}  # fmt: skip


def chain_stats(examples, builder) -> dict:
    gold_with = wrong_with = gold_n = wrong_n = 0
    lengths, kept_sizes, e_sizes, shortest, e_recall = Counter(), [], [], Counter(), []
    for ex in examples:
        gold = {text_key(g) for g in ex.gold_facts}
        if gold and ex.chain_facts:  # Ê of the gold answer: all facts of its evidence_chains chains
            found = {text_key(t) for t in ex.chain_facts[ex.answer_index]}
            e_recall.append(len(gold & found) / len(gold))
        e_sizes.extend(len(e) for e in ex.chain_facts)
        for i, chains in enumerate(ex.chains):
            kept_sizes.append(len({f for c in chains for f in c.facts}))
            lengths.update(len(c.facts) for c in chains)
            if i == ex.answer_index:
                gold_n += 1
                gold_with += bool(chains)
                shortest[min((len(c.facts) for c in chains), default=0)] += 1
            else:
                wrong_n += 1
                wrong_with += bool(chains)
    per_question = [sum(builder.search_seconds[i : i + len(ex.choices)]) for i, ex in
                    zip(_offsets(examples), examples, strict=True)]  # fmt: skip
    q = statistics.quantiles(per_question, n=100) if len(per_question) > 1 else per_question * 99
    return {"questions": len(examples), "gold_with_chain": gold_with / gold_n, "wrong_with_chain": wrong_with / wrong_n,
            "chain_lengths": dict(sorted(lengths.items())), "gold_shortest_chain": dict(sorted(shortest.items())),
            "mean_E": statistics.mean(e_sizes), "mean_kept_chain_facts": statistics.mean(kept_sizes),
            "E_gold_recall": statistics.mean(e_recall) if e_recall else None, "search_ms_p50": 1000 * q[49], "search_ms_p99": 1000 * q[98],
            "counters": dict(builder.counters), **chain_signal(examples)}  # fmt: skip


def _offsets(examples):
    out, n = [], 0
    for ex in examples:
        out.append(n)
        n += len(ex.choices)
    return out


@torch.no_grad()
def accuracy_by_length(examples, checkpoint: str, name: str) -> dict:
    from cgr.training.module import ReaderModule

    model = ReaderModule.load_from_checkpoint(
        checkpoint, map_location="cpu", weights_only=True
    ).eval()
    buckets: dict[int, list[int]] = {}
    for start in range(0, len(examples), 32):
        batch = examples[start : start + 32]
        predictions = model(batch).argmax(-1).tolist()
        for ex, pred in zip(batch, predictions, strict=True):
            gold_chains = ex.chains[ex.answer_index]
            length = min((len(c.facts) for c in gold_chains), default=0)
            buckets.setdefault(length, []).append(int(pred == ex.answer_index))
    result = {k: (sum(v) / len(v), len(v)) for k, v in sorted(buckets.items())}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3))
    labels = ["no chain" if k == 0 else f"{k} fact{'s' if k > 1 else ''}" for k in result]
    ax.bar(labels, [100 * a for a, _ in result.values()], color="#4c78a8")
    for i, (a, n) in enumerate(result.values()):
        ax.text(i, 100 * a + 1, f"n={n}", ha="center", fontsize=8)
    ax.set_ylabel("accuracy (%)")
    ax.set_xlabel("shortest chain of the gold answer")
    ax.set_title(f"{name} dev: accuracy by chain length")
    fig.tight_layout()
    fig.savefig(RESULTS / f"accuracy_by_chain_length-{name}.png", dpi=120)
    return {str(k): {"accuracy": a, "n": n} for k, (a, n) in result.items()}


def entailmentbank_recall(config: dict, chain_cfg: ChainConfig) -> dict:
    path = data_root() / "corpus/entailmentbank/task_1_dev.jsonl"
    gold = {obj["id"]: list(obj["meta"]["triples"].values()) for _, obj in iter_jsonl(path)}
    arc_train = [data_root() / f"arc/ARC-{s}/ARC-{s}-Train.jsonl" for s in ("Easy", "Challenge")]
    wanted = [q for f in arc_train for q in load_multiple_choice(f) if q.id in gold]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for q in wanted:  # EntailmentBank's dev questions are ARC *train* questions
            f.write(json.dumps({"id": q.id, "question": {"stem": q.stem, "choices": [{"text": c.text, "label": c.label} for c in q.choices]},
                                "answerKey": q.answer_label}) + "\n")  # fmt: skip
    examples = pools(config, f.name, "entailmentbank")
    pool_hits = e_hits = total = 0
    chained, _, _ = with_chains(examples, chain_cfg, 10_000)
    for ex in chained:
        gold_ids = {fact_id(t) for t in gold[ex.question_id]}
        pool_ids = {
            f.fact_id
            for f in next(e for e in examples if e.question_id == ex.question_id).pool[
                ex.answer_index
            ]
        }
        e_ids = {f for c in ex.chains[ex.answer_index] for f in c.facts}
        total += len(gold_ids)
        pool_hits += len(gold_ids & pool_ids)
        e_hits += len(gold_ids & e_ids)
    return {
        "questions": len(chained),
        "gold_facts": total,
        "recall_pool": pool_hits / total,
        "recall_E": e_hits / total,
    }


def gold_loss(examples, chain_cfg: ChainConfig, max_evidence: int) -> dict:
    """Where the gold facts of the gold answer are lost between pool and Ê:
    per gold fact found in the pool, the first stage that loses it. Stages: no concepts after
    parsing and normalisation; no concept shared with the question nodes or any other pool fact
    (cannot start or continue a chain); in no chain with unbounded search (graph rules); cut by
    the search bounds (evidence_chains, time budget); outside Ê's first max_evidence facts in
    pool order (the reader's order, by relevance, is measured by benchmarks/evidence.py)."""
    from cgr.amr.parsers import CachedParser
    from cgr.chains.concepts import amr_concepts
    from cgr.chains.graph import build_semantic_graph, question_concepts
    from cgr.chains.search import ChainSearchConfig, chain_evidence, find_chains
    from cgr.evidence.selection import text_key

    parser = CachedParser(chain_cfg.amr, progress=False)
    stages = Counter()
    share = chain_cfg.max_link_share
    bounded = ChainSearchConfig(
        chain_cfg.max_facts,
        chain_cfg.evidence_chains,
        chain_cfg.time_budget_s,
        max_link_share=share,
    )
    unbounded = ChainSearchConfig(chain_cfg.max_facts, 10**6, 5.0, max_link_share=share)
    for ex in examples:
        gold = {text_key(g) for g in ex.gold_facts}
        if not gold or ex.answer_index is None:
            continue
        pool = ex.pool[ex.answer_index]
        in_pool = [f for f in pool if text_key(f.text) in gold]
        stages["gold facts"] += len(gold)
        stages["not retrieved"] += len(gold) - len({text_key(f.text) for f in in_pool})
        if not in_pool:
            continue
        texts = sorted({*ex.hypotheses, *(f.text for f in pool)})
        concepts = {
            t: amr_concepts(g, chain_cfg.merge_roots, chain_cfg.stem_concepts)
            for t, g in zip(texts, parser.parse(texts), strict=True)
        }
        hyps = [concepts[h] for h in ex.hypotheses]
        q_nodes = question_concepts(hyps)
        facts = {f.fact_id: concepts[f.text] for f in pool}
        graph = build_semantic_graph(hyps[ex.answer_index], q_nodes, facts)
        scores = {f.fact_id: f.score for f in pool}
        free, _ = find_chains(graph, scores, unbounded)
        kept, _ = find_chains(graph, scores, bounded)
        e_ids = chain_evidence(kept, [f.fact_id for f in pool])[:max_evidence]
        for f in {f.fact_id: f for f in in_pool}.values():
            c = facts[f.fact_id].concepts
            others = {x for fid, a in facts.items() if fid != f.fact_id for x in a.concepts}
            if not c:
                stages["lost: no concepts"] += 1
            elif not (c & graph.question_nodes) and not (c & others - graph.hypothesis_nodes):
                stages["lost: no link to question or other facts"] += 1
            elif not any(f.fact_id in ch.facts for ch in free):
                stages["lost: in no chain (graph rules)"] += 1
            elif not any(f.fact_id in ch.facts for ch in kept):
                stages["lost: search bounds"] += 1
            elif f.fact_id not in e_ids:
                stages["lost: beyond max_evidence in Ê (pool order)"] += 1
            else:
                stages["in Ê"] += 1
    return dict(stages)


def link_share_table(examples, chain_settings: dict, max_evidence: int, args) -> None:
    """Right- vs wrong-answer chain rates and Ê's gold recall for each max_link_share (the
    configured parse cache is shared, so only the first row parses); each row saved."""
    rows = []
    for share in args.link_shares:
        chain_cfg = chain_config(chain_settings, max_link_share=share)
        chained, builder, _ = with_chains(examples, chain_cfg, max_evidence)
        stats = chain_stats(chained, builder)
        save_result(
            f"chains_link_share-{args.name}-{share}",
            {"machine": machine(), "max_link_share": share, **stats},
        )
        rows.append([share, f"{100 * stats['gold_with_chain']:.1f}", f"{100 * stats['wrong_with_chain']:.1f}",
                     f"{100 * (stats['gold_with_chain'] - stats['wrong_with_chain']):.1f}",
                     f"{100 * stats['gold_with_one_fact_chain']:.1f} / {100 * stats['wrong_with_one_fact_chain']:.1f}",
                     f"{100 * stats['most_chains_accuracy']:.1f}", f"{100 * stats['E_gold_recall']:.1f}",
                     f"{stats['mean_E']:.1f}", f"{stats['search_ms_p50']:.0f}"])  # fmt: skip
        print(f"max_link_share {share}: done", flush=True)
    print(
        f"{args.name} dev, {len(examples)} questions; hub concepts (in more than the share of a pool's facts) do not link"
    )
    print_table(["max_link_share", "right answers with a chain %", "wrong answers with a chain %", "gap",
                 "with a 1-fact chain, right / wrong %", "most chains = answer, acc %", "gold fact in Ê %",
                 "mean |Ê|", "search ms p50"], rows)  # fmt: skip


def top_facts_table(examples, chain_settings: dict, max_evidence: int, args, config: dict) -> None:
    """Chains that use only a hypothesis's N best pool facts (`--rank-by retrieval`: by retrieval
    score; `relevance`: by cosine to "question choice", the reader's order): right- vs
    wrong-answer chain rates, and the gold fact's share in the gold answer's Ê built from those
    chains and in its N best facts. Measured from one search (300 chains kept per hypothesis),
    so a row is what restricting the chains afterwards gives, not a search over fewer facts."""
    chained, _, _ = with_chains(
        examples, chain_config(chain_settings, max_chains=300), max_evidence
    )
    if args.rank_by == "relevance":
        keys = relevance_keys(config, chained)
    else:
        keys = [[{f.fact_id: f.score for f in pool} for pool in ex.pool] for ex in chained]
    rows, result = [], {"machine": machine(), "rank_by": args.rank_by, "rows": []}
    for n in args.top_facts:
        rate = {True: [], False: []}
        e_recall, top_recall = [], []
        for ex, ex_keys in zip(chained, keys, strict=True):
            gold = {text_key(g) for g in ex.gold_facts}
            for i, (chains, pool) in enumerate(zip(ex.chains, ex.pool, strict=True)):
                ranked = sorted(pool, key=lambda f: -ex_keys[i][f.fact_id])[:n]
                top = {f.fact_id for f in ranked}
                kept = [c for c in chains if set(c.facts) <= top]
                rate[i == ex.answer_index].append(bool(kept))
                if i == ex.answer_index and gold:
                    used = {text_key(t) for c in kept for t in c.texts}
                    e_recall.append(len(gold & used) / len(gold))
                    top_recall.append(len(gold & {text_key(f.text) for f in ranked}) / len(gold))
        row = {"top_facts": n, "right_with_chain": statistics.mean(rate[True]),
               "wrong_with_chain": statistics.mean(rate[False]),
               "E_gold_recall": statistics.mean(e_recall), "top_gold_recall": statistics.mean(top_recall)}  # fmt: skip
        result["rows"].append(row)
        rows.append([n, f"{100 * row['right_with_chain']:.1f}", f"{100 * row['wrong_with_chain']:.1f}",
                     f"{100 * (row['right_with_chain'] - row['wrong_with_chain']):.1f}",
                     f"{100 * row['E_gold_recall']:.1f}", f"{100 * row['top_gold_recall']:.1f}"])  # fmt: skip
    suffix = "" if args.rank_by == "retrieval" else f"-{args.rank_by}"
    save_result(f"chains_top_facts-{args.name}{suffix}", result)
    print(
        f"{args.name} dev, {len(examples)} questions; chains through a hypothesis's N best pool facts only (by {args.rank_by})"
    )
    print_table(["N best facts", "right answers with a chain %", "wrong answers with a chain %", "gap",
                 "gold fact in Ê %", "gold fact in the N best %"], rows)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/obqa.yaml")
    parser.add_argument("--name", default="obqa")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--entailmentbank", action="store_true")
    parser.add_argument("--gold-loss", action="store_true", help="where gold facts are lost")
    parser.add_argument("--link-shares", type=float, nargs="+", default=None,
                        help="compare data.chains.max_link_share values (hub concepts)")  # fmt: skip
    parser.add_argument("--top-facts", type=int, nargs="+", default=None,
                        help="chain rates when chains may use only a hypothesis's N best facts")  # fmt: skip
    parser.add_argument("--explain-top-facts", type=int, default=None,
                        help="override data.chains.explain_top_facts (0: off)")  # fmt: skip
    parser.add_argument("--rank-by", choices=["retrieval", "relevance"], default="retrieval",
                        help="--top-facts: rank a hypothesis's facts by retrieval score or by cosine to 'question choice'")  # fmt: skip
    args = parser.parse_args()
    config = train_config(args.config)
    data = config["data"]
    examples = pools(config, data["dev_file"])
    chain_settings = copy.deepcopy(data.get("chains", {}))
    chain_settings["pad_evidence"] = False
    if args.link_shares:
        link_share_table(examples, chain_settings, data["max_evidence"], args)
        return
    if args.top_facts:
        top_facts_table(examples, chain_settings, data["max_evidence"], args, config)
        return
    if args.gold_loss:  # only this measure, saved on its own (uses the configured parse cache)
        chain_cfg = chain_config(chain_settings)
        stages = gold_loss(examples, chain_cfg, data["max_evidence"])
        save_result(
            f"chains_gold_loss-{args.name}",
            {"machine": machine(), "chain_config": asdict(chain_cfg), "stages": stages},
        )
        print(f"{args.name} dev: gold facts of the gold answer, first stage that loses them")
        print_table(["stage", "gold facts"], list(stages.items()))
        return
    if args.explain_top_facts is not None:
        chain_settings["explain_top_facts"] = args.explain_top_facts
    relevance = (
        relevance_keys(config, examples) if chain_settings.get("explain_top_facts") else None
    )
    with tempfile.TemporaryDirectory() as tmp:
        chain_cfg = chain_config(chain_settings, amr={"cache": f"{tmp}/amr.sqlite"})
        _, cold, cold_seconds = with_chains(
            examples, chain_cfg, data["max_evidence"], relevance
        )  # parses everything
        sentences = len(
            {h for ex in examples for h in ex.hypotheses}
            | {f.text for ex in examples for p in ex.pool for f in p}
        )
        chained, warm, _ = with_chains(examples, chain_cfg, data["max_evidence"], relevance)
        result = {"machine": machine(), "dataset": args.name, "embedded_parse_sentences_per_s": sentences / cold_seconds,
                  "chain_config": asdict(chain_cfg), **chain_stats(chained, warm)}  # fmt: skip
        if args.checkpoint:
            padded_cfg = ChainConfig(
                **{**asdict(chain_cfg), "amr": chain_cfg.amr, "pad_evidence": True}
            )
            padded, _, _ = with_chains(examples, padded_cfg, data["max_evidence"], relevance)
            result["accuracy_by_chain_length"] = accuracy_by_length(
                padded, args.checkpoint, args.name
            )
        if args.entailmentbank:
            result["entailmentbank"] = entailmentbank_recall(config, chain_cfg)
    save_result(f"chains-{args.name}", result)
    print(f"{args.name} dev, {result['questions']} questions; {machine()}")
    print_table(["measure", "value"], [
        ["correct-answer hypotheses with >= 1 chain", result["gold_with_chain"]],
        ["wrong-answer hypotheses with >= 1 chain", result["wrong_with_chain"]],
        ["gap (right - wrong)", result["gold_with_chain"] - result["wrong_with_chain"]],
        ["chain lengths (facts: count)", json.dumps(result["chain_lengths"])],
        ["mean |Ê| (facts of the evidence_chains best chains, unpadded)", result["mean_E"]],
        ["mean facts on the kept chains (max_chains; export, losses)", result["mean_kept_chain_facts"]],
        ["gold facts of the gold answer in its Ê (all evidence_chains chains)", result["E_gold_recall"]],
        ["chain search per question, p50 / p99 ms", f"{result['search_ms_p50']:.1f} / {result['search_ms_p99']:.1f}"],
        ["embedded parser, sentences/s (cold cache, incl. concept extraction)", result["embedded_parse_sentences_per_s"]],
    ])  # fmt: skip
    if "accuracy_by_chain_length" in result:
        print_table(["gold answer's shortest chain", "accuracy", "questions"],
                    [[k, v["accuracy"], v["n"]] for k, v in result["accuracy_by_chain_length"].items()])  # fmt: skip
    if "entailmentbank" in result:
        eb = result["entailmentbank"]
        print_table(["EntailmentBank gold facts", "questions", "facts", "recall in pool", "recall in Ê"],
                    [["gold answer's hypothesis", eb["questions"], eb["gold_facts"], eb["recall_pool"], eb["recall_E"]]])  # fmt: skip


if __name__ == "__main__":
    main()
