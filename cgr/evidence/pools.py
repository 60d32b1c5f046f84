"""Evidence pools for every (question, choice) hypothesis, computed once and cached on disk.

The cache key covers the question file's bytes, the corpus files' bytes and the retrieval
settings, so a changed corpus or config never reuses stale pools.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from cgr.chains.builder import ChainConfig
from cgr.data.hypothesis import RULES_VERSION, HypothesisGenerator
from cgr.data.loaders import require_file
from cgr.data.records import Chain, Question, fact_id
from cgr.data.root import data_path
from cgr.errors import ConfigError
from cgr.files import atomic_write
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact, Retriever
from cgr.retrieval.factory import RetrievalConfig

log = logging.getLogger(__name__)


def _file_digest(path: str | Path, h) -> None:
    p = data_path(path)
    files = sorted(p.glob("*.tsv")) if p.is_dir() else [require_file(p, "corpus file")]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())


def pool_cache_key(question_files: list[str], cfg: RetrievalConfig, extra: str = "") -> str:
    h = hashlib.sha256()
    for path in question_files:
        _file_digest(path, h)
    for path in [*cfg.corpus, *([cfg.open_book] if cfg.open_book else [])]:
        _file_digest(path, h)
    h.update(json.dumps(cfg.pool_settings(), sort_keys=True).encode())
    h.update(f"hypotheses-v{RULES_VERSION}".encode())
    h.update(extra.encode())
    return h.hexdigest()[:20]


def build_examples(
    questions: list[Question],
    retriever: Retriever | None,
    hypotheses: HypothesisGenerator,
    batch_size: int = 64,
    desc: str = "retrieving",
    gold: bool = False,
    progress: bool = True,
) -> list[ReaderExample]:
    """records -> hypotheses -> pools: the first three stages of the data flow. `gold`: every
    choice's pool is its question's gold facts (the oracle row of benchmarks/evidence.py)."""
    all_hyps = hypotheses.generate_many([(q.stem, [c.text for c in q.choices]) for q in questions])
    flat = [h for hyps in all_hyps for h in hyps]
    pools: list[list[RetrievedFact]] = [[] for _ in flat]
    if gold:
        pools = gold_pools(questions, all_hyps)
    elif retriever is not None:
        for start in tqdm(
            range(0, len(flat), batch_size), desc=desc, unit="batch", disable=not progress
        ):
            pools[start : start + batch_size] = retriever.retrieve(flat[start : start + batch_size])
    examples, cursor = [], 0
    for q, hyps in zip(questions, all_hyps, strict=True):
        examples.append(
            ReaderExample(
                question_id=q.id,
                question=q.stem,
                labels=[c.label for c in q.choices],
                choices=[c.text for c in q.choices],
                hypotheses=hyps,
                pool=pools[cursor : cursor + len(hyps)],
                answer_index=q.answer_index,
                gold_facts=list(q.gold_facts),
            )
        )
        cursor += len(hyps)
    return examples


def gold_pools(questions: list[Question], all_hyps: list[list[str]]) -> list[list[RetrievedFact]]:
    """The oracle: each choice's pool is its question's gold facts. Questions without gold facts
    get empty pools (counted in the log); a file with none at all is a configuration error."""
    if not any(q.gold_facts for q in questions):
        first = questions[0] if questions else None
        where = f"{first.source}: " if first else ""
        raise ConfigError(
            f"{where}no question has gold facts; retrieval.method gold needs them (OpenBookQA's "
            "Additional/*_complete.jsonl carry fact1; data.gold_facts_files adds WorldTree's)"
        )
    missing = sum(not q.gold_facts for q in questions)
    if missing:
        log.warning(
            "oracle evidence: %d of %d questions have no gold facts", missing, len(questions)
        )
    return [
        [RetrievedFact(fact_id(t), t, 1.0, 1, "gold") for t in q.gold_facts]
        for q, hyps in zip(questions, all_hyps, strict=True)
        for _ in hyps
    ]


def _save_cache(path: Path, lines) -> None:
    """A cache is a shortcut: a full disk (or a link where it goes) costs a warning and the
    next run's retrieval, never the run in progress."""
    try:
        atomic_write(path, lambda f: f.writelines(lines))
    except (OSError, ConfigError) as e:
        why = getattr(e, "strerror", None) or str(e)
        log.warning("could not write the cache %s (%s); going on without it", path, why)


def save_examples(path: Path, examples: list[ReaderExample]) -> None:
    _save_cache(path, (json.dumps(asdict(ex)) + "\n" for ex in examples))


