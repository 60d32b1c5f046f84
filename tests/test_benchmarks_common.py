"""What the benchmarks print: the paired statistic of the ablation table (benchmarks/common.py)
and the precision train_speed.py times."""

import pytest

from benchmarks.common import mcnemar_p, seed_differences


def test_mcnemar_p_matches_the_exact_binomial_test():
    # 56 vs 44 discordant questions: two-sided binomial(100, 1/2) p = 0.2713
    assert abs(mcnemar_p(56, 44) - 0.2713) < 1e-3
    assert mcnemar_p(44, 56) == mcnemar_p(56, 44)
    assert mcnemar_p(0, 10) == 2 / 2**10
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(5, 5) == 1.0


def test_seed_differences_pair_rows_by_seed():
    iterative = {1: 0.648, 2: 0.694, 3: 0.660}
    cgr = {1: 0.624, 2: 0.700}
    text = seed_differences(iterative, cgr)
    assert text.startswith("seed 1 -2.4, seed 2 +0.6; mean -0.9 ± 2.1")
    assert seed_differences(iterative, {1: 0.650}) == "seed 1 +0.2; mean +0.2"
    assert seed_differences(iterative, {4: 0.7}) is None


def test_seed_differences_say_what_one_more_seed_must_reach():
    iterative, cgr = {1: 0.648, 2: 0.694}, {1: 0.624, 2: 0.680}
    # (-2.4 - 1.4 + x) / 3 = 1.6  ->  x = 8.6
    assert seed_differences(iterative, cgr, target=1.6).endswith(
        "mean -1.9 ± 0.7; for a mean of +1.6 one more seed needs +8.6"
    )
    assert (
        seed_differences(cgr, iterative, target=1.6) == "seed 1 +2.4, seed 2 +1.4; mean +1.9 ± 0.7"
    )


@pytest.mark.parametrize(("native", "expected"), [(False, "32-true"), (True, "bf16-mixed")])
def test_train_speed_times_the_precision_cgr_train_would_use(native, expected, monkeypatch):
    import argparse

    from benchmarks import train_speed
    from benchmarks.common import train_config
    from cgr.training import config

    monkeypatch.setattr(config, "cpu_has_native_bf16", lambda: native)
    base = train_config("configs/default.yaml")
    assert base["trainer"]["precision"] == "bf16-mixed"
    args = argparse.Namespace(accelerator="cpu", precision=None, train_questions=None,
                              dev_file=None, batch_size=None, num_workers=None, cold=False)  # fmt: skip
    for precision in (None, "bf16-mixed"):  # the config's, or asked for
        args.precision = precision
        assert train_speed.row_config(base, "cgr", args)["trainer"]["precision"] == expected
    args.precision = "32-true"
    assert train_speed.row_config(base, "reader", args)["trainer"]["precision"] == "32-true"


def test_runs_pair_from_their_kept_answers_once_their_predictions_are_gone(monkeypatch, tmp_path):
    import json
    import shutil

    from benchmarks import common

    monkeypatch.setattr(common, "ROOT", tmp_path)
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(common, "dev_gold", lambda config: {"q1": {"plants need light"}})

    def predictions(name: str, right: list[bool], fact: str) -> None:
        folder = tmp_path / "checkpoints" / "bench" / name
        folder.mkdir(parents=True)
        rows = [{"id": q, "answer": "A", "predicted": "A" if ok else "B", "correct": ok,
                 "choices": [{"label": "A", "facts": [{"text": fact}]}]}
                for q, ok in zip(("q1", "q2", "q3"), right, strict=True)]  # fmt: skip
        (folder / "predictions-dev.jsonl").write_text("\n".join(map(json.dumps, rows)))

    predictions("a", [True, True, False], "Plants need light")
    predictions("b", [False, True, True], "rocks are hard")
    counted = common.paired_counts({}, "a", "b")
    assert (counted["a_only"], counted["b_only"], counted["questions"]) == (1, 1, 3)
    assert counted["by_gold"] == {(True, False): [1, 1, 0]}  # q1: only a read its gold fact
    assert common.paired_counts({}, "a", "c") is None  # c: neither predictions nor answers

    for name in ("a", "b"):
        common.keep_answers({}, name)
    shutil.rmtree(tmp_path / "checkpoints")  # a fresh machine
    assert common.paired_counts({}, "a", "b") == counted
    saved = json.loads((tmp_path / "results" / "answers-a.json").read_text())
    assert saved == {
        "run": "a",
        "answers": {"q1": [True, True], "q2": [True, None], "q3": [False, None]},
    }
