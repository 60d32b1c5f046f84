"""Do the chains support what they are shown for, and does the reader rely on them?

On a trained checkpoint and a question file with answer keys (and gold facts, for the gold
column), the chains of every choice are scored for support by the reader
(cgr/evaluation/support.py) and measured:

* support AUC: a choice's best chain support (no chain: 0) telling right from wrong choices,
  beside "has a chain" (today's signal);
* the share of right and of wrong choices shown a *supporting* chain (support >= 0.5), and
  the threshold a training file calibrates (`--calibrate FILE`: Youden's J, right vs wrong);
* the gold fact on the chain shown first, ranked by support, supporting chains first (each
  group in the search's order), and in the search's order (`--search-order` re-runs the chain
  search in another data.chains.chain_order);
* support as an answer on its own: the choice whose best chain has the highest support;
* faithfulness (ERASER, DeYoung et al. 2020) of the chain shown first for the predicted answer:
  comprehensiveness (p(answer) drop when its facts are removed from what the answer reads) and
  sufficiency (the drop when the answer reads only them), against as many random facts read and
  as many of the most similar facts read (the first ones, in the reader's order), with bootstrap
  95 % intervals over questions; how often the answer flips when the chain is removed.

    .venv/bin/python benchmarks/chain_support.py --checkpoint CKPT --data DEV.jsonl --name NAME
    .venv/bin/python benchmarks/chain_support.py --table
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    RESULTS,
    cached_examples,
    load_result,
    machine,
    paired_hits,
    paired_interval,
    print_table,
    save_result,
)
from cgr.chains.builder import CHAIN_ORDERS  # noqa: E402
from cgr.evidence.selection import ORDERS as EVIDENCE_ORDERS  # noqa: E402

SEED = 0
BOOTSTRAP = 1000
# the readers support alone is set beside: benchmarks/cgr_ablations.py's one-epoch rows on the
# budget of the dataset's chain-support checkpoints, every seed saved
BESIDE = {"obqa": "q0-e1-l128-lr1e-4", "arc_challenge": "q3200-e1-l128"}
# runs compared on the same questions: the reader trained to judge single chains
# (model.chain_reading, benchmarks/cgr_ablations.py's chain_reading row) against CGR's, and
# the other settings each against the run without it
PAIRED = (
    (
        "arc_challenge-cgr-q3200-e1-s1-open_book",
        "arc_challenge-chain_reading-q3200-e1-s1-open_book",
    ),
    (
        "arc_challenge-cgr-q3200-e1-s1-open_book",
        "arc_challenge-cgr-q3200-e1-s1-open_book-similar_links",
    ),
    # support judged by a support reader (cgr support-reader) against the checkpoint's reader,
    # on the same chains
    (
        "arc_challenge-cgr-q3200-e1-s1-open_book",
        "arc_challenge-cgr-q3200-e1-s1-open_book-support_reader",
    ),
    (
        "obqa-no_chain_losses-authors-sim0.5-e1-s1-open_book",
        "obqa-no_chain_losses-authors-sim0.5-e1-s1-open_book-support_reader",
    ),
    # the chains ranked by a chain ranker trained 3 epochs (cgr ranker --epochs 3) against 1
    (
        "obqa-no_chain_losses-authors-sim0.5-e1-s1-open_book",
        "obqa-no_chain_losses-authors-sim0.5-e1-s1-open_book-ranker_e3",
    ),
)


def auc(right: list[float], wrong: list[float]) -> float:
    """P(a right choice scores above a wrong one), ties counting half: the Mann-Whitney U over
    ranks (tied values share their mean rank), so a bootstrap of it stays fast."""
    if not (right and wrong):
        return float("nan")
    values = sorted([(v, True) for v in right] + [(v, False) for v in wrong])
    rank_sum, i = 0.0, 0
    while i < len(values):
        j = i
        while j < len(values) and values[j][0] == values[i][0]:
            j += 1
        rank_sum += (i + j + 1) / 2 * sum(is_right for _, is_right in values[i:j])
        i = j
    return (rank_sum - len(right) * (len(right) + 1) / 2) / (len(right) * len(wrong))


def interval(values: list[float], rng: random.Random) -> list[float]:
    """The mean and its bootstrap 95 % interval over questions."""
    if not values:
        return [float("nan")] * 3
    means = sorted(statistics.mean(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP))
    return [statistics.mean(values), means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP)]]


def answer_probability(module, examples) -> list[list[float]]:
    """The reader's softmax over each example's choices, reading each choice's `facts`."""
    import torch

    out = []
    for start in range(0, len(examples), 16):
        batch = examples[start : start + 16]
        with torch.no_grad():
            probs = module.reader(module.reader.encode(batch, module.device)).float().softmax(-1)
        out += [row[: len(ex.choices)].tolist() for ex, row in zip(batch, probs, strict=True)]
    return out


def with_facts(example, choice: int, facts: list) -> object:
    changed = copy.copy(example)
    changed.facts = [list(f) for f in example.facts]
    changed.facts[choice] = facts
    return changed


