"""The paper's OBQA configuration, whole, on two DDP processes (gloo, CPU): every loss, the
evidence refresh, validation, the dev evaluation and the export, on the real OpenBookQA files
(from the offline mirror, through `cgr data get --from`), with MiniLM standing in for
RoBERTa-large and BERT-base and the open book as the corpus, so it runs in minutes. It shows the
configuration assembles and runs; it measures nothing."""

from __future__ import annotations

import json

import pytest
import yaml

from cgr.cli import main
from cgr.training.config import resolved_config
from tests.conftest import ROOT
from tests.training.test_cgr import ranks_failure, run_cli

pytestmark = pytest.mark.slow
MIRROR = ROOT.parent / "shared" / "data"


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no offline mirror of OpenBookQA here")
def test_paper_config_runs_its_whole_loop_on_two_ddp_processes(tmp_path, monkeypatch):
    root = tmp_path / "data"
    assert main(["data", "get", "openbookqa", "--from", str(MIRROR), "--root", str(root),
                 "--quiet"]) == 0  # fmt: skip
    from cgr.data.root import use_data_root

    use_data_root(None)
    dev = root / "openbookqa/Additional/dev_complete.jsonl"
    small_dev = tmp_path / "dev24.jsonl"  # the first 24 real dev questions: a short evaluation
    small_dev.write_text("".join(dev.read_text().splitlines(keepends=True)[:24]))
    config = resolved_config(ROOT / "configs" / "obqa_paper.yaml")
    trainer, init, data = config["trainer"], config["model"]["init_args"], config["data"]
    trainer.update(accelerator="cpu", devices=2, strategy="ddp", precision="32-true",
                   max_epochs=2, limit_train_batches=2, limit_val_batches=1,
                   num_sanity_val_steps=0, enable_progress_bar=False,
                   default_root_dir=str(tmp_path / "logs"))  # fmt: skip
    trainer["logger"] = [{"class_path": "pytorch_lightning.loggers.CSVLogger",
                          "init_args": {"save_dir": str(tmp_path / "logs"), "name": "run"}}]  # fmt: skip
    for callback in trainer["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(tmp_path / "ckpt")
    init.update(reader_model="minilm", retriever_model="minilm", max_length=64)
    data.update(dev_file=str(small_dev), max_train_questions=16, eval_batch_size=8,
                pool_cache_dir=str(tmp_path / "pools"))  # fmt: skip
    data["retrieval"].update(encoder="minilm", corpus=["openbookqa/Main/openbook.txt"],
                             cache_dir=str(tmp_path / "emb"), beam_size=3, open_book_k=3)  # fmt: skip
    data["chains"]["amr"]["cache"] = str(tmp_path / "amr.sqlite")
    data["chains"]["workers"] = None
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("CGR_DATA", str(root))
    done = run_cli(path, "--export-model", timeout=1500)
    assert done.returncode == 0, ranks_failure(done.stderr)
    out = done.stdout
    # the paper's batch of 4 is the global one: 2 per process
    assert "batch: 2 per device x 2 device(s) x 1 node(s) x 1 accumulated = 4" in out
    assert "precision: 32-true" in out and "reader: minilm" in out
    assert "chain search: " in out and "local rank(s)" in out
    assert "GLOBAL_RANK: 1" in out + done.stderr
    logged = (tmp_path / "logs/run/version_0/metrics.csv").read_text()
    for term in ("train/loss_mle", "train/loss_rl", "train/loss_global", "train/loss_supervised"):
        assert term in logged, term
    assert "refresh" in (out + done.stderr).lower()
    card = json.loads((tmp_path / "ckpt/model/cgr_config.json").read_text())
    assert card["data"]["retrieval"]["beam_size"] == 3
    assert out.strip().splitlines()[-1].startswith("accuracy:")
