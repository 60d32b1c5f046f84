"""QADataModule: DDP ranks split retrieval and chain search and end with the same examples."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cgr.training.datamodule import QADataModule


def _rank_main(rank: int, world: int, tmp: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world
    )
    try:
        seen: list[int] = []

        def work(items: list[int]) -> list[int]:
            seen.extend(items)
            return [10 * i for i in items]

        trainer = SimpleNamespace(world_size=world, global_rank=rank)
        merged = QADataModule()._on_shares(list(range(7)), work, trainer)
        with open(f"{tmp}/rank{rank}.json", "w") as f:
            json.dump({"seen": seen, "merged": merged}, f)
    finally:
        dist.destroy_process_group()


def test_each_rank_works_on_its_share_and_all_get_the_whole_list(tmp_path):
    mp.spawn(_rank_main, args=(2, str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["seen"] == [0, 2, 4, 6] and ranks[1]["seen"] == [1, 3, 5]
    for r in ranks:
        assert r["merged"] == [0, 10, 20, 30, 40, 50, 60]


def test_one_process_does_all_the_work_without_a_process_group():
    calls: list[list[int]] = []
    merged = QADataModule()._on_shares([1, 2, 3], lambda xs: calls.append(xs) or xs[::-1])
    assert calls == [[1, 2, 3]] and merged == [3, 2, 1]
    assert not torch.distributed.is_initialized()


def test_a_train_budget_takes_questions_from_every_train_file_in_turn(tmp_path):
    from cgr.chains.builder import ChainConfig
    from cgr.retrieval.factory import RetrievalConfig
    from tests.conftest import SAMPLE

    lines = (SAMPLE / "train.jsonl").read_text().splitlines()
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("\n".join(lines[:6]) + "\n")
    second.write_text("\n".join(lines[6:9]) + "\n")
    dm = QADataModule(
        train_file=[str(first), str(second)],
        retrieval=RetrievalConfig(method="none"),
        chains=ChainConfig(enabled=False),
        max_train_questions=5,
        pool_cache_dir=str(tmp_path / "pools"),
    )
    dm.setup("fit")
    ids = [json.loads(line)["id"] for line in lines]
    assert [ex.question_id for ex in dm.splits["train"]] == [ids[0], ids[6], ids[1], ids[7], ids[2]]


def _chain_datamodule(tmp_path, explain_top_facts: int = 0) -> QADataModule:
    from cgr.amr.parsers import AMRConfig
    from cgr.chains.builder import ChainConfig
    from cgr.retrieval.factory import RetrievalConfig
    from tests.conftest import SAMPLE

    return QADataModule(
        train_file=str(SAMPLE / "train.jsonl"),
        dev_file=str(SAMPLE / "dev.jsonl"),
        retrieval=RetrievalConfig(method="bm25", corpus=[str(SAMPLE / "facts.txt")]),
        chains=ChainConfig(
            amr=AMRConfig(cache=str(tmp_path / "amr.sqlite")), explain_top_facts=explain_top_facts
        ),
        max_train_questions=4,
        pool_cache_dir=str(tmp_path / "pools"),
    )


def test_chains_are_searched_once_then_read_from_next_to_the_pools(tmp_path, monkeypatch):
    from cgr.chains.builder import ChainBuilder

    first = _chain_datamodule(tmp_path)
    first.setup("validate")
    cached = list((tmp_path / "pools").glob("*.chains-*.jsonl"))
    assert len(cached) == 1
    searched = first.splits["dev"]
    assert any(chains for ex in searched for chains in ex.chains)

    def no_search(self, examples, relevance=None):
        raise AssertionError("chains searched again despite the cache")

    monkeypatch.setattr(ChainBuilder, "attach", no_search)
    second = _chain_datamodule(tmp_path)
    second.setup("validate")
    for a, b in zip(searched, second.splits["dev"], strict=True):
        assert (a.chains, a.chain_facts, a.facts) == (b.chains, b.chain_facts, b.facts)

    # a cache that does not hold these questions is searched again, not half used
    lines = cached[0].read_text().splitlines()
    cached[0].write_text("\n".join(lines[1:]) + "\n")
    monkeypatch.undo()
    third = _chain_datamodule(tmp_path)
    third.setup("validate")
    assert [ex.chain_facts for ex in third.splits["dev"]] == [ex.chain_facts for ex in searched]
    assert len(cached[0].read_text().splitlines()) == len(lines)


def test_explained_chains_go_through_the_facts_the_reader_ranks_first(tmp_path):
    """explain_top_facts ranks facts as the reader's order does (cosine to "question choice"
    with the real MiniLM), caches its chains apart, and leaves Ê as without it."""
    from cgr.evidence.selection import fact_relevance

    full = _chain_datamodule(tmp_path)
    full.setup("validate")
    top2 = _chain_datamodule(tmp_path, explain_top_facts=2)
    top2.setup("validate")
    assert len(list((tmp_path / "pools").glob("*.chains-*.jsonl"))) == 2
    examples = top2.splits["dev"]
    relevance = fact_relevance(examples, "question_choice", top2.pipeline._relevance_scorer())
    dropped = 0
    for ex, before, keys in zip(examples, full.splits["dev"], relevance, strict=True):
        assert ex.chain_facts == before.chain_facts
        for chains, all_chains, pool, key in zip(
            ex.chains, before.chains, ex.pool, keys, strict=True
        ):
            best = {f.fact_id for f in sorted(pool, key=lambda f: -key[f.fact_id])[:2]}
            assert all(set(c.facts) <= best for c in chains)
            dropped += len(all_chains) - len(chains)
    assert dropped > 0, "the sample data has chains through less relevant facts"


@pytest.mark.parametrize("damage", ["cut mid-line", "cut at a line end", "garbage"])
def test_a_damaged_pool_or_chain_cache_is_rebuilt_with_a_warning(tmp_path, damage, caplog):
    """A cut pool file used to raise a JSON traceback naming no file (mid-line) or silently
    train on fewer questions (at a line end): now it is named, removed and retrieved again."""
    first = _chain_datamodule(tmp_path)
    first.setup("validate")
    pools = [p for p in (tmp_path / "pools").glob("*.jsonl") if ".chains-" not in p.name]
    chains = next((tmp_path / "pools").glob("*.chains-*.jsonl"))
    for path in (*pools, chains):
        data = path.read_bytes()
        cut = {"cut mid-line": data[: len(data) // 2], "garbage": b"\xff\x00{not json\n",
               "cut at a line end": b"".join(data.splitlines(keepends=True)[:-1])}[damage]  # fmt: skip
        path.write_bytes(cut)
    second = _chain_datamodule(tmp_path)
    second.setup("validate")
    for a, b in zip(first.splits["dev"], second.splits["dev"], strict=True):
        assert (a.question_id, a.chains, a.facts) == (b.question_id, b.chains, b.facts)
    assert "is damaged" in caplog.text
