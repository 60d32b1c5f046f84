"""Each loss against a hand computation on tiny tensors."""

import math

import pytest
import torch

from cgr.training.losses import (
    GlobalChainLoss,
    MLEChainLoss,
    ReinforceChainLoss,
    SupervisedChainLoss,
    chain_log_prob,
)


def unit(*rows):
    t = torch.tensor(rows, dtype=torch.float32)
    return t / t.norm(dim=-1, keepdim=True)


def test_chain_log_prob_matches_eq5_by_hand():
    # two hypotheses, chains of length 2 and 1; d = 2
    q = torch.stack([unit([1, 0], [0, 1]), unit([0, 1], [1, 0])])  # (B=2, T=2, d)
    e = torch.stack([unit([1, 0], [0, 1]), unit([1, 1], [1, 0])])  # (M=2, T=2, d)
    cand_mask = torch.tensor([[True, True], [True, False]])  # chain 2 has no step 2
    step_mask = cand_mask.clone()
    scale = 2.0
    got = chain_log_prob(q, e, cand_mask, torch.tensor([0, 1]), step_mask, scale)
    s = 1 / math.sqrt(2)
    # hypothesis 0, step 1: q=(1,0) vs e0=(1,0) [1], e1=(s,s) [s]; step 2: only e0=(0,1) exists
    lp0 = (2 * 1 - math.log(math.exp(2 * 1) + math.exp(2 * s))) + 0.0
    # hypothesis 1, step 1: q=(0,1) vs e0 [0], e1 [s]; target e1
    lp1 = 2 * s - math.log(math.exp(0) + math.exp(2 * s))
    assert got.tolist() == pytest.approx([lp0, lp1], abs=1e-5)


def test_supervised_loss_uses_only_hypotheses_with_gold_chains():
    lp = torch.tensor([-1.0, -3.0, -5.0])
    assert SupervisedChainLoss()(lp, torch.tensor([True, False, True])).item() == pytest.approx(3.0)
    assert SupervisedChainLoss()(lp, torch.tensor([False, False, False])).item() == 0.0


def test_mle_is_forward_plus_backward_over_n_chains():
    fwd, bwd = torch.tensor([-1.0, -2.0, -4.0]), torch.tensor([-0.5, -1.0, -2.0])
    # hypothesis A has chains 0 and 1 (N=2), hypothesis B has chain 2 (N=1)
    weights = torch.tensor([0.5, 0.5, 1.0])
    expected = ((1.5 + 3.0) / 2 + 6.0) / 2
    assert MLEChainLoss()(fwd, bwd, weights, n_hyp=2).item() == pytest.approx(expected)


def test_reinforce_uses_the_batch_mean_reward_as_baseline():
    fwd, bwd = torch.tensor([-1.0, -2.0], requires_grad=True), torch.tensor([-1.0, -1.0])
    rewards = torch.tensor([1.0, 0.0])
    baseline = rewards.mean()  # 0.5
    loss = ReinforceChainLoss()(fwd, bwd, torch.ones(2), rewards, baseline, n_hyp=2)
    expected = -((1 - 0.5) * (-2.0) + (0 - 0.5) * (-3.0)) / 2
    assert loss.item() == pytest.approx(expected)
    loss.backward()  # the right answer's chain is pushed up, the wrong one's down
    assert fwd.grad.tolist() == pytest.approx([-0.25, 0.25])


def test_global_loss_by_hand():
    h = unit([1, 0], [0, 1])
    f = unit([1, 0], [0, 1], [1, 1])
    member = torch.tensor([[True, False, True], [False, True, False]])
    scale = 1.0
    s = 1 / math.sqrt(2)
    pos0 = (1 + s) / 2  # mean σ over Ê_0 = {f0, f2}
    l0 = -(pos0 - math.log(math.exp(pos0) + math.exp(0.0)))  # negative: f1
    pos1 = 1.0
    l1 = -(pos1 - math.log(math.exp(pos1) + math.exp(0.0) + math.exp(s)))  # negatives f0, f2
    got = GlobalChainLoss()(h, f, member, scale)
    assert got.item() == pytest.approx((l0 + l1) / 2, abs=1e-5)


def test_global_loss_counts_a_fact_shared_by_two_questions_once():
    """Eq. 11 over the batch's Ê: q0 reads {x, y}, q1 reads {x, z}; x sits in both, and counts
    once in each mean and never as its own negative. Long Ê (more than 20 chains' facts) is
    not cut either."""
    from types import SimpleNamespace

    from cgr.training.cgr_module import CGRModule

    x, y, z = [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]
    vectors = torch.tensor([x, y, z])
    index = {"x": 0, "y": 1, "z": 2}
    h = unit([1, 0], [0, 1])
    module = SimpleNamespace(device=torch.device("cpu"), global_loss=GlobalChainLoss(),
                             hparams=SimpleNamespace(similarity_scale=1.0),
                             _gather=lambda t: t, _max_over_ranks=lambda n: n)  # fmt: skip
    got = CGRModule._global_loss(module, h, [["x", "y"], ["x", "z"]], index, vectors)
    l0 = math.log(1 + math.exp(0.6 - (1.0 + 0.0) / 2))  # positive mean(x, y) = 0.5; negative z
    l1 = math.log(1 + math.exp(1.0 - (0.0 + 0.8) / 2))  # positive mean(x, z) = 0.4; negative y
    assert got.item() == pytest.approx((l0 + l1) / 2, abs=1e-5)  # 0.8909
    many = [f"f{i}" for i in range(130)]  # Ê of 130 facts (f0 along h0): all in the mean
    texts = [*many, "g"]
    vecs = torch.tensor([[1.0, 0.0]] + [[0.0, 1.0]] * 129 + [[0.6, 0.8]])
    got = CGRModule._global_loss(
        module, h, [many, ["g"]], {t: i for i, t in enumerate(texts)}, vecs
    )
    l0 = math.log(1 + math.exp(0.6 - 1 / 130))
    l1 = -(0.8 - math.log(math.exp(0.8) + math.exp(0.0) + 129 * math.exp(1.0)))
    assert got.item() == pytest.approx((l0 + l1) / 2, abs=1e-5)


def test_losses_are_zero_and_differentiable_without_chains():
    lp = torch.zeros(2, requires_grad=True)
    for loss in (
        SupervisedChainLoss()(lp, torch.tensor([False, False])),
        MLEChainLoss()(lp, lp, torch.zeros(2), 0),
        GlobalChainLoss()(
            unit([1, 0]).requires_grad_(), unit([0, 1]), torch.tensor([[False]]), 1.0
        ),
    ):
        assert loss.item() == 0.0
        loss.backward()
