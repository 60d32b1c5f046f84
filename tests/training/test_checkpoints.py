import os
from pathlib import Path

import pytest
import torch

from cgr.cli import main
from cgr.training.checkpoints import CheckpointError, read_checkpoint


class Payload:
    """Stands for a crafted object: unpickling it would run code of the file's choosing."""

    def __reduce__(self):
        return (os.getcwd, ())


def test_plain_checkpoint_loads(tmp_path):
    path = tmp_path / "ok.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(2)}, "hyper_parameters": {"lr": 1e-5}}, path)
    assert read_checkpoint(path)["hyper_parameters"] == {"lr": 1e-5}


def test_crafted_pickle_is_refused(tmp_path):
    path = tmp_path / "crafted.ckpt"
    torch.save({"state_dict": {}, "payload": Payload()}, path)
    with pytest.raises(CheckpointError, match=r"crafted.ckpt: refused to load"):
        read_checkpoint(path)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", "truncated"])
def test_damaged_files_are_named(tmp_path, content):
    path = tmp_path / "bad.ckpt"
    if content == "truncated":
        torch.save({"state_dict": {"w": torch.zeros(1000)}}, path)
        content = path.read_bytes()[:300]
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=r"bad.ckpt: not a readable checkpoint"):
        read_checkpoint(path)


def test_cgr_eval_reports_a_bad_checkpoint_in_one_line(tmp_path, capsys):
    path = tmp_path / "crafted.ckpt"
    torch.save({"state_dict": {}, "payload": Payload()}, path)
    assert main(["eval", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refused to load" in err[0]


def test_a_damaged_last_checkpoint_is_set_aside_and_best_resumes(tmp_path, caplog):
    from cgr.training.checkpoints import resume_checkpoint

    torch.save(
        {"state_dict": {"w": torch.zeros(2)}, "optimizer_states": []}, tmp_path / "best.ckpt"
    )
    (tmp_path / "last.ckpt").write_bytes(b"PK\x03\x04 cut while writing")
    assert resume_checkpoint(tmp_path) == tmp_path / "best.ckpt"
    assert (tmp_path / "last.ckpt.damaged-1").read_bytes().startswith(b"PK")  # kept, not deleted
    assert not (tmp_path / "last.ckpt").exists()
    assert "set aside as last.ckpt.damaged-1" in caplog.text


def test_a_weights_only_best_checkpoint_is_not_resumed_from(tmp_path, caplog):
    """best.ckpt is saved weights-only: a fit cannot resume from it, so it starts over."""
    from cgr.training.checkpoints import resume_checkpoint

    torch.save({"state_dict": {"w": torch.zeros(2)}}, tmp_path / "best.ckpt")
    (tmp_path / "last.ckpt").write_bytes(b"PK\x03\x04 cut while writing")
    assert resume_checkpoint(tmp_path) is None
    assert (tmp_path / "best.ckpt").exists() and "best.ckpt holds weights only" in caplog.text


def test_no_readable_checkpoint_means_from_scratch(tmp_path):
    from cgr.training.checkpoints import resume_checkpoint

    assert resume_checkpoint(tmp_path) is None
    (tmp_path / "last.ckpt").write_bytes(b"")
    assert resume_checkpoint(tmp_path) is None and (tmp_path / "last.ckpt.damaged-1").exists()
    torch.save({"state_dict": {}}, tmp_path / "last.ckpt")
    assert resume_checkpoint(tmp_path) == tmp_path / "last.ckpt"


def test_a_damaged_best_checkpoint_is_set_aside_too(tmp_path):
    """The run that starts from scratch would overwrite best.ckpt: a damaged one is kept."""
    from cgr.training.checkpoints import resume_checkpoint

    (tmp_path / "last.ckpt").write_bytes(b"")
    (tmp_path / "best.ckpt").write_bytes(b"PK\x03\x04 cut")
    assert resume_checkpoint(tmp_path) is None
    assert (tmp_path / "best.ckpt.damaged-1").read_bytes() == b"PK\x03\x04 cut"
    assert not (tmp_path / "best.ckpt").exists()


def test_checkpoints_are_written_in_the_run_folder_and_renamed(tmp_path, monkeypatch):
    """Lightning's own save goes through a temporary file in $TMPDIR that `kill -9` leaves
    behind; cgr's writes .NAME.partial-PID beside the checkpoint and renames it."""
    from cgr.training.checkpoints import partial_path, run_folder_checkpoint_io

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    io = run_folder_checkpoint_io()
    seen = []
    real_save = torch.save

    def watching_save(obj, f, *args, **kwargs):
        seen.append(Path(f.name))
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", watching_save)
    target = tmp_path / "run" / "last.ckpt"
    io.save_checkpoint({"state_dict": {"w": torch.ones(2)}}, target)
    assert seen == [partial_path(target)] and seen[0].parent == target.parent
    assert torch.load(target, weights_only=True)["state_dict"]["w"].sum() == 2
    assert not seen[0].exists() and not list(tmpdir.iterdir())

    class Unsaveable:
        def __reduce__(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        io.save_checkpoint({"state_dict": {}, "x": Unsaveable()}, target)
    assert torch.load(target, weights_only=True)["state_dict"]["w"].sum() == 2  # the old one kept
    assert [p.name for p in target.parent.iterdir()] == ["last.ckpt"]


def test_a_killed_runs_partial_checkpoints_are_removed_at_the_next_lock(tmp_path, caplog):
    from cgr.training.settings import lock_run_folder, release_run_locks

    run = tmp_path / "run"
    run.mkdir()
    (run / ".last.ckpt.partial-4242").write_bytes(b"PK half")
    (run / "best.ckpt").write_bytes(b"kept")
    lock_run_folder(run)
    release_run_locks()
    assert not (run / ".last.ckpt.partial-4242").exists() and (run / "best.ckpt").exists()
    assert "a checkpoint a killed run was writing" in caplog.text
