"""The evidence pipeline, in plain Python: questions -> hypotheses -> pool -> chains -> Ê ->
the facts each choice offers the reader.

Training (QADataModule), `cgr eval`, the Python API (`cgr.Predictor`), `cgr explain` / `serve`
and the benchmarks all call this one object, so a setting means the same thing everywhere.
Lightning wraps it; nothing here knows about Lightning (caching per split and DDP shares are the
DataModule's business)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, replace
from typing import Any

from cgr.amr.parsers import AMRConfig
from cgr.chains.builder import ChainBuilder, ChainConfig, default_workers
from cgr.data.hypothesis import HypothesisGenerator
from cgr.data.records import Question
from cgr.errors import ConfigError
from cgr.evidence.pools import build_examples
from cgr.evidence.selection import EvidenceConfig, fact_relevance, select_evidence
from cgr.reader.examples import ReaderExample
from cgr.retrieval.factory import RetrievalConfig, build_retriever


class EvidencePipeline:
    """Args: retrieval (how pools are found), chains (reasoning chains and Ê), evidence (order
    and de-duplication of each choice's facts), max_evidence (facts offered per choice),
    retrieval_batch_size (hypotheses per retrieval call), device (where queries are encoded and,
    for a flat index without a FAISS GPU build, searched: the trainer's device; None: CPU)."""

    def __init__(
        self,
        retrieval: RetrievalConfig | None = None,
        chains: ChainConfig | None = None,
        evidence: EvidenceConfig | None = None,
        max_evidence: int = 15,
        retrieval_batch_size: int = 64,
        progress: bool = True,
        device=None,
    ):
        if max_evidence < 1:
            raise ConfigError(f"data.max_evidence must be >= 1, not {max_evidence}")
        if retrieval_batch_size < 1:
            raise ConfigError(f"data.retrieval_batch_size must be >= 1, not {retrieval_batch_size}")
        self.retrieval = retrieval or RetrievalConfig()
        self.chains = chains or ChainConfig()
        self.evidence = evidence or EvidenceConfig()
        if self._reads_pools() and self.evidence.open_book_first and not self.retrieval.open_book:
            raise ConfigError(
                "data.evidence.open_book_first needs data.retrieval.open_book (the open-book file)"
            )
        self.max_evidence = max_evidence
        self.retrieval_batch_size = retrieval_batch_size
        self.progress = progress
        self.device = device
        self._retriever = None
        self._hypotheses = None  # HypothesisGenerator, or another with its generate_many
        self._chain_builder: ChainBuilder | None = None
        self._relevance = None
        self._ranker = None  # data.chains.rank_encoder's relevance, built on first use
        self._books: dict[tuple[str, ...], frozenset[str]] = {}  # files -> their text keys
        self._query_model = None  # a trained query encoder (CGR) replacing the configured one
        self._base_encoder = None  # the configured encoder, shared by retrieval and relevance

    @classmethod
    def from_settings(cls, settings: dict[str, Any], **overrides) -> EvidencePipeline:
        """From the `data` settings a checkpoint stores (QADataModule's hyper-parameters);
        settings that are not the pipeline's (files, batch sizes) are ignored. Checkpoints
        written before `data.evidence` existed read the pool in retrieval order."""
        chain_settings = dict(settings.get("chains") or {"enabled": False})
        chain_settings["amr"] = AMRConfig(**(chain_settings.get("amr") or {}))
        kwargs = {
            "retrieval": RetrievalConfig(**settings["retrieval"]),
            "chains": ChainConfig(**chain_settings),
            "evidence": EvidenceConfig(**(settings.get("evidence") or {"order": "retrieval"})),
            "max_evidence": settings.get("max_evidence", 15),
            "retrieval_batch_size": settings.get("retrieval_batch_size", 64),
        }
        return cls(**{**kwargs, **overrides})

    def settings(self) -> dict[str, Any]:
        """Plain values (stored in checkpoints; `from_settings` reads them back)."""
        return {
            "retrieval": asdict(self.retrieval),
            "chains": asdict(self.chains),
            "evidence": asdict(self.evidence),
            "max_evidence": self.max_evidence,
            "retrieval_batch_size": self.retrieval_batch_size,
        }

    # stages -------------------------------------------------------------------------------
    def pools(
        self, questions: list[Question], desc: str = "retrieving evidence"
    ) -> list[ReaderExample]:
        """records -> hypotheses -> evidence pools (one per choice, best first)."""
        if self._hypotheses is None:
            self._hypotheses = HypothesisGenerator()
        return build_examples(
            questions,
            self.retriever,
            self._hypotheses,
            self.retrieval_batch_size,
            desc=desc,
            gold=self.retrieval.method == "gold",
            progress=self.progress,
        )

    def use_hypotheses(self, generator) -> None:
        """Hypotheses from another generator (cgr.data.hypothesis.HypothesesInChild)."""
        self._hypotheses = generator

    def select(
        self, examples: list[ReaderExample], search_chains: bool = True
    ) -> list[ReaderExample]:
        """pool -> Ê (chains on; padded with pool facts by default) or the pool (chains off) ->
        at most max_evidence facts per choice, ordered and de-duplicated (`evidence`).
        `search_chains=False`: the examples already hold their chains (read from a cache)."""
        if self.chains.enabled and search_chains:
            if self._chain_builder is None:
                encode = self._base().encode if self.chains.link_similarity is not None else None
                self._chain_builder = ChainBuilder(
                    self.chains, self.progress, self._chain_book_keys(), encode
                )
            self._chain_builder.attach(examples, self._explain_relevance(examples))
        elif not self.chains.enabled:
            for ex in examples:  # a second selection without chains reads the plain pool
                ex.chains, ex.chain_facts = [], []
        relevance = None
        if self.evidence.order != "retrieval" and any(p for ex in examples for p in ex.pool):
            relevance = self._relevance_scorer()
        only_chain_facts = self.chains.enabled and not self.chains.pad_evidence
        select_evidence(examples, self.evidence, self.max_evidence, relevance, only_chain_facts,
                        self._open_book_keys())  # fmt: skip
        return examples

    def __call__(
        self, questions: list[Question], desc: str = "retrieving evidence"
    ) -> list[ReaderExample]:
        """All stages: what the reader is offered for each question."""
        return self.select(self.pools(questions, desc))

    # parts --------------------------------------------------------------------------------
    @property
    def retriever(self):
        """The configured retriever (built on first use; None for `none` and `gold`)."""
        if self._retriever is None and self._reads_pools():
            self._retriever = build_retriever(self.retrieval, self.device, self._base())
            if self._query_model is not None and hasattr(self._retriever, "encoder"):
                self._retriever.encoder = self._base().with_model(self._query_model)
        return self._retriever

    def _base(self):
        """The base encoder, one per pipeline (loaded on first use): it encodes the corpus
        when the cache lacks it and the relevance queries; a trained query encoder replaces it
        for retrieval queries only."""
        if self._base_encoder is None:
            from cgr.retrieval.encoders import TextEncoder

            cfg = self.retrieval
            self._base_encoder = TextEncoder(
                cfg.encoder, cfg.encode_batch_size, cfg.max_query_length, self.device
            )
        return self._base_encoder

    def share_cores(self, local_ranks: int) -> int:
        """Chain search's worker processes in this rank: its cores divided by the ranks on this
        node (every rank searching with every core would oversubscribe them N times); a
        `chains.workers` the user set stays as set."""
        if self.chains.workers is None and local_ranks > 1:
            self.chains = replace(self.chains, workers=max(1, default_workers() // local_ranks))
            self._chain_builder = None
        return self.chains.workers or default_workers()

    def set_device(self, device) -> None:
        """Encode (and search) on `device` from now on; parts built earlier are rebuilt there."""
        if str(device) == str(self.device):
            return
        self.device = device
        self._retriever, self._relevance, self._base_encoder = None, None, None
        self._ranker = None

    def fact_vector_sources(self) -> list:
        """(corpus, cached vectors) of the corpus and the open book, for CGR's frozen fact
        vectors (cgr.retrieval.fact_vectors); [] unless retrieval is dense and its vectors are
        all cached."""
        from cgr.data.corpus import Corpus
        from cgr.retrieval.factory import cached_vectors

        cfg = self.retrieval
        if cfg.method not in {"dense", "beam"}:
            return []
        retriever = self._retriever
        if retriever is not None:
            corpora = [s.corpus for s in (retriever.corpus, retriever.open_book) if s is not None]
        else:
            corpora = [Corpus.from_files(cfg.corpus)]
            corpora += [Corpus.from_files([cfg.open_book])] if cfg.open_book else []
        found = [(corpus, cached_vectors(cfg, corpus)) for corpus in corpora]
        return [(corpus, vectors) for corpus, vectors in found if vectors is not None]

    def _reads_pools(self) -> bool:
        return self.retrieval.method not in {"none", "gold"}

    def _open_book_keys(self) -> frozenset[str]:
        """The open book's facts as text keys, for `evidence.open_book_first` and the
        `retriever` order (open-book facts rank first)."""
        if not self.evidence.open_book_first and self.evidence.order != "retriever":
            return frozenset()
        return self._keys_of([self.retrieval.open_book] if self.retrieval.open_book else [])

    def _chain_book_keys(self) -> frozenset[str]:
        """The book's facts as text keys, for `chains.chain_order: open_book`: `chains.book`,
        else the open book (none: the order is `relevance`)."""
        return self._keys_of(self.chains.book_files(self.retrieval.open_book))

    def _keys_of(self, files: list[str]) -> frozenset[str]:
        if not files or not self._reads_pools():
            return frozenset()
        key = tuple(map(str, files))
        if key not in self._books:
            from cgr.data.corpus import text_keys

            self._books[key] = text_keys(list(key))
        return self._books[key]

    def _explain_relevance(self, examples: list[ReaderExample]):
        """What ranks a choice's facts for `data.chains.explain_top_facts` and `chain_order:
        relevance | open_book`: the reader's order."""
        if not self.chains.explain_top_facts and self.chains.chain_order == "length":
            return None
        if self.chains.rank_encoder and any(p for ex in examples for p in ex.pool):
            return fact_relevance(examples, "question_choice", self._chain_ranker())
        scorer = None
        if self.evidence.order != "retrieval" and any(p for ex in examples for p in ex.pool):
            scorer = self._relevance_scorer()
        return fact_relevance(examples, self.evidence.order if scorer else "retrieval", scorer)

    def _chain_ranker(self):
        """`data.chains.rank_encoder`'s relevance (a chain ranker), built on first use."""
        if self._ranker is None:
            from cgr.evidence.relevance import ranker_relevance

            cfg = self.retrieval
            self._ranker = ranker_relevance(
                self.chains.rank_encoder, cfg.encode_batch_size, cfg.max_query_length, self.device
            )
        return self._ranker

    def _relevance_scorer(self):
        if self._relevance is None:
            from cgr.data.corpus import Corpus
            from cgr.evidence.relevance import HypothesisRelevance

            cfg = self.retrieval
            corpus = Corpus.from_files(cfg.corpus) if cfg.corpus else None
            self._relevance = HypothesisRelevance(self._base(), corpus, cfg.cache_dir)
            if self.evidence.order == "retriever":  # the current retriever ranks the pool
                self._relevance.use_query_model(self._query_model)
        return self._relevance

    def use_query_encoder(self, model) -> None:
        """Retrieve with a trained query encoder (a CGR checkpoint) instead of the configured one."""
        self._query_model = model
        if self._retriever is not None and hasattr(self._retriever, "encoder"):
            base = self._base()
            self._retriever.encoder = base if model is None else base.with_model(model)
        if self._relevance is not None and self.evidence.order == "retriever":
            self._relevance.use_query_model(model)

    def query_fingerprint(self) -> str:
        """ "base", or a short hash of the trained query encoder's weights (pool cache keys)."""
        return "base" if self._query_model is None else self.fingerprint_of(self._query_model)

    @staticmethod
    def fingerprint_of(model) -> str:
        """A short hash of a query encoder's weights: which snapshot retrieved some evidence."""
        params = list(model.parameters())
        h = hashlib.sha1()
        for p in params[:4] + params[-4:]:
            h.update(p.detach().float().cpu().numpy().tobytes())
        return h.hexdigest()[:12]