def faithfulness(module, scored, rng: random.Random) -> dict:
    """Per question whose predicted choice has a chain: p(answer) drops for the chain shown
    first and for the two baselines of as many facts read."""
    rows = []
    for example, scores in scored:
        p = max(range(len(scores)), key=scores.__getitem__)
        chains = example.chains[p] if example.chains else []
        read = example.facts[p]
        texts = set(chains[0].texts) if chains else set()
        shown = [f for f in read if f.text in texts]
        if not shown:  # no chain, or none of its facts fit in what the answer read
            continue
        others = [f for f in read if f.text not in texts]
        k = len(shown)
        randoms = rng.sample(others, min(k, len(others)))
        similar = others[:k]
        variants = [example, with_facts(example, p, others), with_facts(example, p, shown)]
        for base in (randoms, similar):
            variants.append(with_facts(example, p, [f for f in read if f not in base]))
            variants.append(with_facts(example, p, base))
        probs = answer_probability(module, variants)
        full = probs[0][p]
        rows.append({
            "comp": full - probs[1][p], "suff": full - probs[2][p],
            "comp_random": full - probs[3][p], "suff_random": full - probs[4][p],
            "comp_similar": full - probs[5][p], "suff_similar": full - probs[6][p],
            "flip": max(range(len(probs[1])), key=probs[1].__getitem__) != p,
            "flip_random": max(range(len(probs[3])), key=probs[3].__getitem__) != p,
        })  # fmt: skip
    return {
        key: interval([float(r[key]) for r in rows], rng) for key in (rows[0] if rows else {})
    } | {"questions": len(rows)}


def gold_texts(question) -> set[str]:
    """A question's gold facts, compared as the evidence selection compares texts."""
    from cgr.evidence.selection import text_key

    return {text_key(g) for g in question.gold_facts}


def on_gold(texts, gold: set[str]) -> bool:
    """Whether any of `texts` (a chain's facts) is a gold fact."""
    from cgr.evidence.selection import text_key

    return bool(gold & {text_key(t) for t in texts})


def gold_reach(questions, examples, candidates: int) -> dict[str, float]:
    """How far any ranking of the chains can put a gold fact first: the share of questions
    (with gold facts) whose answer choice has it on one of its first `candidates` chains (the
    ones support ranks) and in its pool at all (what the chain search had to link)."""
    on_chain, in_pool = [], []
    for q, ex in zip(questions, examples, strict=True):
        gold = gold_texts(q)
        if not gold:
            continue
        chains = ex.chains[q.answer_index][:candidates] if ex.chains else []
        on_chain.append(any(on_gold(c.texts, gold) for c in chains))
        in_pool.append(on_gold([f.text for f in ex.pool[q.answer_index]], gold))
    if not on_chain:
        return {}
    return {"gold_on_ranked_chains": 100 * statistics.mean(on_chain),
            "gold_in_pool": 100 * statistics.mean(in_pool)}  # fmt: skip


def role_triples(graph) -> set[tuple[str, str, str]]:
    """(predicate concept, role, argument concept or value) of an AMR graph, senses and case
    dropped: "measure-01 :ARG1 temperature" is ("measure", ":ARG1", "temperature")."""
    from cgr.chains.concepts import _decoded, normalize_concept

    g = _decoded(graph)
    if g is None:
        return set()
    concept = {v: normalize_concept(c) for v, _, c in g.instances() if c}
    out = {(concept.get(s, ""), role, concept.get(t, "")) for s, role, t in g.edges()}
    out |= {(concept.get(s, ""), role, normalize_concept(str(t))) for s, role, t in g.attributes()}
    return {t for t in out if t[0] and t[2]}


def role_agreement(hypothesis: set, facts: list[set]) -> float:
    """AMR role agreement of a chain with its hypothesis: the hypothesis' (predicate, role,
    argument) triples a chain fact states, minus those a fact fills with another argument the
    hypothesis lacks ("measure :ARG1 temperature" against "measure :ARG1 length"), over the
    hypothesis' triples."""
    if not hypothesis:
        return 0.0
    stated = set().union(*facts) if facts else set()
    words = {t[2] for t in hypothesis} | {t[0] for t in hypothesis}
    agree = sum(t in stated for t in hypothesis)
    conflict = sum(
        any(f[0] == t[0] and f[1] == t[1] and f[2] != t[2] and f[2] not in words for f in stated)
        for t in hypothesis if t not in stated
    )  # fmt: skip
    return (agree - conflict) / len(hypothesis)


