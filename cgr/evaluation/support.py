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

A chain is shown as supporting when its support reaches SUPPORTED; below it, as "links words,
does not support". By default (`order="supported_first"`) the supporting chains come first,
each group in the search's order (data.chains.chain_order); `order="support"` ranks by the
support value itself, the search's order breaking ties; `order="search"` keeps the search's
order and only reports the support.
"""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from cgr.chains.export import unseparated
from cgr.data.records import Chain
from cgr.reader.examples import SCORED_CHAINS, ReaderExample, reading_only

# the reader, reading only the chain, prefers its choice over all the others together (a rule,
# not fitted: Youden's J on a training file gives 0.4 on the quickstart's and 0.48 on 400 OBQA
# train questions with a one-epoch checkpoint, benchmarks/chain_verifier.py; 0.30 on 300 ARC
# train questions with a one-epoch CGR checkpoint whose probabilities are near uniform)
SUPPORTED = 0.5
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


def chain_support(
    reader,
    examples: list[ReaderExample],
    candidates: int = CANDIDATES,
    batch_size: int = 32,
    progress: bool = False,
) -> list[list[list[float]]]:
    """Per example and choice, the support of each of its first `candidates` chains.
    `reader`: a MultipleChoiceReader, or a module that holds one as `.reader`. A chain's
    reading depends only on its question and facts, so chains of one question with the same
    facts (one fact linking two choices) are read once; the readings go in order of length so
    that a batch pads little (1.2x faster on 20 OBQA dev questions, the same supports)."""
    virtual, where, seen = [], [], {}
    out = [[[] for _ in ex.choices] for ex in examples]
    for e, ex in enumerate(examples):
        for c, chains in enumerate(ex.chains or []):
            for chain in chains[:candidates]:
                out[e][c].append(0.0)
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
            for e, c, k in where[i]:
                out[e][c][k] = float(row[c])
    return out


def reading_length(example: ReaderExample) -> int:
    """Characters of a chain's reading's longest input, as a stand-in for its tokens."""
    facts = sum(len(f.text) for f in example.facts[0]) if example.facts else 0
    return len(example.question) + max(map(len, example.choices), default=0) + facts


def ranking(scores: list[float], order: str = "support") -> list[int]:
    """The indices of a choice's scored chains in the order shown (ORDERS; sorts are stable,
    so the search's order breaks ties)."""
    if order == "supported_first":
        return sorted(range(len(scores)), key=lambda k: scores[k] < SUPPORTED)
    if order == "support":
        return sorted(range(len(scores)), key=lambda k: -scores[k])
    return list(range(len(scores)))


def rank_by_support(
    example: ReaderExample, support: list[list[float]], order: str = "support"
) -> list[list[float]]:
    """In place: each choice's scored chains in `order`'s ranking (support: by support; with
    "supported_first", the ones reaching SUPPORTED first, each group in the search's order),
    the unscored ones after them; the supports in the chains' new order."""
    ranked = []
    for c, scores in enumerate(support):
        chains = example.chains[c]
        order_ = ranking(scores, order)
        example.chains[c] = [chains[k] for k in order_] + chains[len(scores) :]
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


def supported(score: float | None, threshold: float = SUPPORTED) -> bool:
    return score is not None and score >= threshold


def contrast(
    labels: list[str], scores: list[float], chains: list[list[Chain]], support: list[list[float]],
    read: list[list[str]], threshold: float = SUPPORTED,
) -> dict | None:  # fmt: skip
    """Why the predicted answer and not the runner-up: the supporting chain one has and the
    other lacks, or that no chain separates them (then: the facts the answer read first)."""
    if len(scores) < 2:
        return None
    best, second = sorted(range(len(scores)), key=lambda i: -scores[i])[:2]

    def top(i: int) -> tuple[int | None, float]:
        found = [(k, s) for k, s in enumerate(support[i] if i < len(support) else [])]
        k, s = max(found, key=lambda pair: pair[1], default=(None, 0.0))
        return k, s

    (k_best, s_best), (k_second, s_second) = top(best), top(second)
    a, b = labels[best], labels[second]
    record = {"answer": a, "runner_up": b, "answer_support": s_best, "runner_up_support": s_second}
    if supported(s_best, threshold) and not supported(s_second, threshold):
        record.update(kind="answer_only", chain=list(chains[best][k_best].facts))
        text = (f"({a}) over ({b}): a chain supports ({a}) (support {s_best:.2f}); no chain "
                f"of ({b}) supports it (best {s_second:.2f})")  # fmt: skip
    elif supported(s_second, threshold) and not supported(s_best, threshold):
        record.update(kind="runner_up_only", chain=list(chains[second][k_second].facts))
        text = (f"({a}) over ({b}) although only ({b}) has a supporting chain "
                f"(support {s_second:.2f}); the reader's choice rests on the facts ({a}) read")  # fmt: skip
    else:  # no chain separates them: neither has a supporting chain, or both have one
        record.update(kind="both" if supported(s_best, threshold) else "none",
                      facts=list(read[best][:2]) if best < len(read) else [])  # fmt: skip
        text = unseparated(record, f"the facts ({a}) read")
    record["text"] = text
    return record
