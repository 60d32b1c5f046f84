"""The CGR model (paper §2.4-2.5): the reader and a trainable query encoder trained jointly,
L = L_reader + L_S + L_D with L_D = L_mle + L_rl + L_global, every term switchable.

The evidence encoder stays frozen (its corpus vectors are cached on disk); fact vectors for the
chains of a batch are encoded on the fly by the same frozen model. In-batch negatives are
gathered across DDP ranks; the query side stays local, so gradients match a single process
with the whole batch.
"""

from __future__ import annotations

import hashlib

import torch
from torch.nn import functional as F

from cgr.errors import CGRError, ConfigError
from cgr.reader.examples import ReaderExample
from cgr.retrieval.encoders import TextEncoder, load_sentence_encoder
from cgr.training.chain_inputs import ChainInputs
from cgr.training.losses import (
    GlobalChainLoss,
    MLEChainLoss,
    ReaderLoss,
    ReinforceChainLoss,
    SupervisedChainLoss,
    chain_log_prob,
)
from cgr.training.module import ReaderModule

GRADIENT_CLIPPING = ("each", "joint")


def _key(text: str) -> int:
    """A 60-bit integer id of a fact text, comparable across DDP ranks."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16)


class CGRModule(ReaderModule):
    """Args (beyond the reader's):
    retriever_model: query/evidence encoder (packaged short name, path or hub name).
    similarity_scale: σ = scale · cosine (see cgr.training.losses).
    chains_per_hypothesis: N chains sampled per gold hypothesis for L_mle / L_rl (paper: 1).
    max_chain_facts: longest chain used in the losses.
    use_supervised / use_mle / use_rl / use_global: switch each term off for ablations.
    refresh_evidence_every_n_epochs: re-retrieve pools and chains with the trained query encoder.
    refresh_dev_on_validation: before each validation (not the sanity check), re-retrieve the dev
        evidence with the current query encoder, so best.ckpt is chosen on the evidence that
        `cgr eval` will read (it retrieves with the trained encoder); off: validation reads the
        pools retrieved at setup (cheaper, but val/acc can then differ from `cgr eval`).
    disable_dropout: set every dropout to 0 (for exact comparisons, e.g. DDP against one process).
    gradient_clipping: with trainer.gradient_clip_val, `each` clips the reader's and the query
        encoder's gradient norms separately; `joint` clips their joint norm (one norm over the
        whole model, as a plain `clip_grad_norm_(model.parameters())`). Why `each`: the chain
        losses give the query encoder gradient norms of 1.5-28 against the reader's ~0.6
        (OBQA, measured), so one joint norm shrinks the reader's step 2-30x, by how large the
        retriever's loss happens to be on that batch.
    """

    def __init__(
        self,
        reader_model: str = "minilm",
        max_length: int = 256,
        lr: float = 2e-5,
        weight_decay: float = 0.1,
        warmup_ratio: float = 0.06,
        retriever_model: str = "minilm",
        retriever_lr: float | None = None,
        query_max_length: int = 128,
        similarity_scale: float = 20.0,
        chains_per_hypothesis: int = 1,
        max_chain_facts: int = 3,
        use_supervised: bool = True,
        use_mle: bool = True,
        use_rl: bool = True,
        use_global: bool = True,
        refresh_evidence_every_n_epochs: int = 1,
        refresh_dev_on_validation: bool = True,
        sample_seed: int = 33,
        disable_dropout: bool = False,
        gradient_clipping: str = "each",
    ):
        if gradient_clipping not in GRADIENT_CLIPPING:
            raise ConfigError(
                f"model.gradient_clipping: {gradient_clipping!r} is not one of "
                f"{', '.join(GRADIENT_CLIPPING)}"
            )
        super().__init__(reader_model, max_length, lr, weight_decay, warmup_ratio)
        self.save_hyperparameters()
        self.query_encoder = load_sentence_encoder(retriever_model)
        self.query_encoder.max_seq_length = query_max_length
        self.query_encoder.train()
        for name, param in self.query_encoder.named_parameters():
            if ".pooler." in name:  # BERT's pooler is unused by mean pooling; DDP needs every
                param.requires_grad_(False)  # trainable parameter to take part in the loss
        # frozen and not a registered submodule: not in checkpoints, never updated
        self.evidence = TextEncoder(retriever_model, max_length=query_max_length)
        self.evidence.model.requires_grad_(False)
        self.reader_loss = ReaderLoss()
        self.supervised_loss = SupervisedChainLoss()
        self.mle_loss = MLEChainLoss()
        self.rl_loss = ReinforceChainLoss()
        self.global_loss = GlobalChainLoss()
        if disable_dropout:  # deterministic runs (the DDP equivalence test)
            for module in self.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
        sep = getattr(self.query_encoder.tokenizer, "sep_token", None)
        self.sep = sep or "[SEP]"

    # --- helpers ---------------------------------------------------------------------------
    def on_fit_start(self) -> None:
        self.evidence.model.to(self.device)
        datamodule = getattr(self.trainer, "datamodule", None)
        retrieval = getattr(datamodule, "retrieval", None)
        if retrieval is not None and retrieval.encoder != self.hparams.retriever_model:
            raise ConfigError(
                f"model.retriever_model ({self.hparams.retriever_model}) must be the encoder of "
                f"data.retrieval.encoder ({retrieval.encoder}): the query encoder searches its index"
            )

    def encode_queries(self, texts: list[str]) -> torch.Tensor:
        features = self.query_encoder.preprocess(texts)
        features = {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in features.items()}
        return F.normalize(self.query_encoder(features)["sentence_embedding"], dim=-1)

    @torch.no_grad()
    def encode_facts(self, texts: list[str]) -> dict[str, torch.Tensor]:
        unique = sorted(set(texts))
        if not unique:
            return {}
        vectors = torch.from_numpy(self.evidence.encode(unique)).to(self.device)
        return dict(zip(unique, vectors, strict=True))

    def _world_size(self) -> int:
        return self.trainer.world_size if self._trainer is not None else 1

    def _gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Concatenate a tensor of every rank (Lightning's all_gather; no gradient: used for
        frozen fact vectors and rewards)."""
        if self._world_size() == 1:
            return tensor
        return self.all_gather(tensor.contiguous()).flatten(0, 1)

    def _per_rank_count(self, n_local: float) -> float:
        """Global count / world size: the normaliser that makes DDP equal one big batch."""
        world = self._world_size()
        if world == 1:
            return float(n_local)
        total = torch.tensor([float(n_local)], device=self.device)
        return self.trainer.strategy.reduce(total, reduce_op="sum").item() / world

    def _chain_rows_log_prob(self, hyps: list[str], rows: list[list[str]], vectors, reverse: bool):
        """log p(c|h) for each row (a chain of facts, possibly empty = padding)."""
        T = self.hparams.max_chain_facts
        d = self.evidence.dim
        ordered = [list(reversed(r)) if reverse else list(r) for r in rows]
        query_texts, positions = [], []
        for i, (h, chain) in enumerate(zip(hyps, ordered, strict=True)):
            query = h
            for t, fact in enumerate(chain):
                query_texts.append(query)
                positions.append((i, t))
                query = f"{query} {self.sep} {fact}"
        queries = torch.zeros(len(rows), T, d, device=self.device)
        if query_texts:
            encoded = self.encode_queries(query_texts)
            index = torch.tensor(positions, device=self.device)
            queries = queries.index_put((index[:, 0], index[:, 1]), encoded)
        candidates = torch.zeros(len(rows), T, d, device=self.device)
        mask = torch.zeros(len(rows), T, dtype=torch.bool, device=self.device)
        for i, chain in enumerate(ordered):
            for t, fact in enumerate(chain):
                candidates[i, t] = vectors[fact]
                mask[i, t] = True
        all_candidates = self._gather(candidates)
        all_mask = self._gather(mask)
        offset = self.global_rank * len(rows)
        targets = torch.arange(len(rows), device=self.device) + offset
        return chain_log_prob(
            queries, all_candidates, all_mask, targets, mask, self.hparams.similarity_scale
        )

    # --- training ----------------------------------------------------------------------------
    def training_step(self, batch: list[ReaderExample], batch_idx: int):
        logits = self(batch)
        labels = torch.tensor([ex.answer_index for ex in batch], device=self.device)
        reader = self.reader_loss(logits, labels)
        rewards = (logits.argmax(-1) == labels).float()
        terms = {"reader": reader}
        hp = self.hparams
        inputs = ChainInputs.from_batch(
            batch,
            hp.max_chain_facts,
            hp.chains_per_hypothesis,
            f"{hp.sample_seed}:{self.current_epoch}",
        )
        vectors = self.encode_facts(inputs.fact_texts)
        if hp.use_supervised:
            lp = self._chain_rows_log_prob(inputs.hypotheses, inputs.gold, vectors, reverse=False)
            has_gold = torch.tensor([bool(g) for g in inputs.gold], device=self.device)
            terms["supervised"] = self.supervised_loss(lp, has_gold)
        if hp.use_mle or hp.use_rl:
            row_hyps = [inputs.hypotheses[q] for q in inputs.row_question]
            weights = torch.tensor(inputs.row_weights, device=self.device)
            fwd = self._chain_rows_log_prob(row_hyps, inputs.rows, vectors, reverse=False)
            bwd = self._chain_rows_log_prob(row_hyps, inputs.rows, vectors, reverse=True)
            n_hyp = self._per_rank_count(inputs.questions_with_chains)
            if hp.use_mle:
                terms["mle"] = self.mle_loss(fwd, bwd, weights, n_hyp)
            if hp.use_rl:
                baseline = self._gather(rewards).mean()
                row_rewards = rewards[torch.tensor(inputs.row_question, device=self.device)]
                terms["rl"] = self.rl_loss(fwd, bwd, weights, row_rewards, baseline, n_hyp)
        if hp.use_global:
            terms["global"] = self._global_loss(inputs.hypotheses, inputs.evidence, vectors)
        loss = sum(terms.values())
        if not torch.isfinite(loss):
            self._stop_on_bad_loss(loss, batch, batch_idx, terms)
        size = len(batch)
        for name, value in terms.items():
            self.log(
                f"train/loss_{name}",
                value,
                batch_size=size,
                on_step=True,
                on_epoch=True,
                sync_dist=True,
            )
        self.log(
            "train/loss",
            loss,
            batch_size=size,
            prog_bar=True,
            on_step=True,
            on_epoch=True,
            sync_dist=True,
        )
        self.log(
            "train/acc", rewards.mean(), batch_size=size, prog_bar=True, on_step=True, on_epoch=True
        )
        self.log(
            "train/hypotheses_with_chains",
            inputs.questions_with_chains / size,
            batch_size=size,
            on_epoch=True,
            on_step=False,
        )
        return loss

    def _global_loss(self, hyps: list[str], chain_facts: list[list[str]], vectors) -> torch.Tensor:
        per = max(1, self.hparams.max_chain_facts * 20)  # room for each hypothesis' Ê (padded)
        d = self.evidence.dim
        facts = torch.zeros(len(hyps) * per, d, device=self.device)
        keys = torch.zeros(len(hyps) * per, dtype=torch.long, device=self.device)
        valid = torch.zeros(len(hyps) * per, dtype=torch.bool, device=self.device)
        for i, texts in enumerate(chain_facts):
            for j, t in enumerate(texts[:per]):
                facts[i * per + j] = vectors[t]
                keys[i * per + j] = _key(t)
                valid[i * per + j] = True
        all_facts, all_keys, all_valid = (
            self._gather(facts),
            self._gather(keys),
            self._gather(valid),
        )
        membership = torch.zeros(len(hyps), len(all_keys), dtype=torch.bool, device=self.device)
        for i, texts in enumerate(chain_facts):
            if texts:
                own = torch.tensor([_key(t) for t in texts[:per]], device=self.device)
                membership[i] = torch.isin(all_keys, own) & all_valid
        return self.global_loss(
            self.encode_queries(hyps),
            all_facts,
            membership,
            self.hparams.similarity_scale,
            all_valid,
        )

    def _stop_on_bad_loss(self, loss, batch, batch_idx, terms) -> None:
        path = None
        if self._trainer is not None and self._trainer.checkpoint_callback is not None:
            folder = self.trainer.checkpoint_callback.dirpath or "checkpoints"
            path = f"{folder}/nonfinite-step{self.global_step}.ckpt"
            self.trainer.save_checkpoint(path)
        bad = ", ".join(f"{k}={v.item():.4g}" for k, v in terms.items())
        ids = ", ".join(ex.question_id for ex in batch)
        raise CGRError(
            f"non-finite loss at global step {self.global_step}, batch {batch_idx} "
            f"(questions {ids}): {bad}" + (f"; state saved to {path}" if path else "")
        )

    def configure_callbacks(self):
        """The evidence refresh rides along as a callback (cgr.training.callbacks.EvidenceRefresh),
        so every config that trains CGR gets it without listing it."""
        from cgr.training.callbacks import EvidenceRefresh

        return [
            EvidenceRefresh(
                self.hparams.refresh_evidence_every_n_epochs,
                self.hparams.refresh_dev_on_validation,
            )
        ]

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        """Called by Lightning after the gradients are unscaled (mixed precision) and reduced
        across DDP ranks, so every rank clips the same norms."""
        by_norm = gradient_clip_algorithm in (None, "norm")  # "value" clips each entry anyway
        if self.hparams.gradient_clipping == "joint" or not gradient_clip_val or not by_norm:
            super().configure_gradient_clipping(
                optimizer, gradient_clip_val, gradient_clip_algorithm
            )
            return
        for module in (self.reader, self.query_encoder):
            grads = [p for p in module.parameters() if p.grad is not None]
            if grads:
                torch.nn.utils.clip_grad_norm_(grads, float(gradient_clip_val))

    def parameter_groups(self) -> list[dict]:
        lr = self.hparams.retriever_lr if self.hparams.retriever_lr is not None else self.hparams.lr
        return super().parameter_groups() + self._decay_groups(self.query_encoder, lr)
