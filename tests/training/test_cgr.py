"""CGR training: every loss term logged, the trained query encoder used at eval, a non-finite
loss stops the run, a 2-process DDP fit equals one process, and a killed run resumes."""

import csv
import os
import signal
import subprocess
import sys
import time

import pytest
import pytorch_lightning as pl
import torch

from cgr.cli import main
from cgr.errors import CGRError, ConfigError
from tests.conftest import ROOT, SAMPLE
from tests.training.helpers import checkpoint_every_two_steps, tiny_config

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips

CGR = "cgr.training.cgr_module.CGRModule"
TERMS = ["reader", "supervised", "mle", "rl", "global"]


def metrics(tmp_path) -> list[dict]:
    path = next((tmp_path / "logs").rglob("metrics.csv"))
    return list(csv.DictReader(path.open()))


def logged(tmp_path, key: str) -> list[float]:
    """Every value a run logged under `key`, in order."""
    return [float(r[key]) for r in metrics(tmp_path) if r.get(key)]


@pytest.fixture(scope="module")
def cgr_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("cgr")
    config = tiny_config(tmp_path, CGR, trainer_args={"max_epochs": 2, "limit_train_batches": 2})
    assert main(["train", "--config", str(config)]) == 0
    return tmp_path


def test_every_loss_term_is_logged(cgr_run):
    rows = metrics(cgr_run)
    columns = set(rows[0])
    assert {f"train/loss_{t}_step" for t in TERMS} <= columns
    step_rows = [r for r in rows if r.get("train/loss_step")]
    assert step_rows and all(
        float(r[f"train/loss_{t}_step"]) == float(r[f"train/loss_{t}_step"])
        for r in step_rows
        for t in TERMS
    )
    assert any(float(r["train/loss_mle_step"]) > 0 for r in step_rows)  # chains were found and used


def test_training_speed_is_logged(cgr_run):
    speeds = logged(cgr_run, "train/device/samples_per_sec")  # ThroughputMonitor: questions/s
    assert speeds and all(s > 0 for s in speeds)
    assert logged(cgr_run, "train/samples")[-1] == 2 * 2 * 4  # 2 epochs x 2 batches x 4 questions


