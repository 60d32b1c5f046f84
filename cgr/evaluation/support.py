"""Does a chain support the choice it is shown for? The trained reader judges it: the chain's
facts alone are offered to every choice of the question, and the chain's support for its
choice is the reader's probability of that choice over all of them (softmax). A chain that
only links words ("an anemometer is used to measure wind speed", shown for "balance") gives
its choice no more than the others; a fact that contradicts the choice ("a thermometer is used
to measure temperature", shown for "to measure length") gives the probability to the choice
it does state. Why the reader and not word or concept coverage: each choice's pool is
retrieved for that choice, so its chains cover it by construction (an AMR coverage score
separated right from wrong choices with AUC 0.53 on held-out OBQA, no better than "has a
chain"); benchmarks/chain_support.py measures this signal against that one.

Each chain gets a label (chain_label: supports / points to (X) / links words) from its
reading and its margin over the other choices' chains. By default (`order="supported_first"`) the supporting chains come first,
each group in the search's order (data.chains.chain_order); `order="support"` ranks by the
support value itself, the search's order breaking ties; `order="search"` keeps the search's
order and only reports the support.
"""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from cgr.chains.export import separated, unseparated
from cgr.data.records import Chain
from cgr.reader.examples import SCORED_CHAINS, ReaderExample, reading_only

# the reader, reading only the chain, prefers its choice over all the others together (a rule,
# not fitted: Youden's J on a training file gives 0.4 on the quickstart's and 0.48 on 400 OBQA
# train questions with a one-epoch checkpoint, benchmarks/chain_verifier.py; 0.30 on 300 ARC
# train questions with a one-epoch CGR checkpoint whose probabilities are near uniform)
SUPPORTED = 0.5
# A chain *supports* its choice when, reading only the chain, the reader prefers that choice to
# every other (its lead, p(choice) - p(best other choice), is positive) and gives it more than
# any other choice's chains give theirs, by at least a margin (support - the best support of
# another choice's chain): the threshold, fitted to each model on its own training questions
# (cgr.pretrained.chain_labels), MARGIN where none is fitted. Why the margin across choices
# and not the lead within one reading: a reader trained on each choice's own evidence spreads
# its probability when every choice reads one fact ("a thermometer is used to measure
# temperature" read by all four tools of the quickstart's q-001 gives (D) 0.45 and (A) 0.34),
# so the lead is small for right choices, while the rival choices' chains, each read alone,
# support their choices less. On the quickstart (thresholds fitted on its training questions,
# dev measured): the best lead separates right from wrong choices with AUC 0.90 (72 % of right
# choices with a chain supported, 9 % of wrong), the margin with AUC 0.98 (94 %, 4 %).
MARGIN = 0.05
# A chain *points to* another choice X when its reading prefers X to every other choice by at
# least LEAD; otherwise it *links words*. LEAD also decides the "why" line (a chain whose reading
# favours the answer over the runner-up by LEAD separates them). Stated, not fitted: a lead
# means the same with 2 choices as with 5.
LEAD = 0.1
LABELS = ("supports", "points_to", "links_words")
# chains per choice scored (the search's best): the ranking reorders these
CANDIDATES = SCORED_CHAINS
ORDERS = ("support", "supported_first", "search")
# which chain is shown first. On OBQA dev (a one-epoch checkpoint, open-book search order;
# benchmarks/chain_support.py --orders-only) the gold fact is on the first chain for 44.0 %
# supporting-first against 37.2 % by the support value, +6.8 [+3.9, +9.7] points paired over
# the 500 questions, and 44.8 % in the search's order (+0.8 [-0.2, +1.8], which shows the
# chains that link words first as readily as the ones that support). With similar links and
# the chain ranker (both off by default) the search's order puts the gold fact first more
# often, 55.4 against 52.2 % (+3.2 [+1.5, +4.9]), also on the questions the reader answers
# right (54.7 against 50.9 %): support promotes chains the reader takes for the answer that
# hold no gold fact. Supporting-first stays, as what a reader of the page asks for first is
# a chain that supports; `order="search"` is the measured alternative.
DEFAULT_ORDER = "supported_first"


