"""Callbacks: exact resumption of a killed run, the batch size ThroughputMonitor counts, and
CGR's evidence refresh with its trained query encoder."""

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


def questions_in_batch(batch) -> int:
    """ThroughputMonitor's batch size: the questions in a batch (its samples per second are
    training questions per second, the speed the benchmarks compare)."""
    return len(batch)


def training_evidence_refreshed(epoch: int, every_n_epochs: int) -> bool:
    """Whether, during training epoch `epoch` (0-based), the reader reads training evidence that
    the trained query encoder re-retrieved (a refresh ran after epoch `every_n_epochs`). Until
    then the reader has only seen the base encoder's evidence, so validation and `cgr eval
    --query-encoder auto` retrieve with the base encoder too (on one-epoch OBQA runs the
    trained encoder's evidence cost the reader 0.4 to 2.4 points, three seeds)."""
    return every_n_epochs > 0 and epoch >= every_n_epochs


class EvidenceRefresh(pl.Callback):
    """CGR re-retrieves evidence with its trained query encoder (`pl_module.query_encoder`):
    every `every_n_epochs` training epochs (train, and dev unless `dev_on_validation`; not after
    the last epoch), and, with `dev_on_validation`, the dev pools before each validation once
    the training evidence has been refreshed, so the checkpoint kept as best is chosen on the evidence `cgr eval` gives
    it by default (`--query-encoder auto`)."""

    def __init__(self, every_n_epochs: int = 1, dev_on_validation: bool = True):
        self.every_n_epochs, self.dev_on_validation = every_n_epochs, dev_on_validation

    @staticmethod
    def _datamodule(trainer):
        datamodule = getattr(trainer, "datamodule", None)
        return datamodule if hasattr(datamodule, "refresh_evidence") else None

    def on_validation_start(self, trainer, pl_module) -> None:
        datamodule = self._datamodule(trainer)
        if (
            self.dev_on_validation
            and datamodule is not None
            and not trainer.sanity_checking
            and pl_module.global_step > 0  # the encoder has changed since setup
            and training_evidence_refreshed(pl_module.current_epoch, self.every_n_epochs)
        ):
            datamodule.refresh_evidence(pl_module.query_encoder, trainer, splits=["dev"])

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        n, epoch = self.every_n_epochs, pl_module.current_epoch + 1
        datamodule = self._datamodule(trainer)
        if n and datamodule is not None and epoch % n == 0 and epoch < trainer.max_epochs:
            # with dev_on_validation the next validation retrieves dev again (with the encoder
            # trained further by then), so dev pools refreshed here would never be read
            splits = ["train"] if self.dev_on_validation else None
            datamodule.refresh_evidence(pl_module.query_encoder, trainer, splits=splits)