# raised when the same settings give other chains (2: the paper's attribute nodes, paths end at
# their first answer node; 3: the fact-path search, which finds more where a budget cut
# the node DFS), so caches of an older search are not read as this one's
CHAIN_SEARCH_VERSION = 3


def chain_cache_path(
    pool_cache: Path, chains: ChainConfig, evidence_order: str = "question_choice"
) -> Path:
    """Where the chains searched over a cached pool are kept: next to it, keyed by every chain
    setting that changes them (not where the AMR cache lives, the parse batch size or the
    number of worker processes), and by `data.evidence.order` where it ranks the facts the
    search prefers (chain_order relevance | open_book, explain_top_facts): `retriever` ranks
    them by the query encoder and the hypothesis, `question_choice` by the base encoder and
    "question choice", so one pool gives two chain rankings."""
    settings = asdict(chains)
    ranked = chains.chain_order != "length" or chains.explain_top_facts
    if ranked and evidence_order != "question_choice":  # the default keeps its earlier keys
        settings["evidence_order"] = evidence_order
    settings["amr"] = {k: v for k, v in settings["amr"].items() if k not in {"cache", "batch_size"}}
    if not settings["explain_top_facts"]:  # added later: off keeps the keys of caches before it
        del settings["explain_top_facts"]
    if settings["link_similarity"] is None:  # added later: off keeps the earlier keys
        del settings["link_similarity"]
    if settings["rank_encoder"] is None:  # added later: off keeps the earlier keys
        del settings["rank_encoder"]
    elif ranked:  # a retrained ranker in the same folder ranks anew
        from cgr.chains.ranker import fingerprint

        settings["rank_encoder"] = fingerprint(settings["rank_encoder"])
    del settings["workers"]  # how many processes searched does not change the chains
    settings["search_version"] = CHAIN_SEARCH_VERSION
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    return pool_cache.with_name(f"{pool_cache.stem}.chains-{key}.jsonl")


def save_chains(path: Path, examples: list[ReaderExample]) -> None:
    """Each question's chains and Ê, one line per question, in the pool file's order."""
    _save_cache(
        path,
        (
            json.dumps(
                {
                    "question_id": ex.question_id,
                    "chains": [[c.to_dict() for c in chains] for chains in ex.chains],
                    "chain_facts": ex.chain_facts,
                }
            )
            + "\n"
            for ex in examples
        ),
    )


DAMAGED = (
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    UnicodeDecodeError,
)  # a cut or garbled cache


def load_chains(path: Path, examples: list[ReaderExample]) -> bool:
    """Sets chains and Ê from `path`; False (nothing changed) when it does not hold exactly these
    questions, or cannot be read (a cut file), so a stale, foreign or damaged file is searched
    again, never half used."""
    try:
        with path.open(encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        ok = [r["question_id"] for r in rows] == [ex.question_id for ex in examples] and all(
            len(r["chains"]) == len(ex.pool) for r, ex in zip(rows, examples, strict=True)
        )
        chains = (
            [[[Chain.from_dict(c) for c in cs] for cs in r["chains"]] for r in rows] if ok else []
        )
    except DAMAGED:
        ok = False
    if not ok:
        log.warning("%s does not match its pools or is damaged; searching chains again", path)
        return False
    for r, ex, found in zip(rows, examples, chains, strict=True):
        ex.chains, ex.chain_facts = found, r["chain_facts"]
    return True


def cached_examples(path: Path, questions: list) -> list[ReaderExample] | None:
    """The pools cached in `path` for exactly these questions; None, with a warning and the
    file removed, when it is cut, garbled or holds other questions (rebuilt by the caller)."""
    try:
        examples = load_examples(path)
        ok = [ex.question_id for ex in examples] == [q.id for q in questions]
        why = "it holds other questions" if not ok else ""
    except DAMAGED as e:
        ok, why = False, f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    if ok:
        return examples
    log.warning("pool cache %s is damaged (%s); retrieving again", path, why)
    path.unlink(missing_ok=True)
    return None


def load_examples(path: Path) -> list[ReaderExample]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if "pool" not in row:  # written before the pool and the facts read were kept apart
                row["pool"], row["facts"] = row["facts"], []
            for key in ("pool", "facts"):
                row[key] = [[RetrievedFact(**fact) for fact in pool] for pool in row[key]]
            row["chains"] = [[Chain.from_dict(c) for c in chains] for chains in row["chains"]]
            out.append(ReaderExample(**row))
    return out