def chain_readings(
    reader,
    examples: list[ReaderExample],
    candidates: int = CANDIDATES,
    batch_size: int = 32,
    progress: bool = False,
) -> list[list[list[list[float]]]]:
    """Per example, choice and each of its first `candidates` chains: the reader's
    probabilities over all the question's choices, reading only that chain's facts ([] for a
    chain not tied to its pool: it is not read). `reader`: a MultipleChoiceReader, or a module
    that holds one as `.reader`. A chain's reading depends only on its question and facts, so
    chains of one question with the same facts (one fact linking two choices) are read once;
    the readings go in order of length so that a batch pads little (1.2x faster on 20 OBQA dev
    questions, the same supports)."""
    virtual, where, seen = [], [], {}
    out = [[[] for _ in ex.choices] for ex in examples]
    for e, ex in enumerate(examples):
        for c, chains in enumerate(ex.chains or []):
            for chain in chains[:candidates]:
                out[e][c].append([])
                key = (e, tuple(chain.facts), tuple(chain.texts))
                if key in seen:
                    where[seen[key]].append((e, c, len(out[e][c]) - 1))
                elif read := reading_only(ex, chain):  # not tied to its pool: supports nothing
                    seen[key] = len(virtual)
                    virtual.append(read)
                    where.append([(e, c, len(out[e][c]) - 1)])
    reader = getattr(reader, "reader", reader)
    by_length = sorted(range(len(virtual)), key=lambda i: reading_length(virtual[i]))
    starts = range(0, len(by_length), batch_size)
    for start in tqdm(starts, desc="chain support", unit="batch", disable=not progress):
        batch = by_length[start : start + batch_size]
        with torch.no_grad():
            encoded = reader.encode([virtual[i] for i in batch], reader.device)
            probs = reader(encoded).float().softmax(-1).cpu()
        for i, row in zip(batch, probs, strict=True):
            values = [float(p) for p in row[: len(examples[where[i][0][0]].choices)]]
            for e, c, k in where[i]:
                out[e][c][k] = values
    return out


def supports_of(readings: list[list[list[float]]]) -> list[list[float]]:
    """Per choice, each chain's support: its choice's probability in the chain's reading."""
    return [[row[c] if row else 0.0 for row in rows] for c, rows in enumerate(readings)]


def chain_support(
    reader,
    examples: list[ReaderExample],
    candidates: int = CANDIDATES,
    batch_size: int = 32,
    progress: bool = False,
) -> list[list[list[float]]]:
    """Per example and choice, the support of each of its first `candidates` chains (the
    chain's own choice's probability in its reading, chain_readings)."""
    readings = chain_readings(reader, examples, candidates, batch_size, progress)
    return [supports_of(r) for r in readings]


def reading_length(example: ReaderExample) -> int:
    """Characters of a chain's reading's longest input, as a stand-in for its tokens."""
    facts = sum(len(f.text) for f in example.facts[0]) if example.facts else 0
    return len(example.question) + max(map(len, example.choices), default=0) + facts


def ranking(
    scores: list[float], order: str = "support", supporting: list[bool] | None = None
) -> list[int]:
    """The indices of a choice's scored chains in the order shown (ORDERS; sorts are stable,
    so the search's order breaks ties). `supporting`: which chains support (else support >=
    SUPPORTED, as the benchmarks' saved rows were ranked)."""
    if order == "supported_first":
        flags = supporting if supporting is not None else [s >= SUPPORTED for s in scores]
        return sorted(range(len(scores)), key=lambda k: not flags[k])
    if order == "support":
        return sorted(range(len(scores)), key=lambda k: -scores[k])
    return list(range(len(scores)))


def rank_by_support(
    example: ReaderExample, support: list[list[float]], order: str = "support",
    readings: list[list[list[float]]] | None = None, threshold: float = MARGIN,
) -> list[list[float]]:  # fmt: skip
    """In place: each choice's scored chains in `order`'s ranking (support: by support; with
    "supported_first", the supporting ones first, each group in the search's order), the
    unscored ones after them (and `readings`, when given, in the same order: a chain supports
    by its label then); the supports in the chains' new order."""
    ranked, margin = [], margins(support)
    for c, scores in enumerate(support):
        chains = example.chains[c]
        flags = None
        if readings is not None:
            flags = [chain_label(row, c, margin[c][k], threshold)[0] == "supports"
                     for k, row in enumerate(readings[c])]  # fmt: skip
        order_ = ranking(scores, order, flags)
        example.chains[c] = [chains[k] for k in order_] + chains[len(scores) :]
        if readings is not None:
            readings[c] = [readings[c][k] for k in order_]
        ranked.append([scores[k] for k in order_])
    return ranked


