"""`cgr train` refuses what it can check without a model before anything is built: no W&B run
or log folder is left behind (benchmarks/bad_inputs.py prints the seconds to each refusal)."""

import pytest

from cgr.cli import main
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name=README.md/x"], "--name 'README.md/x': a run name is one folder name"),
        (["--name=../elsewhere"], "--name '../elsewhere': a run name is one folder name"),
        (["--data.batch_size=0"], "data.batch_size must be a number >= 1, not 0"),
        (["--data.max_evidence=0"], "data.max_evidence must be a number >= 1, not 0"),
        (["--data.train_file=nowhere/train.jsonl"], "nowhere/train.jsonl: field 'data.train_file': file not found"),
        (["--data.retrieval.corpus=[nowhere/facts.txt]"], "field 'data.retrieval.corpus': file not found"),
        (["--data.chains.book=[nowhere/tablestore.txt]"], "nowhere/tablestore.txt: field 'data.chains.book': file not found"),
        (["--trainer.max_epochs=-5"], "trainer.max_epochs must be a number >= -1, not -5"),
        (["--trainer.max_epochs=abc"], "trainer.max_epochs must be a whole number, not 'abc'"),
        (["--model.init_args.lr=.nan"], "model.lr must be > 0, not nan"),
        (["--model.init_args.similarity_scale=.inf"], "model.similarity_scale must be > 0, not inf"),
        (["--data.chains.time_budget_s=.inf"], "data.chains.time_budget_s must be > 0, not inf"),
    ],
)  # fmt: skip
def test_refused_before_any_model_or_log_folder(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # logs/ and wandb/ would appear here
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    assert main(["train", "--config", "configs/default.yaml", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "logs").exists() and not (tmp_path / "wandb").exists()
    assert not (tmp_path / "checkpoints").exists()  # a refused run leaves no empty run folder


def test_a_checkpoint_folder_under_a_file_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    (tmp_path / "checkpoints").write_text("a file, not a folder")
    assert main(["train", "--config", "configs/default.yaml"]) == 2
    assert (
        "checkpoint folder (ModelCheckpoint dirpath) checkpoints/default: cannot write"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("accelerator", "native", "expected"),
    [("cpu", False, "32-true"), ("cpu", True, "bf16-mixed"), ("gpu", False, "bf16-mixed")],
)
def test_bf16_falls_back_to_float32_only_on_a_cpu_without_bf16(
    accelerator, native, expected, monkeypatch
):
    from jsonargparse import Namespace

    from cgr.training import config

    monkeypatch.setattr(config, "cpu_has_native_bf16", lambda: native)
    trainer = Namespace(precision="bf16-mixed", accelerator=accelerator)
    config.bf16_where_native(trainer)
    assert trainer.precision == expected


def test_a_second_train_with_the_same_name_is_refused_while_the_first_runs(
    tmp_path, monkeypatch, capsys
):
    """The run folder is locked for the life of a `cgr train`: a twin started meanwhile (here
    another process holding the lock as a running train does) is refused in one line, before
    any model loads, instead of interleaving checkpoints."""
    import os
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    hold = ("from cgr.training.settings import lock_run_folder; import time; "
            "lock_run_folder('checkpoints/twin'); print('locked', flush=True); time.sleep(120)")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-c", hold], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert first.stdout.readline().strip() == "locked"
        assert main(["train", "--config", "configs/default.yaml", "--name", "twin"]) == 2
        err = capsys.readouterr().err
        assert f"checkpoints/twin: another `cgr train` is using it (pid {first.pid})" in err
        assert err.count("\n") == 1 and not (tmp_path / "logs").exists()
    finally:
        first.kill()
        first.wait()


@pytest.mark.parametrize("plant", ["symlink", "folder"])
def test_a_planted_run_lock_is_refused_and_nothing_is_written_through(
    plant, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    precious = tmp_path / "important.txt"
    precious.write_text("keep me\n")
    lock = tmp_path / "checkpoints" / "X" / ".cgr-train.lock"
    lock.parent.mkdir(parents=True)
    if plant == "symlink":
        lock.symlink_to(precious)
    else:
        lock.mkdir()
    assert main(["train", "--config", "configs/default.yaml", "--name", "X"]) == 2
    err = capsys.readouterr().err
    assert "checkpoints/X: the run lock" in err and err.count("\n") == 1
    assert ("symbolic link" in err) if plant == "symlink" else ("cannot write" in err)
    assert precious.read_text() == "keep me\n"