def role_signals(pipeline, examples, support) -> dict[str, list[list[float]]]:
    """Per example and choice, the best chain's role agreement, and the best support among the
    chains that state no conflicting role (support checked by roles)."""
    from cgr.amr.parsers import CachedParser

    sentences = {h for ex in examples for h in ex.hypotheses}
    sentences |= {t for ex in examples for cs in (ex.chains or []) for c in cs for t in c.texts}
    ordered = sorted(sentences)  # parsed when the chains were searched: read from the cache
    parsed = dict(zip(ordered, CachedParser(pipeline.chains.amr).parse(ordered), strict=True))
    triples = {text: role_triples(g) for text, g in parsed.items()}
    agreement, checked = [], []
    for ex, sup in zip(examples, support, strict=True):
        agreement.append([])
        checked.append([])
        for c, chains in enumerate(ex.chains or [[] for _ in ex.choices]):
            hyp = triples[ex.hypotheses[c]]
            scores = [role_agreement(hyp, [triples[t] for t in chain.texts]) for chain in chains]
            agreement[-1].append(max(scores, default=0.0))
            kept = [s for s, r in zip(sup[c], scores, strict=False) if r >= 0]
            checked[-1].append(max(kept, default=0.0))
    return {"role": agreement, "support_role_checked": checked}


def shown_first(chains: list, support: list[float], order: str) -> tuple:
    """The texts of the chain `order` shows first."""
    from cgr.evaluation.support import ranking

    if not chains:
        return ()
    return tuple(chains[ranking(support, order)[0] if support else 0].texts)


def paired_orders(first: dict[str, list[bool]]) -> dict[str, list[float]]:
    """Gold fact on the first chain, order b − order a, paired over questions: the difference
    and its 95 % interval in points, per pair of orders."""
    out = {}
    for a, b in (
        ("support", "supported_first"),
        ("supported_first", "search"),
        ("support", "search"),
    ):
        x, y = first[a], first[b]
        if x:
            a_only = sum(u and not v for u, v in zip(x, y, strict=True))
            b_only = sum(v and not u for u, v in zip(x, y, strict=True))
            out[f"{b} - {a}"] = list(paired_interval(a_only, b_only, len(x)))
    return out


def measure(checkpoint: Path, data: str, calibrate: str | None = None, order: str = "support",
            search_order: str | None = None, orders_only: bool = False,
            evidence_order: str | None = None, chains: dict | None = None,
            support_reader: str | None = None) -> dict:  # fmt: skip
    """`order`: how the chains shown (faithfulness) are ranked; `search_order`: the chain
    search's data.chains.chain_order in place of the checkpoint's; `evidence_order`:
    data.evidence.order in place of the checkpoint's (it also ranks the facts the chain search
    orders by relevance: `retriever` is the authors' pathway, the checkpoint's query encoder);
    `chains`: other data.chains settings in place of the checkpoint's (link_similarity,
    rank_encoder); `support_reader`: a support reader's folder (cgr support-reader) judges the
    chains' support in place of the checkpoint's reader (which still answers and is measured
    for faithfulness);
    `orders_only`: without faithfulness and the AMR role signal (the chain orders' comparison
    alone)."""
    from cgr.evaluation.support import (
        CANDIDATES,
        ORDERS,
        SUPPORTED,
        chain_support,
        rank_by_support,
    )

    rng = random.Random(SEED)
    module, pipeline, questions, examples = examples_of(checkpoint, data, search_order,
                                                        evidence_order, chains)  # fmt: skip
    judge = module
    if support_reader:
        from cgr.pretrained.support_reader import load_support_reader

        judge = load_support_reader(support_reader)
    support = chain_support(judge, examples, progress=True)
    firsts = {o: [[shown_first(c, sup, o) for c, sup in zip(ex.chains or [], s, strict=False)]
                  for ex, s in zip(examples, support, strict=True)] for o in ORDERS}  # fmt: skip
    for ex, sup in zip(examples, support, strict=True):
        if order != "search":
            sup[:] = rank_by_support(ex, sup, order)
    roles = {} if orders_only else role_signals(pipeline, examples, support)
    scored = []
    for start in range(0, len(examples), 16):
        scored += module.predict_step(examples[start : start + 16], 0)
    right, wrong, has_right, has_wrong = [], [], [], []
    support_right = support_answer = reader_right = 0
    reader_answers = {}  # question id -> the reader answered it right, to split the AUC by
    gold_first: dict[str, list[bool]] = {o: [] for o in ORDERS}
    gold_ids = []  # the questions gold_first is over (those with a gold fact), to pair runs
    per_question = []  # every chain's support, to pair two runs on the same questions
    for i, (q, ex, sup, (_, scores)) in enumerate(zip(questions, examples, support, scored,
                                                      strict=True)):  # fmt: skip
        best = [max(s, default=0.0) for s in sup]
        per_question.append([q.id, q.answer_index, [[round(v, 5) for v in s] for s in sup]])
        for c, value in enumerate(best):
            chained = float(bool(ex.chains and ex.chains[c]))
            (right if c == q.answer_index else wrong).append(value)
            (has_right if c == q.answer_index else has_wrong).append(chained)
        support_answer += max(range(len(best)), key=best.__getitem__) == q.answer_index
        reader_answers[q.id] = max(range(len(scores)), key=scores.__getitem__) == q.answer_index
        reader_right += reader_answers[q.id]
        support_right += best[q.answer_index] >= SUPPORTED
        gold = gold_texts(q)
        if gold:
            gold_ids.append(q.id)
            for o in ORDERS:
                gold_first[o].append(
                    bool(ex.chains) and on_gold(firsts[o][i][q.answer_index], gold)
                )
    n = len(questions)
    result = {
        "checkpoint": str(checkpoint), "data": data, "machine": machine(), "questions": n,
        "support_auc": auc(right, wrong), "has_chain_auc": auc(has_right, has_wrong),
        "right_supported": 100 * sum(v >= SUPPORTED for v in right) / len(right),
        "wrong_supported": 100 * sum(v >= SUPPORTED for v in wrong) / len(wrong),
        "right_chained": 100 * statistics.mean(has_right), "wrong_chained": 100 * statistics.mean(has_wrong),
        "order": order, "search_order": search_order or pipeline.chains.chain_order,
        "evidence_order": pipeline.evidence.order,
        "link_similarity": pipeline.chains.link_similarity,
        "rank_encoder": pipeline.chains.rank_encoder, "support_reader": support_reader,
        **{f"gold_first_{o}": 100 * statistics.mean(v) if v else None
           for o, v in gold_first.items()},
        "gold_first_paired": paired_orders(gold_first),
        **gold_reach(questions, examples, CANDIDATES),
        "support_only_accuracy": 100 * support_answer / n, "reader_accuracy": 100 * reader_right / n,
        "faithfulness": {} if orders_only else faithfulness(module, scored, rng),
        "threshold": SUPPORTED, "chain_support": per_question, "reader_answers": reader_answers,
        "gold_first_each": {"questions": gold_ids, **gold_first},
    }  # fmt: skip
    for key, values in roles.items():  # the AMR role signal, alone and as a check on support
        pairs = [(v, c == q.answer_index) for q, row in zip(questions, values, strict=True)
                 for c, v in enumerate(row)]  # fmt: skip
        result[f"{key}_auc"] = auc([v for v, r in pairs if r], [v for v, r in pairs if not r])
    if calibrate:
        result["calibrated_threshold"] = calibrated(judge, pipeline, calibrate,
                                                    held_out_ids(support_reader))  # fmt: skip
    return result


