"""One way to open a trained model for prediction, whichever form it has: a checkpoint
`cgr train` wrote (`--checkpoint`) or a model folder `cgr export` wrote (`--model`). Opening
reads and checks everything (settings, stored paths, weight files) before any model loads;
`load` then builds the reader and the query encoder evidence is retrieved with."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cgr.errors import ConfigError
from cgr.pretrained.chain_labels import FILE as CHAIN_LABELS
from cgr.pretrained.chain_labels import beside, read_margin
from cgr.pretrained.folder import ModelFolder, read_model_folder
from cgr.pretrained.loading import check_query_encoder
from cgr.pretrained.paths import PathRule
from cgr.signing import checkpoint_signed_here, signed_here


@dataclass
class OpenedModel:
    path: Path
    data: dict  # the data settings, stored paths checked
    checkpoint: dict | None = None  # a checkpoint's content (weights_only read)
    folder: ModelFolder | None = None
    query_encoder: str = "auto"  # a checkpoint's choice (cgr.pretrained.loading.retrieval_encoder)
    support_reader: str | None = None  # a folder `cgr support-reader` wrote: judges support
    chain_order: str | None = None  # how the scored chains are shown (None: DEFAULT_ORDER)
    chain_margin: float | None = None  # a supporting chain's margin, fitted at training

    def load_support_reader(self, device: str = "cpu"):
        """The support reader that judges the chains' support, or None: the model's reader."""
        if self.support_reader is None:
            return None
        from cgr.pretrained.support_reader import load_support_reader

        return load_support_reader(self.support_reader).to(device)

    @property
    def output_dir(self) -> Path:
        """Where outputs go by default: beside a checkpoint, inside a model folder."""
        return self.path if self.folder else self.path.parent

    @property
    def name(self) -> str:
        return str(self.path)

    def load(self, device: str = "cpu", lightning: bool = True):
        """(reader module, query encoder or None): None retrieves with the configured encoder.
        `lightning=False`: a model folder's reader as a plain MultipleChoiceReader, for scoring
        outside a Trainer (the API, explain and serve do not import Lightning for it); a
        checkpoint always loads as the LightningModule it was saved from."""
        if self.folder is not None:
            return _load_folder(self.folder, device, lightning)
        from cgr.pretrained.loading import load_module, retrieval_encoder

        module = load_module(self.path, self.checkpoint, device)
        return module, retrieval_encoder(module, self.checkpoint, self.query_encoder)


def data_settings(checkpoint: dict) -> dict:
    """The `data` settings `cgr train` stored in a checkpoint (QADataModule's hyper-parameters)."""
    hparams = {
        k: v
        for k, v in (checkpoint.get("datamodule_hyper_parameters") or {}).items()
        if not k.startswith("_")  # LightningCLI's own bookkeeping (_instantiator, _class_path)
    }
    if not hparams or "retrieval" not in hparams:
        raise ConfigError("checkpoint has no data settings (was it written by `cgr train`?)")
    return hparams


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """--checkpoint or --model (one of them), and --data-root: every command over one model."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--checkpoint", help="a checkpoint `cgr train` wrote (best.ckpt)")
    which.add_argument("--model", help="a model folder `cgr export` wrote")
    parser.add_argument("--data-root", action="append", default=[], metavar="FOLDER",
                        help="a folder whose files (corpus, open book, dev file) a model written "
                             "elsewhere may read; repeatable")  # fmt: skip
    parser.add_argument("--rank-encoder", metavar="FOLDER",
                        help="a chain ranker (`cgr ranker`) that ranks the chains in place of the "
                             "model's data.chains.rank_encoder; the facts read stay")  # fmt: skip
    parser.add_argument("--support-reader", metavar="FOLDER",
                        help="a support reader (`cgr support-reader`) that judges each chain's "
                             "support in place of the model's reader; the answers stay")  # fmt: skip
    # cgr.evaluation.support.ORDERS, named here: this layer does not import evaluation (a test
    # holds the two equal)
    parser.add_argument("--chain-order", choices=("supported_first", "support", "search"),
                        help="how each choice's chains are shown: supporting ones first (the "
                             "default), by support, or in the chain search's order (with a chain "
                             "ranker it puts the gold fact first more often)")  # fmt: skip


def model_path(args: argparse.Namespace) -> str:
    """The path --checkpoint or --model names; a --model path that is not a folder is refused
    as a model folder here (not reported as a missing checkpoint)."""
    if args.model is not None and not Path(args.model).is_dir():
        read_model_folder(args.model)  # raises: names the folder and what --model takes
    ranker = getattr(args, "rank_encoder", None)
    if ranker is not None and not Path(ranker).is_dir():
        raise ConfigError(f"--rank-encoder {ranker}: no such folder (one `cgr ranker` wrote)")
    judge = getattr(args, "support_reader", None)
    if judge is not None:
        from cgr.pretrained.support_reader import check_support_reader

        try:
            check_support_reader(judge)
        except ConfigError as e:
            raise ConfigError(f"--support-reader: {e}") from None
    return args.checkpoint or args.model


def with_rank_encoder(opened: OpenedModel, folder: str | None) -> OpenedModel:
    """`opened` with its chains ranked by the chain ranker `folder` (None: as stored)."""
    if folder is not None:
        opened.data = {**opened.data, "chains": {**(opened.data.get("chains") or {}),
                                                 "rank_encoder": folder}}  # fmt: skip
    return opened


def with_command_line(opened: OpenedModel, args: argparse.Namespace) -> OpenedModel:
    """`opened` with what add_model_arguments' options put in place of the stored settings."""
    opened.support_reader = getattr(args, "support_reader", None)
    opened.chain_order = getattr(args, "chain_order", None)
    return with_rank_encoder(opened, getattr(args, "rank_encoder", None))


def open_model(
    path: str | Path,
    query_encoder: str = "auto",
    data_roots: Sequence[str | Path] = (),
    dev_file: bool = False,
    trusted: bool = False,
) -> OpenedModel:
    """A checkpoint file or a model folder, checked. `data_roots`: folders whose files a model
    written elsewhere may name; `dev_file`: the stored dev file is read too (no --data given);
    `trusted`: this process wrote it (`cgr train`'s own evaluation)."""
    from cgr.training.checkpoints import read_checkpoint

    path = Path(path)
    check_query_encoder(query_encoder)
    if path.is_dir():
        if query_encoder != "auto":
            raise ConfigError(
                f"query_encoder {query_encoder!r} chooses among a checkpoint's encoders; the "
                f"model folder {path} holds the one it was exported with"
            )
        folder = read_model_folder(path)
        config = folder.config
        trusted = trusted or signed_here(config["data"], config.get("signature"))
        rule = PathRule(path / "cgr_config.json", path, data_roots, trusted, relative_to=path)
        data = rule.data_settings(config["data"], dev_file)
        check_corpus_files(data, path / "cgr_config.json")
        margin = read_margin(config.get("chain_labels"), str(path / "cgr_config.json"))
        return OpenedModel(path, data, folder=folder, chain_margin=margin)
    checkpoint = read_checkpoint(path)
    trusted = trusted or checkpoint_signed_here(checkpoint)
    rule = PathRule(path, path.parent, data_roots, trusted)
    data = rule.data_settings(data_settings(checkpoint), dev_file)
    for field in ("reader_model", "retriever_model"):
        if isinstance(name := (checkpoint.get("hyper_parameters") or {}).get(field), str):
            rule.check_model_name(f"model.{field}", name)
    check_corpus_files(data, path)
    margin = read_margin(beside(path), str(path.parent / CHAIN_LABELS))
    return OpenedModel(
        path, data, checkpoint=checkpoint, query_encoder=query_encoder, chain_margin=margin
    )


def check_corpus_files(data: dict, source: Path) -> None:
    """The corpus and open book a model reads, checked before any model loads: plain files (or
    folders of tables), within the size rule, and (when small enough to read twice cheaply)
    every line within the fact limit (cgr.data.corpus.check_corpus_files)."""
    from cgr.data.corpus import check_corpus_files as check

    retrieval = data.get("retrieval") or {}
    if retrieval.get("method") in {"none", "gold"}:
        return
    check([*(retrieval.get("corpus") or []), *filter(None, [retrieval.get("open_book")])])


def _load_folder(folder: ModelFolder, device: str, lightning: bool = True):
    """The reader from its transformers folder (a ReaderModule, or with `lightning=False` the
    MultipleChoiceReader it wraps), the query encoder from its sentence-transformers folder;
    float32 on a CPU whatever dtype they were exported in (CPU kernels for float16 are slow or
    missing)."""
    from transformers.utils import logging as hf_logging

    from cgr.retrieval.encoders import load_sentence_encoder

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        args = (str(folder.reader), folder.config["reader"]["max_length"])
        if lightning:
            from cgr.training.module import ReaderModule

            module = ReaderModule(*args)
        else:
            from cgr.reader.model import MultipleChoiceReader

            module = MultipleChoiceReader(*args)
    finally:
        hf_logging.set_verbosity(level)
    module = module.to(device).eval()
    encoder = None
    if folder.query_encoder is not None:
        encoder = load_sentence_encoder(str(folder.query_encoder), device, plain=True).eval()
        encoder.requires_grad_(False)
    if device == "cpu":
        module = module.float()
        encoder = encoder and encoder.float()
    return module, encoder
