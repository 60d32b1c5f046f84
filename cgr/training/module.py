"""LightningModule for the reader: cross-entropy over answer choices, accuracy on dev."""

from __future__ import annotations

import random

import pytorch_lightning as pl
import torch
from torch.nn import functional as F
from torchmetrics import MeanMetric
from transformers import get_linear_schedule_with_warmup

from cgr.errors import ConfigError
from cgr.reader.examples import SCORED_CHAINS, ReaderExample, reading_only
from cgr.reader.model import MultipleChoiceReader
from cgr.validation import at_least, positive

SAVED_METRICS = "cgr_metrics"  # checkpoint key: the dev metrics at the time it was saved


def fused_adamw_fits(precision: str, strategy: object, devices: set[str]) -> bool:
    """Fused AdamW where the gradients reach the step unscaled (32-bit and bf16 have no loss
    scaler; fp16's scaler needs the unfused step), every rank holds whole parameters (one
    device or DDP; sharded strategies clip through their own hooks) and the kernel exists."""
    from pytorch_lightning.strategies import DDPStrategy, SingleDeviceStrategy

    plain = isinstance(strategy, (SingleDeviceStrategy, DDPStrategy))
    return plain and devices <= {"cpu", "cuda"} and precision in {"32-true", "32", "bf16-mixed"}


