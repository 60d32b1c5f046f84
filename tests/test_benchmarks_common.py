"""The paired statistic the ablation table prints (benchmarks/common.py)."""

from benchmarks.common import mcnemar_p


def test_mcnemar_p_matches_the_exact_binomial_test():
    # 56 vs 44 discordant questions: two-sided binomial(100, 1/2) p = 0.2713
    assert abs(mcnemar_p(56, 44) - 0.2713) < 1e-3
    assert mcnemar_p(44, 56) == mcnemar_p(56, 44)
    assert mcnemar_p(0, 10) == 2 / 2**10
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(5, 5) == 1.0
