"""QADataModule: DDP ranks split retrieval and chain search and end with the same examples."""

from __future__ import annotations

import json
from types import SimpleNamespace

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
