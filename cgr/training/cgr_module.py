"""The CGR model (paper §2.4-2.5): the reader and a trainable query encoder trained jointly,
L = L_reader + L_S + L_D with L_D = L_mle + L_rl + L_global, every term switchable.

The evidence encoder stays frozen, so the fact vectors of a batch's chains are read from the
embedding cache that retrieval wrote (cgr.retrieval.fact_vectors), not encoded again; only texts
outside the corpora go through the frozen model. A step builds its loss inputs as CPU index
tensors in one pass, moves them once, and runs the query encoder once over all its queries. In-batch negatives are
gathered across DDP ranks; the query side stays local, so gradients match a single process
with the whole batch.
"""

from __future__ import annotations

import copy
import functools
import hashlib

import torch
from torch.nn import functional as F

from cgr.errors import CGRError, ConfigError
from cgr.reader.examples import ReaderExample
from cgr.retrieval.encoders import TextEncoder, load_sentence_encoder
from cgr.training.chain_inputs import ChainInputs, ChainRows
from cgr.training.losses import (
    GlobalChainLoss,
    MLEChainLoss,
    ReaderLoss,
    ReinforceChainLoss,
    SupervisedChainLoss,
    chain_log_prob,
)
from cgr.training.module import ReaderModule
from cgr.validation import positive

GRADIENT_CLIPPING = ("each", "joint")
EVIDENCE_SNAPSHOT = "cgr_evidence_query_encoder"  # checkpoint key of the evidence snapshot
REFRESH_SNAPSHOT = "cgr_refresh_query_encoder"  # a refresh newer than the reader's epoch