def margins(support: list[list[float]]) -> list[list[float]]:
    """Each chain's support minus the best support any other choice's chain has: a chain
    that only matches what every choice's chains already give its own choice scores near or
    below 0. Within a choice it ranks the chains as their support does; across the choices of
    a question it is the contrast a reader of the page makes."""
    best = [max(scores, default=0.0) for scores in support]
    out = []
    for c, scores in enumerate(support):
        others = max((b for i, b in enumerate(best) if i != c), default=0.0)
        out.append([s - others for s in scores])
    return out


def chain_label(
    row: list[float], choice: int, margin: float, threshold: float = MARGIN, lead: float = LEAD
) -> tuple[str, float, int | None]:
    """(label, lead, favoured choice) of a chain shown for `choice`, from its reading `row`
    (chain_readings) and its `margin` (margins): it supports with a positive lead (p(choice)
    minus the best other choice's p) and a margin of at least `threshold`; it points to the
    choice its reading prefers by at least `lead`."""
    if len(row) < 2:
        return "links_words", 0.0, None
    own = row[choice] - max(p for j, p in enumerate(row) if j != choice)
    if own > 0 and margin >= threshold:
        return "supports", own, choice
    other = max((j for j in range(len(row)) if j != choice), key=row.__getitem__)
    if row[other] - max(p for j, p in enumerate(row) if j != other) >= lead:
        return "points_to", own, other
    return "links_words", own, None


def label_text(label: str, favoured: int | None, labels: list[str]) -> str:
    """The label as a reader of the page reads it: supports / points to (X) / links words."""
    if label == "points_to" and favoured is not None:
        return f"points to ({labels[favoured]})"
    return label.replace("_", " ")


def supported(score: float | None, threshold: float = SUPPORTED) -> bool:
    return score is not None and score >= threshold


def contrast(
    labels: list[str], scores: list[float], chains: list[list[Chain]],
    readings: list[list[list[float]]], read: list[list[str]], threshold: float = LEAD,
) -> dict | None:  # fmt: skip
    """Why the predicted answer and not the runner-up: the chain (shown for any choice) whose
    reading favours the answer over the runner-up the most, when by at least `threshold`
    (kind "answer"); else one that favours the runner-up so ("runner_up"); else no chain
    separates them ("none", or "no_chains" when neither has a chain): then the facts the
    answer read first."""
    if len(scores) < 2:
        return None
    best, second = sorted(range(len(scores)), key=lambda i: -scores[i])[:2]
    a, b = labels[best], labels[second]
    gaps = [(row[best] - row[second], c, k)
            for c, rows in enumerate(readings) for k, row in enumerate(rows) if row]  # fmt: skip
    record = {"answer": a, "runner_up": b, "threshold": threshold}
    # on a tie (one chain shown for several choices), the one shown for the choice it favours
    top = max(gaps, key=lambda g: (g[0], g[1] == best, -g[1], -g[2]), default=None)
    low = min(gaps, key=lambda g: (g[0], g[1] != second, g[1], g[2]), default=None)
    if top is not None and top[0] >= threshold:
        kind, (gap, c, k) = "answer", top
    elif low is not None and low[0] <= -threshold:
        kind, (gap, c, k) = "runner_up", low
    else:
        has = [bool(chains[i]) if i < len(chains) else False for i in (best, second)]
        record.update(kind="none" if any(has) or gaps else "no_chains",
                      facts=list(read[best][:2]) if best < len(read) else [])  # fmt: skip
        record["text"] = unseparated(record, f"the facts ({a}) read")
        return record
    row = readings[c][k]
    record.update(kind=kind, chain=list(chains[c][k].facts), shown_for=labels[c],
                  gap=round(gap, 4), answer_p=round(row[best], 4), runner_up_p=round(row[second], 4))  # fmt: skip
    record["text"] = separated(record, "a chain")
    return record