class ReaderModule(pl.LightningModule):
    """Args: reader_model (packaged short name, path or hub name), max_length, and AdamW settings
    (the paper: lr 9e-6 / 1e-5, weight decay 0.1, warm-up 6 %; the authors' code: eps 1e-6,
    torch's default 1e-8 here, see configs/model/cgr_minilm_authors.yaml).
    chain_reading: the weight of a second cross-entropy term (0: off, the paper's reader reads
    only its evidence) in which, per question, one chain drawn from every choice's first
    SCORED_CHAINS chains is offered alone to every choice, as a chain's support reads it:
    the reader learns to judge one chain's facts, which it is asked to do at prediction."""

    flops_per_batch = None  # ThroughputMonitor: no FLOP count (questions/s is what we compare)

    def __init__(
        self,
        reader_model: str = "minilm",
        max_length: int = 256,
        lr: float = 2e-5,
        weight_decay: float = 0.1,
        warmup_ratio: float = 0.06,
        adam_eps: float = 1e-8,
        chain_reading: float = 0.0,
    ):
        super().__init__()
        at_least("model.max_length", max_length, 32)  # question, choice and one fact must fit
        positive("model.lr", lr)
        at_least("model.weight_decay", weight_decay, 0)
        if not 0 <= warmup_ratio < 1:
            raise ConfigError(f"model.warmup_ratio must be in [0, 1), not {warmup_ratio!r}")
        positive("model.adam_eps", adam_eps)
        at_least("model.chain_reading", chain_reading, 0)
        self.save_hyperparameters()
        self.reader = MultipleChoiceReader(reader_model, max_length)
        # torchmetrics: the epoch value is the exact share of questions right, synced under DDP
        self.train_accuracy, self.val_accuracy = MeanMetric(), MeanMetric()

    def setup(self, stage: str) -> None:
        """The DataModule's loaders pack and tokenise the reader's inputs (in their workers)."""
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer else None
        if hasattr(datamodule, "collate_with"):
            datamodule.collate_with(self.reader.collate())

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # a list of ReaderExample; tensors are made on the right device in encode()

    def forward(self, batch: list[ReaderExample]) -> torch.Tensor:
        return self.reader(self.reader.encode(batch, self.device))

    def _labelled_step(self, batch: list[ReaderExample], stage: str) -> torch.Tensor:
        logits = self(batch)
        labels = torch.tensor([ex.answer_index for ex in batch], device=self.device)
        loss = F.cross_entropy(logits.float(), labels)
        on_step = stage == "train"
        self.log(f"{stage}/loss", loss, batch_size=len(batch), prog_bar=True, on_step=on_step,
                 on_epoch=True, sync_dist=not on_step)  # fmt: skip
        accuracy = self.train_accuracy if stage == "train" else self.val_accuracy
        accuracy((logits.argmax(-1) == labels).float())  # forward: updates, keeps the batch value
        self.log(f"{stage}/acc", accuracy, batch_size=len(batch), prog_bar=True, on_step=on_step,
                 on_epoch=True)  # fmt: skip
        return loss

    def training_step(self, batch, batch_idx):
        loss = self._labelled_step(batch, "train")
        if (reading := self.chain_reading_loss(batch)) is None:
            return loss
        self.log("train/loss_chain_reading", reading, batch_size=len(batch), on_step=True,
                 on_epoch=True)  # fmt: skip
        return loss + reading

    def chain_reading_loss(self, batch: list[ReaderExample]) -> torch.Tensor | None:
        """The chain reading term (see the class docstring), weighted; None when
        off or when no question of the batch has a chain. The draw is seeded by epoch and
        question, so a resumed or repeated run reads the same chains."""
        if not self.hparams.chain_reading:
            return None
        virtual, labels = [], []
        for ex in batch:
            picks = [chain for chains in ex.chains or [] for chain in chains[:SCORED_CHAINS]]
            if picks and ex.answer_index is not None:
                chain = random.Random(f"{self.current_epoch}:{ex.question_id}").choice(picks)
                if read := reading_only(ex, chain):
                    virtual.append(read)
                    labels.append(ex.answer_index)
        if not virtual:
            return None
        logits = self(virtual)
        labels = torch.tensor(labels, device=self.device)
        return self.hparams.chain_reading * F.cross_entropy(logits.float(), labels)

    def validation_step(self, batch, batch_idx):
        self._labelled_step(batch, "val")

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Signs the stored settings (this user's checkpoints name their files as they chose:
        cgr.pretrained.paths) and keeps the dev accuracy it was saved at (the model card's)."""
        from cgr.signing import SIGNATURE, checkpoint_settings, sign

        checkpoint[SIGNATURE] = sign(checkpoint_settings(checkpoint))
        metrics = self._trainer.callback_metrics if self._trainer else {}
        checkpoint[SAVED_METRICS] = {k: float(v) for k, v in metrics.items()
                                     if k in ("val/acc", "val/loss")}  # fmt: skip

    def predict_step(self, batch, batch_idx):
        """(example, scores) per question, the facts the reader read kept (reader.score)."""
        return self.reader.score(batch)

    def _fused_optimizer(self) -> bool:
        if self._trainer is None:
            return False
        devices = {p.device.type for p in self.parameters()}
        return fused_adamw_fits(str(self.trainer.precision), self.trainer.strategy, devices)

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        """Lightning's clipping refuses any fused optimizer under mixed precision (a guard for
        fp16's loss scaler, which bf16 does not use), so a fused step is clipped here, exactly
        as Lightning would: over the optimizer's parameters, after DDP's gradient reduction."""
        if not getattr(optimizer, "_step_supports_amp_scaling", False):
            super().configure_gradient_clipping(
                optimizer, gradient_clip_val, gradient_clip_algorithm
            )
            return
        if not gradient_clip_val:
            return
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if gradient_clip_algorithm == "value":
            torch.nn.utils.clip_grad_value_(params, float(gradient_clip_val))
        else:
            torch.nn.utils.clip_grad_norm_(params, float(gradient_clip_val))

    def parameter_groups(self) -> list[dict]:
        """AdamW groups: the reader's weights with and without decay (subclasses add theirs)."""
        return self._decay_groups(self.reader, self.hparams.lr)

    def _decay_groups(self, module: torch.nn.Module, lr: float) -> list[dict]:
        no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        return [
            {"params": [p for n, p in named if not any(k in n for k in no_decay)],
             "weight_decay": self.hparams.weight_decay, "lr": lr},
            {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0, "lr": lr},
        ]  # fmt: skip

    def configure_optimizers(self):
        # fused: one kernel over all parameters instead of a dozen passes (on two CPU cores
        # AdamW over MiniLM took 78 ms a step, fused 17 ms; with CGR's query encoder 171 ms
        # against 32 ms)
        optimizer = torch.optim.AdamW(
            self.parameter_groups(),
            lr=self.hparams.lr,
            eps=self.hparams.adam_eps,
            fused=self._fused_optimizer(),
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = get_linear_schedule_with_warmup(
            optimizer, int(self.hparams.warmup_ratio * total), total
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }
