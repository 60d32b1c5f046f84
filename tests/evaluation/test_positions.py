import pytest

from cgr.evaluation.predict import describe_distribution, position_distribution


def record(predicted, labels="ABCD"):
    return {"predicted": predicted, "choices": [{"label": x} for x in labels]}


def test_positions_are_shares_named_by_their_usual_label():
    records = [record("A"), record("C"), record("C"), record("3", "1234")]
    assert position_distribution(records) == {"A": 0.25, "C": 0.75}


def test_a_collapsed_reader_is_warned_about():
    lines = describe_distribution(position_distribution([record("C")] * 6 + [record("A")] * 4))
    assert lines[0] == "predicted positions: A 40.0 %, C 60.0 %"
    assert lines[1].startswith("warning: 60.0 % of predictions are position C")
    balanced = describe_distribution(position_distribution([record(x) for x in "ABCD"]))
    assert len(balanced) == 1


@pytest.mark.slow
def test_a_full_disk_mid_eval_keeps_the_questions_scored(tiny_run, tmp_path):
    """`ulimit -f` stands in for a full disk: one line naming the file, exit 2, and the
    questions scored before the write failed kept whole in OUT.partial."""
    import json
    import resource
    import subprocess
    import sys

    from tests.conftest import ROOT, SAMPLE

    out = tmp_path / "p.jsonl"
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, 16_384))  # noqa: E731
    done = subprocess.run(
        [sys.executable, "-m", "cgr.cli", "eval", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"),
         "--data", str(SAMPLE / "dev.jsonl"), "--out", str(out), "--batch-size", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=limit,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{out}.partial: could not write (File too large)" in errors[0]
    kept = [json.loads(line) for line in (tmp_path / "p.jsonl.partial").read_text().splitlines()]
    assert 0 < len(kept) < 10 and f"the {len(kept)} questions scored before it" in errors[0]
    assert not out.exists()