@functools.lru_cache(maxsize=2**16)
def _key(text: str) -> int:
    """A 60-bit integer id of a fact text, comparable across DDP ranks."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16)


def _first_occurrences(keys: torch.Tensor) -> torch.Tensor:
    """True where a key appears for the first time (DDP ranks may gather the same fact)."""
    order = torch.arange(len(keys), device=keys.device)
    _, inverse = torch.unique(keys, return_inverse=True)
    first = torch.full_like(order, len(keys)).scatter_reduce(0, inverse, order, reduce="amin")
    return first[inverse] == order


class CGRModule(ReaderModule):
    """Args (beyond the reader's):
    retriever_model: query/evidence encoder (packaged short name, path or hub name).
    similarity_scale: σ = scale · cosine (see cgr.training.losses).
    chains_per_hypothesis: N chains sampled per gold hypothesis for L_mle / L_rl (paper: 1).
    max_chain_facts: longest chain used in the losses.
    use_supervised / use_mle / use_rl / use_global: switch each term off for ablations.
    refresh_evidence_every_n_epochs: after every n-th epoch but the last, re-retrieve train and
        dev pools and chains with the current query encoder and keep its weights as the
        evidence snapshot (saved in checkpoints; `cgr eval` retrieves with it), as the authors'
        code does before each epoch. A 1-epoch run never refreshes: there the chain losses
        train only the query encoder, which no evidence the reader reads comes from.
    refresh_dev_on_validation: a package switch (off: the authors' single snapshot): before
        each validation after the first refresh, re-retrieve dev with the current encoder
        instead (newer than the reader's training evidence; see EvidenceRefresh).
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
        refresh_dev_on_validation: bool = False,
        sample_seed: int = 33,
        disable_dropout: bool = False,
        gradient_clipping: str = "each",
        adam_eps: float = 1e-8,
        chain_reading: float = 0.0,
    ):
        if gradient_clipping not in GRADIENT_CLIPPING:
            raise ConfigError(
                f"model.gradient_clipping: {gradient_clipping!r} is not one of "
                f"{', '.join(GRADIENT_CLIPPING)}"
            )
        positive("model.similarity_scale", similarity_scale)
        if retriever_lr is not None:
            positive("model.retriever_lr", retriever_lr)
        super().__init__(
            reader_model, max_length, lr, weight_decay, warmup_ratio, adam_eps, chain_reading
        )
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
        self._facts = None  # FactVectors over the embedding cache, set at fit start
        # the query encoder's weights at the last evidence refresh (None: the base encoder's
        # evidence); a plain dict of CPU tensors, so not in the state dict nor the optimiser.
        # `_reader_snapshot` is the one the reader's last training epoch read: a refresh runs
        # at an epoch's end, before that epoch's checkpoint is written, so the two differ
        # until the next epoch starts, and the epoch's checkpoint must be scored on the older one
        self._evidence_snapshot: dict[str, torch.Tensor] | None = None
        self._reader_snapshot: dict[str, torch.Tensor] | None = None
        self.__dict__["_snapshot_copy"] = (None, None)  # (snapshot, frozen copy): no submodule

    # --- the evidence snapshot ---------------------------------------------------------------
    def take_evidence_snapshot(self) -> None:
        """Keep the current query encoder as the one the next epoch's evidence comes from."""
        state = self.query_encoder.state_dict()
        self._evidence_snapshot = {k: v.detach().to("cpu", copy=True) for k, v in state.items()}

    @property
    def has_evidence_snapshot(self) -> bool:
        return self._evidence_snapshot is not None

    def on_train_epoch_start(self) -> None:
        # from here on the reader trains on the last refresh's evidence
        self._reader_snapshot = self._evidence_snapshot

    def _snapshot_encoder(self, snapshot: dict[str, torch.Tensor] | None):
        if snapshot is None:
            return None
        kept, encoder = self.__dict__["_snapshot_copy"]
        if kept is not snapshot:  # one copy kept; holding the dict keeps `is` sound
            encoder = copy.deepcopy(self.query_encoder)
            encoder.load_state_dict(snapshot)
            encoder = encoder.eval().requires_grad_(False)
            self.__dict__["_snapshot_copy"] = (snapshot, encoder)
        return encoder

    def evidence_snapshot_encoder(self):
        """A frozen copy of the query encoder the reader's last training epoch read evidence
        from (what this checkpoint's val/acc was measured on, and what `cgr eval` auto
        retrieves with), or None: the base encoder's evidence."""
        return self._snapshot_encoder(self._reader_snapshot)

    def refresh_snapshot_encoder(self):
        """A frozen copy of the query encoder at the last refresh (the evidence the next epoch
        trains on: what a resumed run re-retrieves with), or None before any refresh."""
        return self._snapshot_encoder(self._evidence_snapshot)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        if self._reader_snapshot is not None:
            checkpoint[EVIDENCE_SNAPSHOT] = self._reader_snapshot
        if self._evidence_snapshot is not self._reader_snapshot:
            checkpoint[REFRESH_SNAPSHOT] = self._evidence_snapshot

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        super().on_load_checkpoint(checkpoint)
        self._reader_snapshot = checkpoint.get(EVIDENCE_SNAPSHOT)
        self._evidence_snapshot = checkpoint.get(REFRESH_SNAPSHOT, self._reader_snapshot)
        self.__dict__["_snapshot_copy"] = (None, None)

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
        self._use_cached_fact_vectors(datamodule)

    def encode_queries(self, texts: list[str]) -> torch.Tensor:
        features = self.query_encoder.preprocess(texts)
        features = {
            k: v.to(self.device, non_blocking=True) if torch.is_tensor(v) else v
            for k, v in features.items()
        }
        return F.normalize(self.query_encoder(features)["sentence_embedding"], dim=-1)

    def encode_distinct(self, texts: list[str]) -> torch.Tensor:
        """encode_queries over each distinct text once, one row per text of `texts`."""
        unique = list(dict.fromkeys(texts))
        encoded = self.encode_queries(unique)
        if len(unique) == len(texts):
            return encoded
        row = {t: i for i, t in enumerate(unique)}
        return encoded[torch.tensor([row[t] for t in texts]).to(self.device)]

    def fact_vectors(self, texts: list[str]) -> tuple[dict[str, int], torch.Tensor]:
        """(text -> row, rows on the device): each distinct fact of the batch once, read from the
        embedding cache when the trainer's data module has one (`_facts`, set at fit start),
        else encoded by the frozen evidence encoder. Row 0 exists even for no facts."""
        unique = list(dict.fromkeys(texts))
        if self._facts is not None:
            vectors = torch.from_numpy(self._facts(unique)) if unique else None
        else:
            vectors = torch.from_numpy(self.evidence.encode(unique)) if unique else None
        if vectors is None:
            vectors = torch.zeros(1, self.evidence.dim)
        index = {t: i for i, t in enumerate(unique)}
        return index, vectors.to(self.device, non_blocking=True)

    def _use_cached_fact_vectors(self, datamodule) -> None:
        """Frozen fact vectors from the embedding cache the retrieval wrote (same encoder and
        length, so the same vectors as encoding them again, up to float rounding)."""
        from cgr.retrieval.fact_vectors import FactVectors

        self._facts = None
        pipeline = getattr(datamodule, "pipeline", None)
        if pipeline is None or pipeline.retrieval.max_query_length != self.evidence.max_length:
            return
        sources = pipeline.fact_vector_sources()
        if sources:
            self._facts = FactVectors(self.evidence.encode, self.evidence.dim, sources)

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

    def _chain_rows_log_prob(
        self, rows: ChainRows, queries: torch.Tensor, vectors: torch.Tensor
    ) -> torch.Tensor:
        """log p(c|h) for each row (a chain of facts, possibly empty = padding); `queries` holds
        the encoded `rows.query_texts` in order, `vectors` the batch's fact vectors."""
        n, T = rows.facts.shape
        d = vectors.shape[1]
        facts = rows.facts.to(self.device, non_blocking=True)
        positions = rows.positions.to(self.device, non_blocking=True)
        placed = torch.zeros(n, T, d, device=self.device, dtype=queries.dtype)
        if len(rows.query_texts):
            placed = placed.index_put((positions[:, 0], positions[:, 1]), queries)
        mask = facts >= 0
        candidates = vectors[facts.clamp(min=0)] * mask.unsqueeze(-1)
        all_candidates = self._gather(candidates)
        all_mask = self._gather(mask)
        offset = self.global_rank * n
        targets = torch.arange(n, device=self.device) + offset
        return chain_log_prob(
            placed, all_candidates, all_mask, targets, mask, self.hparams.similarity_scale
        )

    # --- training ----------------------------------------------------------------------------
    def training_step(self, batch: list[ReaderExample], batch_idx: int):
        logits = self(batch)
        labels = torch.tensor([ex.answer_index for ex in batch]).to(self.device, non_blocking=True)
        reader = self.reader_loss(logits, labels)
        rewards = (logits.argmax(-1) == labels).float()
        terms = {"reader": reader}
        if (reading := self.chain_reading_loss(batch)) is not None:
            terms["chain_reading"] = reading
        hp = self.hparams
        inputs = self.chain_inputs(batch)
        index, vectors = self.fact_vectors(inputs.fact_texts)
        T = hp.max_chain_facts
        groups: dict[str, ChainRows] = {}
        if hp.use_supervised:
            groups["gold"] = ChainRows.build(inputs.hypotheses, inputs.gold, index, T, self.sep)
        if hp.use_mle or hp.use_rl:
            row_hyps = [inputs.hypotheses[q] for q in inputs.row_question]
            groups["fwd"] = ChainRows.build(row_hyps, inputs.rows, index, T, self.sep)
            groups["bwd"] = ChainRows.build(row_hyps, inputs.rows, index, T, self.sep, True)
        # one query-encoder pass over the step's distinct queries (chains and hypotheses: the
        # hypothesis starts the gold, forward and backward rows and is L_global's query)
        texts = [t for rows in groups.values() for t in rows.query_texts]
        texts += inputs.hypotheses if hp.use_global else []
        encoded = self.encode_distinct(texts) if texts else None
        queries, start = {}, 0
        for name, rows in groups.items():
            queries[name] = encoded[start : start + len(rows.query_texts)] if texts else None
            start += len(rows.query_texts)
        if hp.use_supervised:
            lp = self._chain_rows_log_prob(groups["gold"], queries["gold"], vectors)
            has_gold = torch.tensor([bool(g) for g in inputs.gold]).to(self.device)
            terms["supervised"] = self.supervised_loss(lp, has_gold)
        if hp.use_mle or hp.use_rl:
            weights = torch.tensor(inputs.row_weights).to(self.device, non_blocking=True)
            fwd = self._chain_rows_log_prob(groups["fwd"], queries["fwd"], vectors)
            bwd = self._chain_rows_log_prob(groups["bwd"], queries["bwd"], vectors)
            n_hyp = self._per_rank_count(inputs.questions_with_chains)
            if hp.use_mle:
                terms["mle"] = self.mle_loss(fwd, bwd, weights, n_hyp)
            if hp.use_rl:
                baseline = self._gather(rewards).mean()
                row_rewards = rewards[torch.tensor(inputs.row_question).to(self.device)]
                terms["rl"] = self.rl_loss(fwd, bwd, weights, row_rewards, baseline, n_hyp)
        if hp.use_global:
            terms["global"] = self._global_loss(encoded[start:], inputs.evidence, index, vectors)
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

    def chain_inputs(self, batch: list[ReaderExample]) -> ChainInputs:
        hp = self.hparams
        seed = f"{hp.sample_seed}:{self.current_epoch}"
        return ChainInputs.from_batch(batch, hp.max_chain_facts, hp.chains_per_hypothesis, seed)

    def _global_loss(
        self,
        hypotheses: torch.Tensor,
        chain_facts: list[list[str]],
        index: dict[str, int],
        vectors: torch.Tensor,
    ) -> torch.Tensor:
        """L_global (Eq. 11) over the batch's Ê; `hypotheses` are the encoded gold hypotheses.
        Each distinct fact of the batch (of every DDP rank) counts once, in a hypothesis' mean
        and among its negatives, however many questions' Ê hold it. Index tensors are built on
        the CPU in one pass and moved once."""
        distinct = list(dict.fromkeys(t for texts in chain_facts for t in texts))
        width = max((len(texts) for texts in chain_facts), default=0)
        n = self._max_over_ranks(len(distinct))  # every rank gathers the same shape
        fact_rows = torch.full((max(n, 1),), -1, dtype=torch.long)
        fact_keys = torch.full((max(n, 1),), -1, dtype=torch.long)  # -1: never a key
        if distinct:
            fact_rows[: len(distinct)] = torch.tensor([index[t] for t in distinct])
            fact_keys[: len(distinct)] = torch.tensor([_key(t) for t in distinct])
        own = torch.full((len(chain_facts), max(width, 1)), -2, dtype=torch.long)  # -2: padding
        for i, texts in enumerate(chain_facts):
            if texts:
                own[i, : len(texts)] = torch.tensor([_key(t) for t in texts])
        fact_rows = fact_rows.to(self.device, non_blocking=True)
        valid = fact_rows >= 0
        facts = vectors[fact_rows.clamp(min=0)] * valid.unsqueeze(-1)
        all_facts = self._gather(facts)
        all_keys = self._gather(fact_keys.to(self.device, non_blocking=True))
        all_valid = self._gather(valid) & _first_occurrences(all_keys)
        own = own.to(self.device, non_blocking=True)
        membership = (all_keys.view(1, -1, 1) == own.unsqueeze(1)).any(-1) & all_valid
        return self.global_loss(
            hypotheses, all_facts, membership, self.hparams.similarity_scale, all_valid
        )

    def _max_over_ranks(self, n: int) -> int:
        if self._world_size() == 1:
            return n
        return int(self._gather(torch.tensor([n], device=self.device)).max())

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