def held_out_ids(support_reader: str | None) -> set[str] | None:
    """The training questions a support reader left out (None: no support reader)."""
    if not support_reader:
        return None
    from cgr.pretrained.support_reader import check_support_reader

    return set(check_support_reader(support_reader)["held_out"])


def calibrated(module, pipeline, path: str, ids: set[str] | None = None) -> float:
    """The support threshold that best tells right from wrong choices on a training file
    (Youden's J over the choices' best chain support); `ids`: only these questions (those a
    support reader did not train on), else the file's first 300."""
    from cgr.data.loaders import load_multiple_choice
    from cgr.evaluation.support import chain_support

    questions = load_multiple_choice(path)
    questions = [q for q in questions if q.id in ids] if ids is not None else questions[:300]
    examples = pipeline(questions)
    best = [(max(s, default=0.0), c == q.answer_index)
            for q, sup in zip(questions, chain_support(module, examples), strict=True)
            for c, s in enumerate(sup)]  # fmt: skip
    return youden(best, [i / 20 for i in range(1, 20)])


def youden(pairs: list[tuple[float, bool]], grid: list[float] | None = None) -> float:
    """The threshold (from `grid`, default: the scores seen) that best tells right choices
    (True) from wrong ones: Youden's J, true-positive minus false-positive rate."""
    n_right = sum(r for _, r in pairs) or 1
    n_wrong = sum(not r for _, r in pairs) or 1
    grid = grid if grid is not None else sorted({round(v, 3) for v, _ in pairs})
    return max(grid, key=lambda t: sum(v >= t and r for v, r in pairs) / n_right
               - sum(v >= t and not r for v, r in pairs) / n_wrong)  # fmt: skip


