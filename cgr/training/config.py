"""The `cgr train` command line (LightningCLI over a reader module + QADataModule) and the
run names it fills in, so the shipped configs can compose shared groups (configs/callbacks,
configs/logger, configs/chains, ...) instead of copying them with a per-config folder name."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import yaml
from pytorch_lightning.cli import LightningCLI

from cgr.errors import ConfigError, DataFormatError
from cgr.files import require_writable_dir
from cgr.training.datamodule import DATA_MINIMUMS, QADataModule, check_data_numbers
from cgr.training.module import ReaderModule
from cgr.validation import parsed

CHECKPOINT = "pytorch_lightning.callbacks.ModelCheckpoint"
# logger class -> (the init arg naming the run, its value when the config leaves it unset)
RUN_NAME_ARGS = {
    "pytorch_lightning.loggers.CSVLogger": ("name", "lightning_logs"),
    "pytorch_lightning.loggers.TensorBoardLogger": ("name", "lightning_logs"),
    "pytorch_lightning.loggers.WandbLogger": ("name", None),
}


class TrainCLI(LightningCLI):
    """LightningCLI with a `--name` for the run: checkpoints/NAME and the loggers' run name,
    where a config leaves them unset (default NAME: the first config file's stem)."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.add_argument(
            "--name",
            type=str | None,
            default=None,
            help="run name: checkpoints/NAME and the loggers' run (default: the config file's name)",
        )

    def before_instantiate_classes(self) -> None:
        """Runs before the trainer, loggers, model or data exist: every check that needs no
        model happens here, so a refusal leaves no W&B run or log folder behind."""
        name_run(self.config)
        check_output_folders(self.config)
        check_data_settings(self.config.get("data"))


def name_run(config) -> None:
    """Fill an unset ModelCheckpoint dirpath with checkpoints/NAME and an unset logger run name
    with NAME (`config` is the parsed jsonargparse namespace, changed in place)."""
    files = config.get("config") or []
    name = config.get("name") or (Path(str(files[0])).stem if files else "cgr")
    config.name = name
    trainer = config.trainer
    for callback in _as_list(trainer.get("callbacks")):
        if callback.class_path == CHECKPOINT and callback.init_args.get("dirpath") is None:
            callback.init_args.dirpath = f"checkpoints/{name}"
    for logger in _as_list(trainer.get("logger")):
        arg, unset = RUN_NAME_ARGS.get(getattr(logger, "class_path", ""), (None, None))
        if arg and logger.init_args.get(arg) == unset:
            logger.init_args[arg] = name


def check_output_folders(config) -> None:
    """The run name is one folder name (not a path that writes outside checkpoints/), and every
    checkpoint folder can be written (not under a file)."""
    name = str(config.get("name") or "")
    if not name or name in {".", ".."} or any(c in name for c in "/\\") or name.startswith("-"):
        raise ConfigError(
            f"--name {name!r}: a run name is one folder name (checkpoints/NAME), not a path"
        )
    for callback in _as_list(config.trainer.get("callbacks")):
        folder = callback.init_args.get("dirpath") if callback.class_path == CHECKPOINT else None
        if folder:
            require_writable_dir(folder, "checkpoint folder (ModelCheckpoint dirpath)")


def check_data_settings(data) -> None:
    """QADataModule's own checks on plain values, and its files found, before any model loads
    (LightningCLI builds the model before the data module)."""
    if data is None:
        return
    check_data_numbers(**{key: data.get(key) for key in DATA_MINIMUMS})
    train = data.get("train_file")
    files = [("data.train_file", f) for f in (train if isinstance(train, list) else [train])]
    files += [
        ("data.dev_file", data.get("dev_file")),
        ("data.predict_file", data.get("predict_file")),
    ]
    files += [("data.gold_facts_files", f) for f in data.get("gold_facts_files") or []]
    retrieval = data.get("retrieval")
    if retrieval is not None and retrieval.get("method") not in {"none", "gold"}:
        files += [("data.retrieval.corpus", f) for f in retrieval.get("corpus") or []]
        files.append(("data.retrieval.open_book", retrieval.get("open_book")))
    for what, path in files:
        if path and not Path(str(path)).exists():  # a corpus may be a folder of tsv tables
            raise DataFormatError(str(path), None, what, "file not found")


def _as_list(value) -> list:
    if value is None or isinstance(value, bool):
        return []
    return list(value) if isinstance(value, list) else [value]


def train_cli(argv: list[str]) -> TrainCLI:
    """Parse `cgr train` arguments and build trainer, model and datamodule (not run)."""
    import torch

    if torch.cuda.is_available():  # TF32 matmuls for float32 work (Lightning asks for it)
        torch.set_float32_matmul_precision("high")
    # `cgr train` hands LightningCLI its own argv slice on purpose; the warning says otherwise
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter", category=UserWarning)
    # allow_abbrev off: `--trainer.max_epoch` must be refused, not read as max_epochs;
    # exit_on_error off: a bad value becomes one line (`parsed`), not usage + a nested report
    return parsed(
        lambda: TrainCLI(
            ReaderModule,
            QADataModule,
            subclass_mode_model=True,  # model.class_path: ReaderModule or CGRModule
            run=False,
            args=argv,
            save_config_kwargs={"overwrite": True},
            parser_kwargs={"prog": "cgr train", "allow_abbrev": False, "exit_on_error": False},
        ),
        "cgr train",
    )


def resolved_config(path: str | Path, *overrides: str) -> dict:
    """The config file as `cgr train` reads it: groups inlined, defaults filled in (through
    `--print_config`), for benchmarks and tests that edit a shipped config before a run."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        train_cli(["--config", str(path), *overrides, "--print_config"])
    config = yaml.safe_load(out.getvalue())
    if not isinstance(config, dict):
        raise ValueError(f"{path}: `cgr train --print_config` printed no config")
    return config
