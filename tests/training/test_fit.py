"""A real (tiny) LightningCLI fit on data/sample, then `cgr eval` on its checkpoint."""

import json

import pytest

from cgr.cli import main
from tests.training.helpers import tiny_config

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips


def write_config(tmp_path, **retrieval):
    return tiny_config(tmp_path, **retrieval)


@pytest.fixture(scope="module")
def trained(tiny_run):
    return tiny_run


def test_fit_writes_best_and_last_checkpoints_and_metrics(trained, capsys):
    assert (trained / "ckpt" / "best.ckpt").is_file() and (trained / "ckpt" / "last.ckpt").is_file()
    metrics = next((trained / "logs").rglob("metrics.csv")).read_text()
    assert "train/loss_step" in metrics and "val/acc" in metrics


def test_eval_prints_accuracy_last_and_writes_predictions(trained, capsys, tmp_path):
    out = tmp_path / "pred.jsonl"
    assert (
        main(["eval", "--checkpoint", str(trained / "ckpt" / "best.ckpt"), "--out", str(out)]) == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("accuracy: ")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10
    accuracy = float(last.split()[1])
    assert accuracy == pytest.approx(sum(r["correct"] for r in rows) / 10)
    choice = rows[0]["choices"][0]
    assert {"label", "text", "score", "hypothesis", "facts"} <= set(choice)
    assert 0 < len(choice["facts"]) <= 4 and {"fact_id", "text", "score", "step"} <= set(
        choice["facts"][0]
    )


def test_eval_on_an_arc_format_file(trained, capsys, tmp_path):
    arc = tmp_path / "arc.jsonl"
    row = {"id": "x1", "question": {"stem": "Which is a metal?", "choices": [
        {"text": "wood", "label": "1"}, {"text": "copper", "label": "2"}, {"text": "glass", "label": "3"},
        {"text": "paper", "label": "4"}, {"text": "cloth", "label": "5"}]}, "answerKey": "2"}  # fmt: skip
    arc.write_text(json.dumps(row) + "\n")
    assert main(["eval", "--checkpoint", str(trained / "ckpt" / "best.ckpt"), "--data", str(arc),
                 "--out", str(tmp_path / "p.jsonl")]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip().splitlines()[-1] in {
        "accuracy: 0.0000",
        "accuracy: 1.0000",
    }
    record = json.loads((tmp_path / "p.jsonl").read_text())
    assert [c["label"] for c in record["choices"]] == ["1", "2", "3", "4", "5"]


def test_unknown_config_key_is_one_clear_error(tmp_path, capsys):
    assert main(["train", "--config", str(write_config(tmp_path)), "--data.no_such_key=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such_key" in err[0]


def test_missing_data_file_is_one_clear_error(tmp_path, capsys):
    code = main(
        ["train", "--config", str(write_config(tmp_path)), "--data.train_file=missing.jsonl"]
    )
    err = capsys.readouterr().err
    assert (
        code == 2 and "missing.jsonl" in err and "file not found" in err and "Traceback" not in err
    )


def test_missing_checkpoint_is_one_clear_error(tmp_path, capsys):
    assert main(["eval", "--checkpoint", str(tmp_path / "none.ckpt")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err


def test_eval_exports_chains_and_still_prints_accuracy_last(trained, capsys, tmp_path):
    export = tmp_path / "export"
    args = ["eval", "--checkpoint", str(trained / "ckpt" / "best.ckpt"), "--out", str(tmp_path / "p.jsonl"),
            "--export-dir", str(export)]  # fmt: skip
    assert main(args) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("accuracy: ")
    records = [json.loads(line) for line in (export / "chains.jsonl").read_text().splitlines()]
    assert len(records) == 10 and (export / "chains.html").stat().st_size > 1000
    rendered = [c["rendered"] for r in records for ch in r["choices"] for c in ch["chains"]]
    assert rendered and all(r.startswith("Question -") and r.endswith(")") for r in rendered)
    copper = next(
        r for r in records if r["id"] == "s-004"
    )  # "Which material is the best conductor ..."
    facts = {f["text"] for f in copper["facts"]}
    assert {"metal is a good conductor of electricity", "copper is a metal"} <= facts


def test_no_chains_switch_reads_the_plain_pool(trained, capsys, tmp_path):
    out = tmp_path / "plain.jsonl"
    args = [
        "eval",
        "--checkpoint",
        str(trained / "ckpt" / "best.ckpt"),
        "--out",
        str(out),
        "--no-chains",
    ]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(ch["chains"] == [] for r in rows for ch in r["choices"])
    # the facts read: at most max_evidence (4) of the pool, whole, as many as fit in max_length
    assert all(1 <= len(ch["facts"]) <= 4 for r in rows for ch in r["choices"])


def test_bf16_with_gradient_clipping_trains_with_the_fused_optimizer(tmp_path, capsys):
    """The quickstart's settings (bf16-mixed, clipping): Lightning's own clipping refuses a fused
    optimizer under mixed precision, so the module clips; a reader run goes through."""
    args = {"precision": "bf16-mixed", "gradient_clip_val": 1.0, "limit_val_batches": 1}
    config = tiny_config(tmp_path, trainer_args=args)
    assert main(["train", "--config", str(config)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("accuracy: ")