def table() -> None:
    runs = sorted(RESULTS.glob("chain_support-*.json"))
    rows, margins_ = [], {}
    for path in runs:
        r = load_result(path.stem)
        f = r["faithfulness"]
        margin = margins_[path.stem] = margin_auc(r)
        if not f:  # an --orders-only run: its line under the table
            continue

        def cell(key: str, f: dict = f) -> str:
            mean, low, high = f.get(key, [float("nan")] * 3)
            return f"{mean:.3f} [{low:.3f}, {high:.3f}]"

        gold = (
            "–"
            if r["gold_first_support"] is None
            else " / ".join(
                f"{r[k]:.1f}" if k in r else "–"
                for k in ("gold_first_support", "gold_first_supported_first", "gold_first_search")
            )
        )
        if r["gold_first_support"] is not None and "gold_on_ranked_chains" in r:
            gold += f" (≤ {r['gold_on_ranked_chains']:.1f})"
        rows.append([path.stem.removeprefix("chain_support-"), r["questions"],
                     f"{r['support_auc']:.2f} / {f'{margin[0]:.2f}' if margin else '–'} / "
                     f"{r['has_chain_auc']:.2f}",
                     " / ".join(f"{r[k]:.2f}" if k in r else "–" for k in ("role_auc", "support_role_checked_auc")),
                     f"{r['right_supported']:.1f} / {r['wrong_supported']:.1f}", gold,
                     f"{r['support_only_accuracy']:.1f} / {r['reader_accuracy']:.1f}",
                     cell("comp"), f"{cell('comp_random')} / {cell('comp_similar')}", cell("suff"),
                     f"{cell('suff_random')} / {cell('suff_similar')}",
                     f"{100 * f.get('flip', [float('nan')])[0]:.0f} / {100 * f.get('flip_random', [float('nan')])[0]:.0f}"])  # fmt: skip
    print("Chain support (cgr/evaluation/support.py): AUC right vs wrong of the best chain's "
          "support / of its margin (support minus the best support of any other choice's chain) / "
          "of \"has a chain\"; AUC of the best chain's AMR role agreement (the hypothesis' predicate-role-argument "
          "triples a chain states, minus those it fills with another argument) / of support "
          "counting only chains with no conflicting role; choices shown a supporting chain (support >= 0.5), right / wrong %; gold fact on "
          "the chain shown first, ranked by support / supporting chains first / the search's order "
          "(its chain_order, and data.evidence.order, in the run's name where not the checkpoint's), "
          "(≤ on any of the answer's ranked chains, the most a ranking reaches) %; accuracy answering by "
          "support alone / the reader's; faithfulness of the predicted answer's first chain "
          "(p(answer) drop, bootstrap 95 %): comprehensiveness and sufficiency against as many "
          "random facts read / as many of the most similar facts read; answer flips when the "
          "chain / as many random facts are removed %")  # fmt: skip
    print_table(["run", "questions", "AUC support / margin / has chain", "AUC roles / support, roles checked", "supported right / wrong",
                 "gold on first chain", "support-only / reader acc.", "comprehensiveness",
                 "random / similar", "sufficiency drop", "random / similar", "flips"], rows)  # fmt: skip
    if not rows:
        print("(no run measured yet)")
    if margin_lines := [f"{stem.removeprefix('chain_support-')} {d:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                        f"({m[2]:.1f} / {m[3]:.1f}; {m[4]:.1f})"
                        for stem, m in margins_.items() if m for d, lo, hi in [m[1]]]:  # fmt: skip
        print("Margin − support, AUC right vs wrong (the same chains, bootstrap 95 % over "
              f"questions), and (right / wrong choices with a margin ≥ 0, %; the most right choices "
              f"any margin threshold shows a chain for at ≤ {WRONG_CAP:.0f} % of wrong ones): "
              + "; ".join(margin_lines))  # fmt: skip
    if split := [line for path in runs if (line := by_reader_text(path.stem))]:
        print("AUC right vs wrong of support / of its margin on the questions the reader answers "
              "right | wrong (the run's reader, or the checkpoint's own dev answers where the run "
              "saved none; questions): " + "; ".join(split))  # fmt: skip
    beside = [line for d in BESIDE if (line := readers_line(d))]
    if beside:
        print("Support-only accuracy beside the readers trained one epoch "
              f"(benchmarks/cgr_ablations.py, {' / '.join(BESIDE.values())}, dev %): "
              + "; ".join(beside))  # fmt: skip
    for a, b in PAIRED:
        if line := paired_line(a, b):
            print(line)
    for path in runs:  # the --orders-only runs: the chain orders paired over the same questions
        r = load_result(path.stem)
        pairs = r.get("gold_first_paired") or {}
        if pairs and not r["faithfulness"]:  # a full run's orders are its table cell
            shares = " / ".join(
                f"{r[f'gold_first_{o}']:.1f}" for o in ("support", "supported_first", "search")
            )
            print(f"{path.stem.removeprefix('chain_support-')}: gold fact on the first chain "
                  f"(support / supported_first / search) {shares} %, "
                  + "; ".join(f"{k} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" for k, (d, lo, hi) in pairs.items())
                  + " points (paired, 95 %)" + reach_text(r) + orders_by_reader(r))  # fmt: skip


def margin_auc(r: dict) -> tuple[float, tuple[float, float, float], float, float, float] | None:
    """A saved run's margin AUC right vs wrong (cgr.evaluation.support.margins: each choice's
    best support minus the other choices' best), margin − support with its bootstrap 95 %
    interval over questions, the right / wrong choices whose margin is ≥ 0 (%), and the most
    right choices (%) any margin threshold marks while it marks at most WRONG_CAP % of the
    wrong ones (a choice with no chain never); None for a run saved without its chains'
    supports."""
    if not r or not r.get("chain_support"):
        return None
    both = [((answer, best), (answer, shown)) for _, answer, sup in r["chain_support"]
            for best, shown in [choice_margins(sup)]]  # fmt: skip
    margin, marked = margin_split((answer, sup) for _, answer, sup in r["chain_support"])
    share = lambda xs: 100 * sum(x >= 0 for x in xs) / len(xs)  # noqa: E731
    return (auc(margin[True], margin[False]), auc_difference(both), share(margin[True]),
            share(margin[False]), right_at_wrong(marked[True], marked[False]))  # fmt: skip


