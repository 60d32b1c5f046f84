"""The `cgr train` command line (LightningCLI over a reader module + QADataModule) and the
run names it fills in, so the shipped configs can compose shared groups (configs/callbacks,
configs/logger, configs/chains, ...) instead of copying them with a per-config folder name."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path

import yaml
from pytorch_lightning.cli import LightningCLI

from cgr.training.datamodule import QADataModule
from cgr.training.module import ReaderModule
from cgr.training.settings import (
    check_data_settings,
    check_output_folders,
    check_trainer_numbers,
    checkpoint_folder,
    lock_run_folder,
    name_run,
)
from cgr.validation import parsed

log = logging.getLogger(__name__)


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
        check_trainer_numbers(self.config.get("trainer"))
        name_run(self.config)
        check_output_folders(self.config)
        check_data_settings(self.config.get("data"))
        folder = checkpoint_folder(self.config)  # locked last: nothing is refused after it
        if folder:
            lock_run_folder(folder)
        bf16_where_native(self.config.trainer)

    def instantiate_trainer(self, **kwargs):
        """The trainer, its checkpoints written inside the run folder and renamed into place
        (a custom CheckpointIO a config names is kept)."""
        from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO

        from cgr.training.checkpoints import run_folder_checkpoint_io

        trainer = super().instantiate_trainer(**kwargs)
        if type(trainer.strategy.checkpoint_io) is TorchCheckpointIO:
            trainer.strategy.checkpoint_io = run_folder_checkpoint_io()
        return trainer


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX on x86 (oneDNN's bf16 kernels run natively); elsewhere what oneDNN
    reports. Private torch probes, so any failure reads as "no"."""
    import platform

    import torch

    try:
        if platform.machine().lower() in {"x86_64", "amd64", "i386", "i686"}:
            return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def native_precision(precision: str, accelerator: str | None = "auto") -> str:
    """bf16-mixed on a CPU without bf16 instructions runs emulated, several times slower than
    float32: 32-true there instead, with a warning (configs ask for bf16 where it pays). Anything
    else is returned as asked. Shared by `cgr train` and the benchmarks that build a Trainer."""
    import torch

    precision, accelerator = str(precision), str(accelerator or "auto")
    accelerated = torch.cuda.is_available() or torch.backends.mps.is_available()
    on_cpu = accelerator == "cpu" or (accelerator == "auto" and not accelerated)
    if precision.startswith("bf16") and on_cpu and not cpu_has_native_bf16():
        log.warning(
            "trainer.precision=%s: this CPU has no bf16 instructions, training in 32-true",
            precision,
        )
        return "32-true"
    return precision


def bf16_where_native(trainer) -> None:
    """`native_precision` applied to a parsed trainer config, before the Trainer exists."""
    precision = trainer.get("precision")
    if precision is not None:
        trainer.precision = native_precision(precision, trainer.get("accelerator"))


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
