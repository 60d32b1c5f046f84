"""The command-line check `cgr train` runs before torch loads gives the full parse's verdict:
the same refusals with the same messages, and no refusal where the full parse accepts."""

import pytest

from cgr.errors import CGRError
from cgr.training.precheck import init_parameters, precheck
from tests.conftest import ROOT

CONFIG = ["--config", str(ROOT / "configs" / "default.yaml")]


@pytest.mark.parametrize(
    "args",
    [
        ["--trainer.max_epoch=1"],
        ["--data.max_evid", "3"],
        ["--model.init_args.lrr=1"],
        ["--data.retrieval.method=bm2"],
        ["--data.retrieval.use_gpu=maybe"],
        ["--data.retrieval.steps=0"],
        ["--data.chains.max_facts=0"],
        ["--data.chains.enabled=maybe"],
        ["--data.batch_size=0"],
        ["--data.batch_size=x"],
        ["--data.train_file=nowhere/train.jsonl"],
        ["--data.retrieval.corpus=[nowhere/facts.txt]"],
        ["--name=a/b"],
    ],
)
def test_refuses_as_the_full_parse_does(args):
    from cgr.training.config import train_cli

    with pytest.raises(CGRError) as early:
        precheck([*CONFIG, *args])
    with pytest.raises(CGRError) as full:
        train_cli([*CONFIG, *args])  # refused in the parse or before_instantiate_classes
    if str(full.value).startswith("Problem with given class_path"):  # names no key: ours does
        assert str(early.value).startswith(f"unrecognized arguments: {args[0]}")
    else:
        assert str(early.value) == str(full.value)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--trainer.max_epochs=1", "--data.batch_size", "2", "--name=quick"],
        [
            "--model.init_args.lr=1e-4",
            "--data.retrieval.method=bm25",
            "--data.chains.enabled=false",
        ],
        ["--trainer.callbacks+=pytorch_lightning.callbacks.LearningRateMonitor"],  # left to the CLI
        ["--print_config"],
    ],
)
def test_accepts_what_the_full_parse_accepts(args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    precheck([*CONFIG, *args])


def test_reads_init_parameters_without_importing():
    import sys

    lightning_loaded = "pytorch_lightning" in sys.modules
    names = init_parameters("pytorch_lightning.trainer.trainer", "Trainer")
    assert {"max_epochs", "precision", "devices"} <= names
    assert ("pytorch_lightning" in sys.modules) == lightning_loaded
    assert "refresh_evidence_every_n_epochs" in init_parameters(
        "cgr.training.cgr_module", "CGRModule"
    )
