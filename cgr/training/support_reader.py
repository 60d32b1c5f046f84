"""`cgr support-reader`: fits a support reader (cgr.reader.support_reader) with Lightning on a
config's training questions and saves it as a multiple-choice model folder."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict
from pathlib import Path

import pytorch_lightning as pl
import torch

from cgr.errors import ConfigError
from cgr.fitting import fit_one
from cgr.reader.support_reader import (
    SUPPORT_FILE,
    Row,
    SupportReaderConfig,
    held_out,
    support_rows,
)

log = logging.getLogger(__name__)


class SupportReaderModule(pl.LightningModule):
    """A MultipleChoiceReader and the soft-target cross-entropy over its choices."""

    def __init__(self, model: str, cfg: SupportReaderConfig):
        super().__init__()
        from cgr.reader.model import MultipleChoiceReader

        self.cfg = cfg
        self.reader = MultipleChoiceReader(model, cfg.max_length)

    def training_step(self, batch: list[Row], batch_idx: int) -> torch.Tensor:
        examples = [ex for ex, _ in batch]
        logits = self.reader(self.reader.encode(examples, self.device))
        target = torch.zeros_like(logits)
        for i, (_, t) in enumerate(batch):
            target[i, : len(t)] = torch.tensor(t, dtype=target.dtype)
        log_p = logits.float().log_softmax(-1).clamp_min(-1e4)  # masked choices: target 0
        loss = -(target * log_p).sum(-1).mean()
        self.log("support_loss", loss, prog_bar=True, batch_size=len(batch))
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.reader.parameters(), lr=self.cfg.lr)


def train_support_reader(rows: list[Row], model: str, out: Path, cfg: SupportReaderConfig,
                         extra: dict | None = None, **trainer) -> dict:  # fmt: skip
    """Fits the support reader on `rows` and saves it to `out` (a multiple-choice model folder
    with SUPPORT_FILE); `trainer`: pl.Trainer arguments."""
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    module = SupportReaderModule(model, cfg)
    loader = torch.utils.data.DataLoader(
        rows, batch_size=cfg.batch_size, shuffle=True, collate_fn=list
    )
    fit, loss = fit_one(module, loader, cfg.epochs, "support_loss", **trainer)
    info = {"base_model": model, "rows": len(rows), **asdict(cfg), "last_loss": loss,
            **(extra or {})}  # fmt: skip
    if fit.is_global_zero:
        out.mkdir(parents=True, exist_ok=True)
        module.reader.model.save_pretrained(str(out), safe_serialization=True)
        module.reader.tokenizer.save_pretrained(str(out))
        (out / SUPPORT_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


def main(argv: list[str], resolve) -> int:
    """`cgr support-reader --config CFG --out DIR`: trains a support reader on the config's
    train file."""
    from cgr.chains.ranker import book_texts, training_questions
    from cgr.retrieval.encoders import TextEncoder

    parser = argparse.ArgumentParser(prog="cgr support-reader",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--config", required=True, help="a training config (its train file)")
    parser.add_argument("--out", required=True, type=Path, help="the support reader's folder")
    parser.add_argument("--model", help="the reader to fine-tune (default: the config's)")
    defaults = SupportReaderConfig()
    from cgr.config_help import field_comments

    helps = {"epochs": "passes over the training rows", "batch_size": "rows per step",
             "lr": "AdamW learning rate", "seed": "the run's seed",
             **field_comments(SupportReaderConfig)}  # fmt: skip
    names = ("epochs", "batch_size", "lr", "seed", "negatives", "hold_out", "max_gold")
    for name, text in ((n, helps[n]) for n in names):
        kind = float if name == "lr" else int
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=kind,
            default=getattr(defaults, name),
            help=f"{text} (default: %(default)s)",
        )
    parser.add_argument("--accelerator", default="auto", help="pl.Trainer's (cpu, gpu, auto)")
    parser.add_argument("--train-file", action="append", metavar="FILE",
                        help="train on this question file instead of the config's train files "
                             "(repeatable; the config's gold_facts_files still apply)")  # fmt: skip
    args = parser.parse_args(argv)
    cfg = SupportReaderConfig(args.epochs, args.batch_size, args.lr, seed=args.seed,
                              negatives=args.negatives, hold_out=args.hold_out,
                              max_gold=args.max_gold)  # fmt: skip
    if args.out.exists() and any(args.out.iterdir()) and not (args.out / SUPPORT_FILE).exists():
        raise ConfigError(f"{args.out}: a folder that is not a support reader's; give a new one")
    config = resolve(args.config)
    if args.train_file:
        config["data"] = {**config["data"], "train_file": list(args.train_file)}
    questions = training_questions(config)  # refuses a file without gold facts, before models
    kept_out = held_out(questions, cfg.hold_out, cfg.seed)
    train = [q for q in questions if q.id not in kept_out]
    encoder = config["data"]["retrieval"]["encoder"]
    rows = support_rows(train, book_texts(config), TextEncoder(encoder).encode, cfg.negatives,
                        cfg.seed, cfg.max_gold)  # fmt: skip
    model = args.model or config["model"]["init_args"]["reader_model"]
    info = train_support_reader(rows, model, args.out, cfg, {"held_out": sorted(kept_out)},
                                accelerator=args.accelerator, devices=1)  # fmt: skip
    log.info("support reader trained on %d rows, last loss %.3f: %s", len(rows),
             info["last_loss"], args.out)  # fmt: skip
    print(args.out)
    return 0