def choice_margins(sup: list[list[float]]) -> tuple[list[float], list[float]]:
    """A question's choices' best chain support (no chain: 0) and its margin over the other
    choices' best (cgr.evaluation.support.margins)."""
    from cgr.evaluation.support import margins

    best = [max(s, default=0.0) for s in sup]
    return best, [row[0] for row in margins([[b] for b in best])]


def margin_split(questions) -> tuple[dict[bool, list[float]], dict[bool, list[float]]]:
    """Every choice's margin by right (True) / wrong, over (answer, each choice's chain
    supports) per question; and the same with a choice that has no chain never marked
    (-inf), for right_at_wrong."""
    margin, marked = {True: [], False: []}, {True: [], False: []}
    for answer, sup in questions:
        for c, m in enumerate(choice_margins(sup)[1]):
            margin[c == answer].append(m)
            marked[c == answer].append(m if sup[c] else -math.inf)
    return margin, marked


# the most wrong choices the support target lets show a supporting chain (with 80 % of right
# ones); the table says how many right ones the best margin threshold reaches there
WRONG_CAP = 35.0


def right_at_wrong(right: list[float], wrong: list[float], cap: float = WRONG_CAP) -> float:
    """The most right scores (%) one threshold puts above it while at most `cap` % of the
    wrong ones are: the ROC curve's height at that false-positive share (a dev-chosen
    threshold, so an upper bound of what a train-calibrated one reaches)."""
    ranked = sorted(wrong, reverse=True)
    k = int(cap / 100 * len(ranked))  # wrong scores allowed above the threshold
    if k >= len(ranked):
        return 100.0 * sum(v > -math.inf for v in right) / len(right)
    return 100.0 * sum(v > ranked[k] for v in right) / len(right)


def reader_answers(r: dict) -> dict[str, bool] | None:
    """Per question id, whether the reader answered it right: as the run saved it, else the
    checkpoint's own dev answers (benchmarks/cgr_ablations.py keeps them beside its result,
    named by the checkpoint's folder); None where neither is."""
    if r.get("reader_answers"):
        return r["reader_answers"]
    folder = Path(r.get("checkpoint") or "").parent.name
    saved = load_result(f"answers-{folder}") if folder else None
    return {qid: bool(a[0]) for qid, a in saved["answers"].items()} if saved else None


def auc_by_reader(r: dict) -> dict[bool, tuple[int, float, float]] | None:
    """Support and margin AUC right vs wrong on the questions the reader answers right (True)
    and on those it answers wrong (False), with their counts. Support is the reader's own
    judgement of a chain: where it does not know the answer, it cannot know which chain
    supports it, so the split says how much of a missed AUC is the judge's accuracy."""
    answered = reader_answers(r) if r.get("chain_support") else None
    if not answered:
        return None
    groups = {k: ([], [], [], [], 0) for k in (True, False)}  # support, margin by right / wrong
    for qid, answer, sup in r["chain_support"]:
        if qid not in answered:
            continue
        s_right, s_wrong, m_right, m_wrong, n = groups[answered[qid]]
        for c, (b, m) in enumerate(zip(*choice_margins(sup), strict=True)):
            (s_right if c == answer else s_wrong).append(b)
            (m_right if c == answer else m_wrong).append(m)
        groups[answered[qid]] = (s_right, s_wrong, m_right, m_wrong, n + 1)
    return {k: (g[4], auc(g[0], g[1]), auc(g[2], g[3])) for k, g in groups.items() if g[4]}


def by_reader_text(stem: str) -> str | None:
    split = auc_by_reader(load_result(stem) or {})
    if not split or len(split) < 2:
        return None
    cell = lambda k: f"{split[k][1]:.2f} / {split[k][2]:.2f} ({split[k][0]})"  # noqa: E731
    return f"{stem.removeprefix('chain_support-')} {cell(True)} | {cell(False)}"


def paired_line(a: str, b: str) -> str | None:
    """Run b against run a (saved results, the same questions): support AUC, and support as
    the answer, b − a with paired 95 % intervals (AUC: a bootstrap over questions)."""
    ra, rb = load_result(f"chain_support-{a}"), load_result(f"chain_support-{b}")
    if not (ra and rb and "chain_support" in ra and "chain_support" in rb):
        return None

    def best(run: dict) -> dict[str, tuple[int, list[float]]]:
        return {qid: (answer, [max(s, default=0.0) for s in sup])
                for qid, answer, sup in run["chain_support"]}  # fmt: skip

    qa, qb = best(ra), best(rb)
    both = [(qa[qid], qb[qid]) for qid in qb if qid in qa]
    d_auc, low, high = auc_difference(both)

    def right(answer: int, scores: list[float]) -> bool:
        return max(range(len(scores)), key=scores.__getitem__) == answer

    a_only = sum(right(*x) and not right(*y) for x, y in both)
    b_only = sum(right(*y) and not right(*x) for x, y in both)
    d, lo, hi = paired_interval(a_only, b_only, len(both))
    # the search's own order differs only where the runs searched or ranked the chains apart
    search = "" if same_chains(ra, rb) else gold_first_pair(ra, rb, "search")
    return (f"{b} − {a} ({len(both)} paired questions): support AUC {d_auc:+.3f} "
            f"[{low:+.3f}, {high:+.3f}] (bootstrap 95 %); support as the answer {d:+.1f} "
            f"[{lo:+.1f}, {hi:+.1f}] points{gold_first_pair(ra, rb)}{search}{combined_text(ra, rb)}")  # fmt: skip


def same_chains(ra: dict, rb: dict) -> bool:
    """Whether two runs found and ranked the same chains (one checkpoint, one chain search)."""
    keys = ("checkpoint", "data", "search_order", "evidence_order", "link_similarity",
            "rank_encoder")  # fmt: skip
    return all(ra.get(k) == rb.get(k) for k in keys)


def auc_difference(both: list[tuple]) -> tuple[float, float, float]:
    """AUC right vs wrong of the second scoring minus the first's, each row (answer, the
    choices' scores) of one question, with its bootstrap 95 % interval over questions."""

    def auc_of(rows) -> float:
        pairs = [(v, c == answer) for answer, scores in rows for c, v in enumerate(scores)]
        return auc([v for v, r in pairs if r], [v for v, r in pairs if not r])

    rng = random.Random(SEED)
    diffs = []
    for _ in range(BOOTSTRAP):
        draw = rng.choices(both, k=len(both))
        diffs.append(auc_of([y for _, y in draw]) - auc_of([x for x, _ in draw]))
    diffs.sort()
    d = auc_of([y for _, y in both]) - auc_of([x for x, _ in both])
    return d, diffs[int(0.025 * BOOTSTRAP)], diffs[int(0.975 * BOOTSTRAP)]


def combined_text(ra: dict, rb: dict) -> str:
    """Where two runs judged the same chains (a support reader beside the checkpoint's reader):
    each chain's support as the mean of the two judges', its AUC against run a's alone. Two
    judges whose errors differ separate right from wrong better together than either."""
    if not (ra.get("support_reader") is None and rb.get("support_reader")):
        return ""
    a = {qid: (answer, sup) for qid, answer, sup in ra["chain_support"]}
    both = []
    for qid, answer, sup_b in rb["chain_support"]:
        if qid not in a or [len(s) for s in a[qid][1]] != [len(s) for s in sup_b]:
            continue  # not the same chains: not comparable
        sup_a = a[qid][1]
        mean = [max(((x + y) / 2 for x, y in zip(sa, sb, strict=True)), default=0.0)
                for sa, sb in zip(sup_a, sup_b, strict=True)]  # fmt: skip
        both.append(((answer, [max(s, default=0.0) for s in sup_a]), (answer, mean)))
    if not both:
        return ""
    d, low, high = auc_difference(both)
    return (
        f"; the two judges' mean: support AUC {d:+.3f} [{low:+.3f}, {high:+.3f}] against "
        f"the reader's ({len(both)} questions with the same chains)"
    )


def gold_first_pair(ra: dict, rb: dict, order: str = "supported_first") -> str:
    """The gold fact on the first chain, b − a in points with its paired 95 % interval over
    the questions both runs found a gold fact for ("" where a run did not save them)."""
    if any(order not in r.get("gold_first_each", {}) for r in (ra, rb)):
        return ""
    a, b = ({q: hit for q, hit in zip(r["gold_first_each"]["questions"],
                                      r["gold_first_each"][order], strict=True)}
            for r in (ra, rb))  # fmt: skip
    a_only, b_only, questions = paired_hits(a, b)
    d, lo, hi = paired_interval(a_only, b_only, questions)
    return (
        f"; gold fact on the first chain ({order.replace('_', ' ')}) {d:+.1f} "
        f"[{lo:+.1f}, {hi:+.1f}] points over {questions} questions"
    )


def readers_line(dataset: str) -> str | None:
    """The no-facts and the iterative reader's dev accuracy, mean ± sd over the seeds saved."""
    if dataset not in BESIDE:
        return None
    cells = []
    for row, label in (("reader", "no facts"), ("iterative", "iterative")):
        prefix = f"cgr_ablations-{dataset}-{row}-{BESIDE[dataset]}-s"
        accs = [100 * load_result(p.stem)["accuracy"] for p in RESULTS.glob(f"{prefix}*.json")
                if p.stem.removeprefix(prefix).isdigit()]  # fmt: skip
        if accs:
            sd = f" ± {statistics.stdev(accs):.1f}" if len(accs) > 1 else ""
            seeds = f"{len(accs)} seed{'s' if len(accs) > 1 else ''}"
            cells.append(f"{label} {statistics.mean(accs):.1f}{sd} ({seeds})")
    return f"{dataset}: {', '.join(cells)}" if cells else None


