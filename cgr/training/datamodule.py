"""LightningDataModule: question files -> reader examples with their evidence facts."""

from __future__ import annotations

import logging
from itertools import zip_longest
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from cgr.chains.builder import ChainConfig
from cgr.data.gold import attach_gold_facts
from cgr.data.loaders import load_multiple_choice
from cgr.data.root import use_data_root
from cgr.evidence.pipeline import EvidencePipeline
from cgr.evidence.pools import (
    cached_examples,
    chain_cache_path,
    load_chains,
    pool_cache_key,
    save_chains,
    save_examples,
)
from cgr.evidence.selection import EvidenceConfig
from cgr.reader.examples import ReaderExample
from cgr.retrieval.factory import RetrievalConfig
from cgr.training.sampling import ResumableLoader, ResumableSampler
from cgr.training.settings import check_data_numbers
from cgr.validation import at_least

log = logging.getLogger(__name__)


# the data module's numbers and their least values (max_evidence and retrieval_batch_size are
# the evidence pipeline's, checked there too: the Python API builds one without a data module)
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
        evidence: how each choice's facts are ordered and de-duplicated (see EvidenceConfig).
        max_evidence: facts per choice offered to the reader (15 for OBQA, 20 for ARC in the
            paper); the reader reads them whole, best first, while they fit in its max_length.
        gold_facts_files: WorldTree explanations (tsv) whose facts become the gold facts of the
            questions with their ids (ARC; OBQA's fact1 is read from the question file).
        max_train_questions: use N training questions (benchmark budgets): the first N of one
            file; with several train files, one from each file in turn.
    """

    def __init__(
        self,
        train_file: str | list[str] = "data/sample/train.jsonl",
        dev_file: str = "data/sample/dev.jsonl",
        predict_file: str | None = None,
        retrieval: RetrievalConfig | None = None,
        chains: ChainConfig | None = None,
        evidence: EvidenceConfig | None = None,
        max_evidence: int = 15,
        batch_size: int = 8,
        eval_batch_size: int = 16,
        num_workers: int = 0,
        max_train_questions: int | None = None,
        gold_facts_files: list[str] | None = None,
        pool_cache_dir: str = ".cache/cgr/pools",
        retrieval_batch_size: int = 64,
        shuffle: bool = True,
        data_root: str | None = None,
        global_batch_size: int | None = None,
    ):
        """`data_root`: where relative data paths are looked for first (default: CGR_DATA, else
        data/ of the working folder; cgr.data.root). `global_batch_size`: questions per
        optimizer step over every device (a paper's batch); set, it decides `batch_size` per
        device (cgr.training.startup.apply_global_batch)."""
        super().__init__()
        if data_root is not None:
            use_data_root(data_root)
        check_data_numbers(batch_size=batch_size, eval_batch_size=eval_batch_size,
                           num_workers=num_workers)  # fmt: skip
        if max_train_questions is not None:
            at_least("data.max_train_questions", max_train_questions, 0)
        if global_batch_size is not None:
            at_least("data.global_batch_size", global_batch_size, 1)
        self.pipeline = EvidencePipeline(
            retrieval, chains, evidence, max_evidence, retrieval_batch_size
        )
        self.save_hyperparameters(ignore=["retrieval", "chains", "evidence"])
        self.hparams.update(self.pipeline.settings())
        self._questions: dict[str, list] = {}
        self._pool_files: dict[str, Path] = {}
        self.splits: dict[str, list[ReaderExample]] = {}
        # split -> the fingerprint of the query encoder its evidence was retrieved with ("base"
        # or a snapshot's; EvidencePipeline.fingerprint_of): what the reader reads, checkable
        self.evidence_from: dict[str, str] = {}
        self._collate = _as_list
        # the training loader and where a resumed run's epoch stands (see load_state_dict)
        self._train_loader: ResumableLoader | None = None
        self._train_position: dict | None = None
        # the training order's seed, read at the first setup (after seed_everything, before a
        # resume restores RNG states or cgr.training.callbacks.DropoutSeed re-seeds): the order
        # depends on the run's seed alone
        self._order_seed: int | None = None

    @property
    def order_seed(self) -> int:
        """The seed of the training order: the one read at the first setup, else the current."""
        return self._order_seed if self._order_seed is not None else torch.initial_seed() % 2**31

    def collate_with(self, collate) -> None:
        """What batches are made with (the reader module's `ReaderCollate`: its workers pack and
        tokenise); by default a plain list of examples."""
        self._collate = collate

    @property
    def retrieval(self) -> RetrievalConfig:
        return self.pipeline.retrieval

    @property
    def chains(self) -> ChainConfig:
        return self.pipeline.chains

    def _examples(self, split: str, paths: str | list[str]) -> list[ReaderExample]:
        """Pools, then chains (searched once per pool and chain settings, then read from a file
        next to the pool cache: the chain search over all OBQA train pools takes most of an
        hour on two cores), then the facts each choice offers."""
        examples = self.load_pools(split, paths)
        if not self.chains.enabled:
            return self._on_shares(examples, self.select)
        cache = chain_cache_path(self._pool_files[split], self.chains, self.pipeline.evidence.order)
        if cache.exists() and load_chains(cache, examples):
            log.info("chains for %s from cache %s", split, cache)
            return self.pipeline.select(examples, search_chains=False)
        examples = self._on_shares(examples, self.select)
        save_chains(cache, examples)  # atomic rename, as the pools
        return examples

    def load_pools(self, split: str, paths: str | list[str]) -> list[ReaderExample]:
        """records -> hypotheses -> evidence pools (cached on disk) for the questions of
        `paths`, before chains and selection; `split` "train" applies the question budget."""
        paths = [paths] if isinstance(paths, str) else list(paths)
        per_file = [load_multiple_choice(path) for path in paths]
        budget = (self.hparams.max_train_questions if split == "train" else None) or None
        # a budget draws from every train file in turn, not only from the first one
        # (ARC-Challenge trains on OBQA + ARC-Easy + ARC-Challenge)
        in_turns = budget is not None and len(per_file) > 1
        order = zip_longest(*per_file) if in_turns else per_file
        questions = [q for group in order for q in group if q is not None][:budget]
        gold_files = list(self.hparams.gold_facts_files or [])
        if gold_files:
            hit = attach_gold_facts(questions, gold_files)
            log.info("gold facts for %d of %d %s questions", hit, len(questions), split)
        self._questions[split] = questions
        # keyed by content, not split name: eval of the dev file reuses the pools of validation
        fingerprint = self.pipeline.query_fingerprint()
        self.evidence_from[split] = fingerprint
        extra = f"{len(questions)}:{fingerprint}" + (":turns" if in_turns else "")
        key = pool_cache_key(paths + gold_files, self.retrieval, extra)
        cache = Path(self.hparams.pool_cache_dir) / f"{Path(paths[0]).stem}-{key}.jsonl"
        self._pool_files[split] = cache
        if cache.exists() and (cached := cached_examples(cache, questions)) is not None:
            log.info("evidence pools for %s from cache %s", ", ".join(paths), cache)
            return cached
        examples = self._on_shares(
            questions, lambda qs: self.pipeline.pools(qs, f"retrieving evidence ({split})")
        )
        save_examples(cache, examples)  # atomic rename: ranks writing the same file is safe
        return examples

    def select(self, examples: list[ReaderExample]) -> list[ReaderExample]:
        """pool -> Ê or the pool -> the facts each choice offers (EvidencePipeline.select)."""
        return self.pipeline.select(examples)

    def _on_shares(self, items: list, work, trainer=None) -> list:
        """`work` on this DDP rank's share of `items` (every world-size-th one), then the shares
        exchanged, so every rank ends with the same complete list while doing 1/world of the work
        (retrieval and chain search; a chain search cut by its time budget could also differ
        between ranks if each searched everything). One process: `work(items)`."""
        trainer = trainer if trainer is not None else self.trainer
        world = trainer.world_size if trainer is not None else 1
        if world == 1:
            return work(items)
        mine = work(items[trainer.global_rank :: world])
        shares: list = [None] * world
        torch.distributed.all_gather_object(shares, mine)
        merged: list = [None] * len(items)
        for r, share in enumerate(shares):
            merged[r::world] = share
        return merged

    def use_query_encoder(self, model) -> None:
        """Retrieve with a trained query encoder (a CGR checkpoint) instead of the configured one."""
        self.pipeline.use_query_encoder(model)

    def refresh_evidence(self, query_model, trainer=None, splits: list[str] | None = None) -> None:
        """Re-retrieve pools and chains with the current query encoder (CGR, every n epochs).

        Each DDP rank works on its share of the questions (see `_on_shares`). The lists are
        updated in place, so the dataloaders see the new evidence in the next epoch."""
        if self.retrieval.method not in {"dense", "beam"}:
            return
        was_training = query_model.training
        query_model.eval()
        self.use_query_encoder(query_model)
        try:
            with torch.no_grad():
                for split, examples in self.splits.items():
                    if splits is not None and split not in splits:
                        continue
                    questions = self._questions.get(split, [])
                    self.evidence_from[split] = self.pipeline.query_fingerprint()
                    examples[:] = self._on_shares(
                        questions,
                        lambda qs, s=split: self.pipeline(
                            qs, f"retrieving evidence ({s}, refresh)"
                        ),
                        trainer,
                    )
        finally:
            query_model.train(was_training)

    def setup(self, stage: str | None = None) -> None:
        trainer = self.trainer
        if trainer is not None:  # each DDP rank retrieves its share on its own device
            self.pipeline.set_device(trainer.strategy.root_device)
            self.pipeline.share_cores(trainer.num_devices)
        self._order_seed = self.order_seed
        wanted = {"fit": ["train", "dev"], "validate": ["dev"], "predict": ["predict"]}.get(
            stage or "fit", ["train", "dev"]
        )
        files = {"train": self.hparams.train_file, "dev": self.hparams.dev_file,
                 "predict": self.hparams.predict_file or self.hparams.dev_file}  # fmt: skip
        for split in wanted:
            if split not in self.splits:
                self.splits[split] = self._examples(split, files[split])

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader:
        # the attached trainer decides, not an initialised process group: `cgr train` evaluates
        # on rank zero with a one-device Trainer after a DDP fit, and must score every question
        trainer = self.trainer  # None until a Trainer attaches the DataModule
        # a loader's own generator: a new iterator (each epoch, each validation) then draws
        # its workers' seed from it, not from the global RNG the model's dropout draws from, so
        # a run resumed mid-epoch (a fresh iterator) draws what the unbroken run drew
        common = {"batch_size": batch_size, "num_workers": self.hparams.num_workers,
                  "collate_fn": self._collate,
                  "generator": torch.Generator().manual_seed(self.order_seed)}  # fmt: skip
        if trainer is None or (trainer.world_size == 1 and split != "train"):
            return DataLoader(self.splits[split], shuffle=shuffle, **common)
        # our own DistributedSampler subclass: Lightning keeps it under DDP (so `shuffle: false`
        # stays unshuffled), and a resumed run continues its training epoch where it stopped
        sampler = ResumableSampler(self.splits[split], trainer.world_size, trainer.global_rank,
                                   shuffle, seed=self.order_seed)  # fmt: skip
        if split == "train":
            loader = ResumableLoader(self.splits[split], sampler=sampler, trainer=trainer, **common)
            if self._train_position:
                loader.load_state_dict(self._train_position)
            self._train_loader = loader
            return loader
        return DataLoader(self.splits[split], sampler=sampler, **common)

    # Where the training epoch stood, saved under the data module's key in the checkpoint too:
    # Lightning restores that before it builds the train loader, but drops the loader's own
    # state when configure_optimizers read `estimated_stepping_batches` first, as cgr's modules
    # do (Lightning-AI/pytorch-lightning#20550): a resumed run then trained its epoch's first
    # batches again instead of those it had left.
    def state_dict(self) -> dict:
        return {"train_position": self._train_loader.state_dict()} if self._train_loader else {}

    def load_state_dict(self, state: dict) -> None:
        self._train_position = state.get("train_position")
        if self._train_loader is not None and self._train_position:  # a loader built already
            self._train_loader.load_state_dict(self._train_position)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.hparams.batch_size, self.hparams.shuffle)

    def val_dataloader(self) -> DataLoader:
        return self._loader("dev", self.hparams.eval_batch_size, False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader("predict", self.hparams.eval_batch_size, False)