def test_checkpoint_holds_the_query_encoder_and_eval_uses_it(cgr_run, tmp_path, capsys):
    ckpt = torch.load(cgr_run / "ckpt" / "best.ckpt", map_location="cpu", weights_only=False)
    assert any(k.startswith("query_encoder.") for k in ckpt["state_dict"])
    assert any(k.startswith("reader.") for k in ckpt["state_dict"])
    assert "callbacks" not in ckpt and "optimizer_states" not in ckpt  # best.ckpt: weights only
    full = torch.load(cgr_run / "ckpt" / "last.ckpt", map_location="cpu", weights_only=False)
    assert any("RNGStateCheckpoint" in k for k in full["callbacks"]) and full["optimizer_states"]
    assert (
        main(
            [
                "eval",
                "--checkpoint",
                str(cgr_run / "ckpt" / "best.ckpt"),
                "--out",
                str(tmp_path / "p.jsonl"),
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("accuracy: ")
    # best.ckpt was chosen on dev evidence retrieved with the query encoder `cgr eval` picks
    # by default ("auto": the trained one once the training evidence was refreshed with it, the
    # base one before): its val/acc is the accuracy eval prints
    score = next(
        v
        for k, v in full["callbacks"].items()
        if "ModelCheckpoint" in k and v.get("best_model_score") is not None
    )
    assert float(last.split()[1]) == pytest.approx(float(score["best_model_score"]), abs=1e-6)
    assert ckpt["cgr_metrics"]["val/acc"] == pytest.approx(float(score["best_model_score"]))


def test_predictor_retrieves_with_the_trained_or_the_base_query_encoder(cgr_run):
    import cgr
    from cgr.data.loaders import load_multiple_choice

    path = cgr_run / "ckpt" / "best.ckpt"
    trained = cgr.Predictor.from_checkpoint(path, query_encoder="trained")
    base = cgr.Predictor.from_checkpoint(path, query_encoder="base")
    auto = cgr.Predictor.from_checkpoint(path)
    epoch = torch.load(path, map_location="cpu", weights_only=True)["epoch"]
    auto_is_trained = auto.pipeline.retriever.encoder.model is auto.module.query_encoder
    assert auto_is_trained is (epoch >= 1)  # refreshed after epoch 1 (of 2)
    assert trained.pipeline.retriever.encoder.model is trained.module.query_encoder
    assert base.pipeline.retriever.encoder.model is not base.module.query_encoder
    questions = load_multiple_choice(SAMPLE / "dev.jsonl")[:3]
    pools = [trained.pipeline.pools(questions), base.pipeline.pools(questions)]
    scores = [[f.score for ex in p for pool in ex.pool for f in pool] for p in pools]
    assert scores[0] != scores[1]  # two epochs of chain losses moved the query vectors
    # predict_examples on the pipeline's output is predict_questions
    direct = trained.predict_questions(questions)
    staged = trained.predict_examples(trained.pipeline.select(pools[0]))
    assert [p.scores for p in staged] == [p.scores for p in direct]
    with pytest.raises(ConfigError, match="query_encoder"):
        cgr.Predictor.from_checkpoint(path, query_encoder="frozen")


def test_cgr_eval_with_the_base_query_encoder_scores_like_the_predictor(cgr_run, tmp_path, capsys):
    import json

    import cgr

    path = cgr_run / "ckpt" / "best.ckpt"
    out = tmp_path / "base.jsonl"
    argv = ["eval", "--checkpoint", str(path), "--out", str(out), "--query-encoder", "base"]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("accuracy: ")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    base = cgr.Predictor.from_checkpoint(path, query_encoder="base")
    predictions = base.predict_file(SAMPLE / "dev.jsonl")
    for p, r in zip(predictions, rows, strict=True):
        assert [c.score for c in p.choices] == pytest.approx(
            [c["score"] for c in r["choices"]], abs=1e-4
        )
    with pytest.raises(SystemExit) as bad:
        main(["eval", "--checkpoint", str(path), "--query-encoder", "frozen"])
    assert bad.value.code == 2


def test_query_encoder_learns_from_the_chain_losses(tmp_path):
    from cgr.chains.search import Chain
    from cgr.reader.examples import ReaderExample
    from cgr.training.cgr_module import CGRModule

    module = CGRModule(max_length=32, use_rl=False, disable_dropout=True)
    chains = [
        Chain(("a", "b"), ("x", "y", "z"), ("metal conducts electricity", "copper is a metal")),
        Chain(("c", "d"), ("x", "y", "z"), ("a bear hibernates in winter", "winter is cold")),
    ]
    gold = [["copper is a metal"], ["winter is cold"]]
    batch = [ReaderExample(f"q{i}", "Which one?", ["A", "B"], ["copper", "wood"], [f"Hypothesis {i}.", "Other."],
                           [[], []], 0, [[chains[i]], []], gold[i]) for i in range(2)]  # fmt: skip
    loss = module.training_step(batch, 0)
    loss.backward()
    grads = [p.grad for p in module.query_encoder.parameters() if p.grad is not None]
    assert grads and sum(g.abs().sum() for g in grads) > 0


def grad_norm(module: torch.nn.Module) -> float:
    return torch.sqrt(
        sum((p.grad**2).sum() for p in module.parameters() if p.grad is not None)
    ).item()


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("clipping", ["each", "joint"])
def test_gradient_clipping_each_model_keeps_the_reader_step(clipping, fused):
    """With `each`, a large query-encoder gradient no longer shrinks the reader's step."""
    from cgr.chains.search import Chain
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact
    from cgr.training.cgr_module import CGRModule

    module = CGRModule(max_length=32, disable_dropout=True, gradient_clipping=clipping)
    texts = [
        ("metal conducts electricity", "copper is a metal"),
        ("a bear hibernates", "winter is cold"),
    ]
    batch = [ReaderExample(f"q{i}", "Which one?", ["A", "B"], ["copper", "wood"], [f"Hypothesis {i}.", "Other."],
                           [[RetrievedFact("f", texts[i][0], 1.0)], []], 0,
                           [[Chain(("a", "b"), ("x", "y", "z"), texts[i])], []], [texts[i][1]])
             for i in range(2)]  # fmt: skip
    module.training_step(batch, 0).backward()
    for p in module.query_encoder.parameters():
        if p.grad is not None:
            p.grad.mul_(1000.0)  # the chain losses' large gradients, made certain
    reader, query = grad_norm(module.reader), grad_norm(module.query_encoder)
    assert query > 10 * max(reader, 1.0)
    module.trainer = pl.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False)
    # fused: clipped by the module itself (Lightning refuses fused optimizers), the same norms
    optimizer = torch.optim.AdamW(module.parameter_groups(), fused=fused)
    module.configure_gradient_clipping(optimizer, 1.0, "norm")
    if clipping == "each":
        assert grad_norm(module.reader) == pytest.approx(min(reader, 1.0), rel=1e-4)
        assert grad_norm(module.query_encoder) == pytest.approx(1.0, rel=1e-4)
    else:  # one norm over both: the reader's share shrinks with the query encoder's size
        scale = 1.0 / (reader**2 + query**2) ** 0.5
        assert grad_norm(module.reader) == pytest.approx(reader * scale, rel=1e-3)


def test_gradient_clipping_value_is_checked():
    from cgr.training.cgr_module import CGRModule

    with pytest.raises(
        ConfigError, match="model.gradient_clipping: 'both' is not one of each, joint"
    ):
        CGRModule(max_length=32, gradient_clipping="both")


def test_non_finite_loss_stops_with_step_and_batch_named():
    from cgr.reader.examples import ReaderExample
    from cgr.training.cgr_module import CGRModule

    module = CGRModule(max_length=32)
    module.reader_loss.forward = lambda logits, labels: torch.tensor(float("nan"))
    batch = [
        ReaderExample(
            "q-nan", "Which?", ["A", "B"], ["x", "y"], ["X.", "Y."], [[], []], 0, [[], []]
        )
    ]
    with pytest.raises(
        CGRError, match=r"non-finite loss at global step 0, batch 7 \(questions q-nan\)"
    ):
        module.training_step(batch, 7)


def run_cli(config, *extra, timeout=900):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "cgr.cli", "train", "--config", str(config), *extra], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)  # fmt: skip