def orders_by_reader(r: dict) -> str:
    """The gold fact on the first chain per order on the questions the reader answers right
    and on those it answers wrong: whether an order's loss is the judge's mistakes alone."""
    each, answered = r.get("gold_first_each"), reader_answers(r)
    if not (each and answered):
        return ""
    cells = []
    for right in (True, False):
        idx = [i for i, q in enumerate(each["questions"]) if answered.get(q) is right]
        if idx:
            shares = " / ".join(f"{100 * sum(each[o][i] for i in idx) / len(idx):.1f}"
                                for o in ("support", "supported_first", "search"))  # fmt: skip
            cells.append(
                f"{shares} on the {len(idx)} the reader answers {'right' if right else 'wrong'}"
            )
    return "; " + ", ".join(cells)


def reach_text(r: dict) -> str:
    if "gold_on_ranked_chains" not in r:
        return ""
    return (
        f"; the most any ranking reaches: the gold fact is on one of the answer's ranked "
        f"chains for {r['gold_on_ranked_chains']:.1f} % (in its pool for "
        f"{r['gold_in_pool']:.1f} %)"
    )


def reach_only(checkpoint: Path, data: str, search_order: str | None,
               evidence_order: str | None) -> dict:  # fmt: skip
    """gold_reach alone: pools and chains from the caches, nothing scored."""
    from cgr.evaluation.support import CANDIDATES

    _, _, questions, examples = examples_of(checkpoint, data, search_order, evidence_order)
    return gold_reach(questions, examples, CANDIDATES)


def examples_of(checkpoint: Path, data: str, search_order: str | None,
                evidence_order: str | None, settings: dict | None = None,
                ids: set[str] | None = None):  # fmt: skip
    """common.cached_examples with the chain search's and the reading order's overrides
    (`settings`: other data.chains settings; `ids`: only these questions)."""
    chains = {"chain_order": search_order} if search_order else {}
    chains.update(settings or {})
    evidence = {"order": evidence_order} if evidence_order else None
    return cached_examples(checkpoint, data, chains=chains, evidence=evidence, ids=ids)


def chain_settings(args: argparse.Namespace) -> dict:
    """The data.chains settings the command line puts in place of the checkpoint's
    (`--link-similarity 0`: off, for a checkpoint trained with similar links)."""
    names = ("link_similarity", "rank_encoder")
    out = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    if out.get("link_similarity") == 0:
        out["link_similarity"] = None
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--data", help="a question file with answer keys (default: the dev file)")
    parser.add_argument("--name", help="names the saved result (default: the checkpoint folder)")
    parser.add_argument("--calibrate", help="a training file to calibrate the threshold on")
    parser.add_argument(
        "--order",
        choices=("support", "supported_first", "search"),
        default="support",
        help="how the chains shown are ranked (faithfulness)",
    )
    parser.add_argument(
        "--search-order",
        choices=CHAIN_ORDERS,
        help="the chain search's data.chains.chain_order (default: the checkpoint's)",
    )
    parser.add_argument(
        "--evidence-order",
        choices=EVIDENCE_ORDERS,
        help="data.evidence.order: what the choices read and what ranks the chains' facts "
        "(default: the checkpoint's; retriever: the authors' pathway)",
    )
    parser.add_argument(
        "--link-similarity",
        type=float,
        help="data.chains.link_similarity: facts reach the hypothesis through similar concepts "
        "(0: off)",
    )
    parser.add_argument(
        "--rank-encoder",
        help="data.chains.rank_encoder: a chain ranker (cgr ranker) ranks the chains' facts",
    )
    parser.add_argument(
        "--support-reader",
        help="a support reader's folder (cgr support-reader) judges support, not the checkpoint",
    )
    parser.add_argument(
        "--orders-only",
        action="store_true",
        help="only the chain orders' comparison (no faithfulness, no AMR roles)",
    )
    parser.add_argument(
        "--reach-only",
        action="store_true",
        help="only add to the saved result how often the gold fact is on any ranked chain",
    )
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.checkpoint and not args.table:
        from cgr.pretrained.source import data_settings
        from cgr.training.checkpoints import read_checkpoint

        data = args.data or data_settings(read_checkpoint(args.checkpoint))["dev_file"]
        name = args.name or args.checkpoint.parent.name
        if args.reach_only:
            saved = load_result(f"chain_support-{name}") or {}
            reach = reach_only(args.checkpoint, data, args.search_order, args.evidence_order)
            save_result(f"chain_support-{name}", {**saved, **reach})
            table()
            return
        result = measure(
            args.checkpoint, data, args.calibrate, args.order, args.search_order,
            args.orders_only, args.evidence_order, chain_settings(args), args.support_reader,
        )  # fmt: skip
        save_result(f"chain_support-{name}", result)
    table()


if __name__ == "__main__":
    main()
