"""Callbacks: exact resumption of a killed run, other dropout draws for the same seed, the batch
size ThroughputMonitor counts, and CGR's evidence refresh with its trained query encoder (the
progress line for runs whose output goes to a file: cgr.fitting)."""

from __future__ import annotations

import random

import numpy as np
import pytorch_lightning as pl
import torch


class RNGStateCheckpoint(pl.Callback):
    """Saves the Python, NumPy and torch RNG states in every checkpoint and restores them on
    resume, so a run killed and restarted draws the same random numbers (shuffles, dropout)."""

    def state_dict(self) -> dict:
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        return {  # plain types and tensors only: checkpoints load with weights_only=True
            "python": random.getstate(),
            "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def load_state_dict(self, state: dict) -> None:
        python = state["python"]
        random.setstate((python[0], tuple(python[1]), python[2]))
        kind, keys, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
        torch.set_rng_state(state["torch"])
        if state.get("cuda") and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])


class DropoutSeed(pl.Callback):
    """Re-seeds the random draws made while training (dropout, and anything else drawn from the
    global RNGs) as a fresh run starts, leaving what the run's seed already fixed: the weights
    it initialised and the training order (QADataModule reads its seed at setup). Two runs of
    one config that differ only in `seed` therefore differ only in those draws: how far dropout
    noise alone moves a result. A resumed run keeps its checkpoint's RNG states
    (RNGStateCheckpoint), so it goes on with the draws it had."""

    def __init__(self, seed: int):
        self.seed = seed

    def on_train_start(self, trainer, pl_module) -> None:
        if trainer.global_step > 0:  # resumed: the restored states continue the draws
            return
        random.seed(self.seed)
        np.random.seed(self.seed % 2**32)
        torch.manual_seed(self.seed)  # CUDA generators too


def questions_in_batch(batch) -> int:
    """ThroughputMonitor's batch size: the questions in a batch (its samples per second are
    training questions per second, the speed the benchmarks compare)."""
    return len(batch)


def training_evidence_refreshed(epoch: int, every_n_epochs: int) -> bool:
    """Whether, during training epoch `epoch` (0-based), the reader reads training evidence that
    the trained query encoder re-retrieved (a refresh ran after epoch `every_n_epochs`). Used
    for checkpoints written before the evidence snapshot was saved with them."""
    return every_n_epochs > 0 and epoch >= every_n_epochs


class EvidenceRefresh(pl.Callback):
    """CGR's evidence refresh, as the authors schedule it: after every `every_n_epochs`-th
    training epoch but the last, train and dev pools and chains are re-retrieved with the
    current query encoder, whose weights the module keeps as its evidence snapshot. So the
    reader's next epoch trains on that evidence, validation reads dev evidence from the same
    snapshot, and `cgr eval` (`--query-encoder auto`) retrieves with the snapshot saved in the
    checkpoint: the reader is always scored on evidence from the encoder it trained with.

    `dev_on_validation` (a package switch, off by default): dev is instead re-retrieved with the
    current encoder before each validation after the first refresh (a newer snapshot than the
    reader's training evidence; `cgr eval --query-encoder trained` then matches val/acc).
    A resumed run re-retrieves with the checkpoint's snapshot before it trains on."""

    def __init__(self, every_n_epochs: int = 1, dev_on_validation: bool = False):
        self.every_n_epochs, self.dev_on_validation = every_n_epochs, dev_on_validation

    @staticmethod
    def _datamodule(trainer):
        datamodule = getattr(trainer, "datamodule", None)
        return datamodule if hasattr(datamodule, "refresh_evidence") else None

    def on_train_start(self, trainer, pl_module) -> None:
        datamodule = self._datamodule(trainer)
        snapshot = pl_module.refresh_snapshot_encoder()
        if datamodule is None or snapshot is None:
            return  # a fresh run: the setup's pools come from the base encoder, as they should
        fingerprint = datamodule.pipeline.fingerprint_of(snapshot)
        stale = [s for s in ("train", "dev") if datamodule.evidence_from.get(s) != fingerprint]
        if self.dev_on_validation:
            stale = [s for s in stale if s != "dev"]
        if stale:  # resumed after a refresh: the reader goes on with the snapshot's evidence
            datamodule.refresh_evidence(snapshot, trainer, splits=stale)

    def on_validation_start(self, trainer, pl_module) -> None:
        datamodule = self._datamodule(trainer)
        if (
            self.dev_on_validation
            and datamodule is not None
            and not trainer.sanity_checking
            and pl_module.global_step > 0  # the encoder has changed since setup
            and pl_module.has_evidence_snapshot
        ):
            datamodule.refresh_evidence(pl_module.query_encoder, trainer, splits=["dev"])

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        # Lightning validates before this hook, so the epoch's validation has read the dev
        # evidence of the snapshot the epoch trained on; the next epoch gets a new one
        n, epoch = self.every_n_epochs, pl_module.current_epoch + 1
        datamodule = self._datamodule(trainer)
        if n and datamodule is not None and epoch % n == 0 and epoch < trainer.max_epochs:
            splits = ["train"] if self.dev_on_validation else ["train", "dev"]
            pl_module.take_evidence_snapshot()
            datamodule.refresh_evidence(pl_module.query_encoder, trainer, splits=splits)