def ranks_failure(stderr: str) -> str:
    """Rank 1's own lines first: rank 0's traceback (a closed connection) fills the tail."""
    other = [
        line
        for line in stderr.splitlines()
        if line.startswith("[rank") and not line.startswith("[rank0]")
    ]
    return "\n".join(other[-60:]) + "\n--- tail ---\n" + stderr[-2000:]


def test_two_process_ddp_matches_one_process(tmp_path):
    common = {"model_args": {"disable_dropout": True, "refresh_evidence_every_n_epochs": 0, "lr": 1e-4},
              "trainer_args": {"max_epochs": 1, "limit_train_batches": 3, "limit_val_batches": 1,
                               "accelerator": "cpu", "num_sanity_val_steps": 0}}  # fmt: skip
    single_dir, ddp_dir = tmp_path / "single", tmp_path / "ddp"
    single_dir.mkdir()
    ddp_dir.mkdir()
    single = tiny_config(single_dir, CGR, data_args={"batch_size": 4, "shuffle": False}, **common)
    ddp = tiny_config(ddp_dir, CGR, data_args={"batch_size": 2, "shuffle": False}, **common)
    a = run_cli(single, "--trainer.devices=1")
    assert a.returncode == 0, a.stderr[-3000:]
    b = run_cli(ddp, "--trainer.devices=2", "--trainer.strategy=ddp")
    assert b.returncode == 0, ranks_failure(b.stderr)
    assert "GLOBAL_RANK: 1" in b.stdout + b.stderr  # Lightning's DDP start-up line of rank 1
    one, two = logged(single_dir, "train/loss_step"), logged(ddp_dir, "train/loss_step")
    assert len(one) == len(two) == 3
    assert two == pytest.approx(one, rel=2e-3, abs=2e-4)
    per_rank = logged(ddp_dir, "train/device/samples_per_sec")
    assert per_rank and logged(ddp_dir, "train/samples_per_sec") == pytest.approx(
        [2 * s for s in per_rank]
    )
    # the dev evaluation after the fit runs on rank zero alone and scores every dev question
    n_dev = sum(1 for line in (SAMPLE / "dev.jsonl").open() if line.strip())
    for run_dir in (single_dir, ddp_dir):
        predictions = (run_dir / "ckpt" / "predictions-dev.jsonl").read_text().splitlines()
        assert len(predictions) == n_dev


