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
