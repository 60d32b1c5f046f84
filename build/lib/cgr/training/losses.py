"""Chain-aware retriever losses (paper §2.4, Eq. 5-11), one small unit each.

Similarity σ(q, e) is the cosine of L2-normalised vectors times `scale`. The authors' code uses
raw cosines (scale 1); sentence-transformers' in-batch loss multiplies by 20. We default to 20:
with scale 1 the softmax over a batch of cosines in [-1, 1] is nearly uniform and the gradient
is tiny. It is `model.similarity_scale` in the configs.

Normalisers: each loss averages over the hypotheses it covers. Under DDP the module passes the
count over all ranks divided by the world size, so that DDP's gradient averaging gives exactly
the gradient of one process holding the whole batch.

Shapes: B hypotheses, T chain steps, M candidate facts (in-batch, possibly gathered across DDP
ranks), d dimensions. A chain is given by the query vector at each step (q_1 = h,
q_t = [q_{t-1}; SEP; e_{t-1}], encoded by the trainable query encoder) and the index of its
fact among the step's candidates.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def chain_log_prob(
    queries: torch.Tensor,  # (B, T, d) normalised query vectors
    candidates: torch.Tensor,  # (M, T, d) normalised fact vectors: B_t = candidates[:, t]
    candidate_mask: torch.Tensor,  # (M, T) bool: which candidates exist at step t
    targets: torch.Tensor,  # (B,) row of each chain's own facts in `candidates`
    step_mask: torch.Tensor,  # (B, T) bool: steps inside each chain
    scale: float,
) -> torch.Tensor:
    """log p(c|h) of Eq. 5: Σ_t log softmax over B_t of σ(q_t, e), at e_t; (B,)."""
    logits = scale * torch.einsum("btd,mtd->btm", queries, candidates)  # (B, T, M)
    logits = logits.masked_fill(~candidate_mask.T.unsqueeze(0), float("-inf"))
    log_probs = logits.log_softmax(-1)  # (B, T, M)
    index = targets.view(-1, 1, 1).expand(-1, log_probs.shape[1], 1)
    own = log_probs.gather(-1, index).squeeze(-1)  # (B, T)
    return own.masked_fill(~step_mask, 0.0).sum(-1)


class SupervisedChainLoss(nn.Module):
    """L_S = -log p(c+|h+) (Eq. 6), over the hypotheses that have a gold chain."""

    def forward(
        self, log_prob: torch.Tensor, has_gold: torch.Tensor, normalizer: float | None = None
    ) -> torch.Tensor:
        if not has_gold.any():
            return log_prob.sum() * 0.0
        return -(log_prob[has_gold]).sum() / (normalizer or int(has_gold.sum()))


class MLEChainLoss(nn.Module):
    """L_mle = -1/N Σ_i [log p(c_i→|h+) + log p(c_i←|h+)] (Eq. 7-8), averaged over hypotheses.

    `weights` (B·N,) is 1/N_h for each sampled chain of a hypothesis with N_h chains, 0 for padding."""

    def forward(
        self, forward_lp: torch.Tensor, backward_lp: torch.Tensor, weights: torch.Tensor, n_hyp: int
    ) -> torch.Tensor:
        if n_hyp == 0:
            return forward_lp.sum() * 0.0
        return -((forward_lp + backward_lp) * weights).sum() / n_hyp


class ReinforceChainLoss(nn.Module):
    """L_rl = -1/N Σ_i [r - r̄] [log p(c_i→|h+) + log p(c_i←|h+)] (Eq. 9 as written): r is 1 when
    the reader is right, r̄ the mean reward of the mini-batch (the authors' code instead keeps a
    running difference). `baseline` may be passed in (the mean gathered across DDP ranks)."""

    def forward(
        self,
        forward_lp: torch.Tensor,
        backward_lp: torch.Tensor,
        weights: torch.Tensor,
        chain_rewards: torch.Tensor,  # (B·N,) reward of the hypothesis each chain belongs to
        baseline: torch.Tensor,
        n_hyp: float,
    ) -> torch.Tensor:
        if n_hyp == 0:
            return forward_lp.sum() * 0.0
        advantage = (chain_rewards - baseline).detach()
        return -(advantage * (forward_lp + backward_lp) * weights).sum() / n_hyp


class GlobalChainLoss(nn.Module):
    """L_global (Eq. 11): the hypothesis against the mean similarity to its chain facts Ê, with
    every other individual fact of the batch (B \\ Ê) as a negative."""

    def forward(
        self,
        hypotheses: torch.Tensor,  # (B, d) normalised
        facts: torch.Tensor,  # (F, d) normalised: all chain facts of the batch (all ranks)
        membership: torch.Tensor,  # (B, F) bool: fact f is in Ê of hypothesis b
        scale: float,
        fact_valid: torch.Tensor | None = None,  # (F,) bool: False for padding (DDP gathers)
        normalizer: float | None = None,  # hypotheses counted (global count / world size in DDP)
    ) -> torch.Tensor:
        has = membership.any(-1)
        if not has.any():
            return hypotheses.sum() * 0.0
        sims = scale * hypotheses @ facts.T  # (B, F)
        positive = (sims * membership).sum(-1) / membership.sum(-1).clamp(min=1)  # log ψ(Ê, h)
        excluded = membership if fact_valid is None else membership | ~fact_valid.unsqueeze(0)
        negatives = sims.masked_fill(excluded, float("-inf"))
        logits = torch.cat([positive.unsqueeze(-1), negatives], dim=-1)
        return -(logits.log_softmax(-1)[:, 0])[has].sum() / (normalizer or int(has.sum()))


class ReaderLoss(nn.Module):
    """L_reader: cross-entropy over answer choices (padding choices are masked in the logits)."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), labels)
