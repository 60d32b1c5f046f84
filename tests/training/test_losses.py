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