def test_killed_run_resumes_from_its_last_checkpoint(tmp_path):
    config = tiny_config(tmp_path, "cgr.training.module.ReaderModule",
                         trainer_args={"max_epochs": 3, "limit_train_batches": 4, "limit_val_batches": 1})  # fmt: skip
    checkpoint_every_two_steps(config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "cgr.cli", "train", "--config", str(config)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    last = tmp_path / "ckpt" / "last.ckpt"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if (
            last.exists()
            and torch.load(last, map_location="cpu", weights_only=False)["global_step"] >= 2
        ):
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = torch.load(last, map_location="cpu", weights_only=False)
    assert 2 <= killed_at["global_step"] < 12
    resumed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in resumed.stderr + resumed.stdout
    final = torch.load(last, map_location="cpu", weights_only=False)
    assert final["global_step"] == 12 and final["epoch"] == 2
    assert final["optimizer_states"] and final["lr_schedulers"]


def test_cgr_run_stopped_mid_epoch_and_resumed_ends_with_the_unbroken_runs_weights(tmp_path):
    """Dropout on, the evidence refreshed between the epochs: stopped after step 3 of 8 (last.ckpt
    at step 2), the resumed run must train the batches the stopped one had left, with its RNG
    draws, optimizer and schedule, and end bit for bit where the unbroken run ends."""

    def config(name: str, stop_at: int | None = None):
        (tmp_path / name).mkdir(exist_ok=True)
        trainer_args = {"max_epochs": 2, "limit_train_batches": 4, "limit_val_batches": 1}
        return checkpoint_every_two_steps(
            tiny_config(tmp_path / name, CGR, trainer_args=trainer_args), stop_at
        )

    assert run_cli(config("whole")).returncode == 0
    stopped = run_cli(config("parts", stop_at=3))
    assert stopped.returncode != 0
    last = tmp_path / "parts" / "ckpt" / "last.ckpt"
    assert torch.load(last, map_location="cpu", weights_only=False)["global_step"] == 2
    resumed = run_cli(config("parts"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in resumed.stderr + resumed.stdout
    whole = torch.load(
        tmp_path / "whole" / "ckpt" / "last.ckpt", map_location="cpu", weights_only=False
    )
    parts = torch.load(last, map_location="cpu", weights_only=False)
    assert parts["global_step"] == whole["global_step"] == 8
    differing = [
        k for k, v in whole["state_dict"].items() if not torch.equal(v, parts["state_dict"][k])
    ]
    assert not differing, f"{len(differing)} tensors differ, e.g. {differing[:3]}"


@pytest.mark.parametrize(
    "precision, strategy, devices, fused",
    [("32-true", "single", {"cpu"}, True), ("bf16-mixed", "ddp", {"cuda"}, True),
     ("16-mixed", "single", {"cuda"}, False), ("bf16-mixed", "fsdp", {"cuda"}, False),
     ("bf16-mixed", "single", {"mps"}, False)],
)  # fmt: skip
def test_fused_adamw_only_where_gradients_arrive_unscaled_and_whole(
    precision, strategy, devices, fused
):
    from pytorch_lightning.strategies import DDPStrategy, FSDPStrategy, SingleDeviceStrategy

    from cgr.training.module import fused_adamw_fits

    kinds = {"single": SingleDeviceStrategy, "ddp": DDPStrategy, "fsdp": FSDPStrategy}
    chosen = kinds[strategy].__new__(kinds[strategy])  # the type is all that is asked
    assert fused_adamw_fits(precision, chosen, devices) is fused


def _deterministic_cgr(tmp_path, epochs: int, losses: bool):
    import json

    tmp_path.mkdir(parents=True, exist_ok=True)
    probe = tmp_path / "probe.jsonl"
    off = {} if losses else {f"use_{t}": False for t in ("supervised", "mle", "rl", "global")}
    config = tiny_config(tmp_path, CGR, model_args={"disable_dropout": True, **off},
                         trainer_args={"max_epochs": epochs, "limit_train_batches": 3})  # fmt: skip
    raw = __import__("yaml").safe_load(config.read_text())
    raw["trainer"]["callbacks"].append({"class_path": "tests.training.helpers.EvidenceProbe",
                                        "init_args": {"path": str(probe)}})  # fmt: skip
    # every epoch's checkpoint too, as best.ckpt is when a later epoch does not beat it (its own
    # monitor and mode: Lightning needs each ModelCheckpoint's state key to differ)
    raw["trainer"]["callbacks"].append({"class_path": "pytorch_lightning.callbacks.ModelCheckpoint",
                                        "init_args": {"dirpath": str(tmp_path / "ckpt"), "filename": "each-{epoch}",
                                                      "save_top_k": -1, "save_weights_only": True,
                                                      "monitor": "val/acc", "mode": "min"}})  # fmt: skip
    config.write_text(__import__("yaml").safe_dump(raw))
    assert main(["train", "--config", str(config)]) == 0
    predictions = tmp_path / "ckpt" / "predictions-dev.jsonl"
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    return rows, [json.loads(line) for line in probe.read_text().splitlines()]


def test_one_epoch_chain_losses_cannot_reach_the_reader(tmp_path):
    """The guard for what 1-epoch CGR rows measure: with dropout off, training with and
    without the four chain losses gives the same dev predictions, since the reader reads only
    the base encoder's evidence (no refresh in a 1-epoch run) and `each` clipping keeps its
    step apart from the query encoder's."""
    with_losses, probe = _deterministic_cgr(tmp_path / "on", 1, True)
    without, _ = _deterministic_cgr(tmp_path / "off", 1, False)
    assert [r["predicted"] for r in with_losses] == [r["predicted"] for r in without]
    for a, b in zip(with_losses, without, strict=True):
        assert [c["score"] for c in a["choices"]] == pytest.approx(
            [c["score"] for c in b["choices"]], abs=1e-5
        )
    assert all(row["evidence_from"] == {"train": "base", "dev": "base"} for row in probe)


def test_two_epochs_read_and_evaluate_the_trained_encoder_evidence(tmp_path):
    """After epoch 1 the encoder the chain losses trained re-retrieves train and dev: epoch 2
    trains on that evidence, its validation reads dev from the same snapshot, and `cgr eval`
    (auto) retrieves with the snapshot the checkpoint's reader read."""
    import cgr

    _, probe = _deterministic_cgr(tmp_path, 2, True)
    by_epoch = {(r["when"], r["epoch"]): r for r in probe}
    assert by_epoch["train", 0]["evidence_from"] == {"train": "base", "dev": "base"}
    assert by_epoch["validation", 0]["evidence_from"]["dev"] == "base"
    snapshot = by_epoch["train", 1]["snapshot"]
    assert snapshot and snapshot != "base"
    assert by_epoch["train", 1]["evidence_from"] == {"train": snapshot, "dev": snapshot}
    assert by_epoch["validation", 1]["evidence_from"]["dev"] == snapshot
    last = tmp_path / "ckpt" / "last.ckpt"
    predictor = cgr.Predictor.from_checkpoint(last)
    assert predictor.pipeline.query_fingerprint() == snapshot
    # epoch 1's checkpoint is written after the refresh, and its reader read the base encoder's
    # evidence: scored on the base encoder's (its val/acc), not on the newer snapshot's
    first = cgr.Predictor.from_checkpoint(tmp_path / "ckpt" / "each-epoch=0.ckpt")
    assert first.pipeline.query_fingerprint() == "base"
    trained = cgr.Predictor.from_checkpoint(last, query_encoder="trained")
    assert trained.pipeline.query_fingerprint() not in (snapshot, "base")  # trained further
