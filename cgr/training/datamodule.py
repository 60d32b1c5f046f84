"""LightningDataModule: question files -> reader examples with their evidence facts."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from cgr.chains.builder import ChainBuilder, ChainConfig
from cgr.data.hypothesis import HypothesisGenerator
from cgr.data.loaders import load_multiple_choice
from cgr.reader.examples import ReaderExample
from cgr.retrieval.factory import RetrievalConfig, build_retriever
from cgr.training.pools import build_examples, load_examples, pool_cache_key, save_examples

log = logging.getLogger(__name__)


def _as_list(batch: list[ReaderExample]) -> list[ReaderExample]:
    return batch


class QADataModule(pl.LightningDataModule):
    """Multiple-choice QA (OpenBookQA, ARC, data/sample) with retrieved evidence per choice.

    Args:
        train_file / dev_file: official-format jsonl; `predict_file` is what `cgr eval` scores.
        retrieval: how the evidence pool is found (see RetrievalConfig).
        chains: reasoning chains over the pool (see ChainConfig); the reader reads Ê, the chain
            facts (padded with the best pool facts by default); `chains.enabled: false` switches
            back to the plain pool.
        max_evidence: facts per choice that the reader reads (15 for OBQA, 20 for ARC in the paper).
        max_train_questions: use the first N training questions (benchmark budgets).
    """

    def __init__(
        self,
        train_file: str | list[str] = "data/sample/train.jsonl",
        dev_file: str = "data/sample/dev.jsonl",
        predict_file: str | None = None,
        retrieval: RetrievalConfig | None = None,
        chains: ChainConfig | None = None,
        max_evidence: int = 15,
        batch_size: int = 8,
        eval_batch_size: int = 16,
        num_workers: int = 0,
        max_train_questions: int | None = None,
        pool_cache_dir: str = ".cache/cgr/pools",
        retrieval_batch_size: int = 64,
    ):
        super().__init__()
        self.retrieval = retrieval or RetrievalConfig()
        self.chains = chains or ChainConfig()
        self.save_hyperparameters(ignore=["retrieval", "chains"])
        self.hparams["retrieval"] = asdict(self.retrieval)
        self.hparams["chains"] = asdict(self.chains)
        self._retriever = None
        self.chain_builder: ChainBuilder | None = None
        self._hypotheses = None
        self.splits: dict[str, list[ReaderExample]] = {}

    def _examples(self, split: str, paths: str | list[str]) -> list[ReaderExample]:
        paths = [paths] if isinstance(paths, str) else list(paths)
        questions = [q for path in paths for q in load_multiple_choice(path)]
        if split == "train" and self.hparams.max_train_questions:
            questions = questions[: self.hparams.max_train_questions]
        key = pool_cache_key(paths, self.retrieval, f"{split}:{len(questions)}")
        cache = Path(self.hparams.pool_cache_dir) / f"{Path(paths[0]).stem}-{key}.jsonl"
        if cache.exists():
            log.info("evidence pools for %s from cache %s", ", ".join(paths), cache)
            examples = load_examples(cache)
        else:
            if self._hypotheses is None:
                self._hypotheses = HypothesisGenerator()
            if self._retriever is None and self.retrieval.method != "none":
                self._retriever = build_retriever(self.retrieval)
            examples = build_examples(
                questions, self._retriever, self._hypotheses,
                self.hparams.retrieval_batch_size, desc=f"retrieving evidence ({split})",
            )  # fmt: skip
            save_examples(cache, examples)
        k = self.hparams.max_evidence
        if self.chains.enabled:
            if self.chain_builder is None:
                self.chain_builder = ChainBuilder(self.chains)
            self.chain_builder.attach(examples, k)
        else:
            for ex in examples:
                ex.facts = [pool[:k] for pool in ex.facts]
        return examples

    def setup(self, stage: str | None = None) -> None:
        wanted = {"fit": ["train", "dev"], "validate": ["dev"], "predict": ["predict"]}.get(
            stage or "fit", ["train", "dev"]
        )
        files = {"train": self.hparams.train_file, "dev": self.hparams.dev_file,
                 "predict": self.hparams.predict_file or self.hparams.dev_file}  # fmt: skip
        for split in wanted:
            if split not in self.splits:
                self.splits[split] = self._examples(split, files[split])

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader:
        return DataLoader(
            self.splits[split],
            batch_size=batch_size,
            shuffle=shuffle,
            num_workers=self.hparams.num_workers,
            collate_fn=_as_list,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.hparams.batch_size, True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("dev", self.hparams.eval_batch_size, False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader("predict", self.hparams.eval_batch_size, False)
