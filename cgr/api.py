"""The Python API: a trained model answers questions and shows its evidence; a retriever finds
facts. In the style of sentence-transformers:

    import cgr
    model = cgr.Predictor.from_pretrained("checkpoints/default/model")  # `cgr export`'s folder
    prediction = model.predict("Which gas do plants take in?", ["oxygen", "carbon dioxide"])
    prediction.answer, prediction.scores, prediction.answer_choice.chains

    retriever = cgr.Retriever.from_corpus(["data/sample/facts.txt"])
    retriever.retrieve("plants take in carbon dioxide", k=5)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from cgr.data.limits import make_question  # noqa: F401 - part of the API
from cgr.data.loaders import load_multiple_choice
from cgr.data.records import Question
from cgr.errors import ConfigError
from cgr.evaluation.prediction import Prediction
from cgr.evidence.pipeline import EvidencePipeline
from cgr.pretrained.loading import module_class
from cgr.pretrained.source import open_model
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact
from cgr.retrieval.factory import RetrievalConfig, build_retriever


def _device(device: str | None) -> str:
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


class Predictor:
    """A trained reader (ReaderModule or CGRModule; a model folder's MultipleChoiceReader) with
    the evidence pipeline it was trained with: retrieval, chains and evidence selection exactly
    as `cgr eval` runs them.
    `chain_order`: "supported_first" (default) shows each choice's chains that the reader
    supports first, each group in the search's order (the first `support_candidates` of the
    search's order are scored; cgr.evaluation.support), "support" ranks them by the support
    value, "search" keeps the chain search's order and only reports the support."""

    def __init__(self, module, pipeline: EvidencePipeline, batch_size: int = 16):
        from cgr.evaluation.support import CANDIDATES, DEFAULT_ORDER

        self.module, self.pipeline, self.batch_size = module.eval(), pipeline, batch_size
        self.reader = getattr(module, "reader", module)  # scores outside a Trainer
        self.chain_order, self.support_candidates = DEFAULT_ORDER, CANDIDATES
        self.support_reader = None  # a support reader (use_support_reader), else self.reader
        self.chain_margin = None  # the margin a supporting chain needs (None: the stated default)

    def use_support_reader(self, folder: str | Path | None) -> Predictor:
        """Each chain's support judged by the support reader `folder` (`cgr support-reader`)
        instead of the model's reader; the answers stay the reader's. None: the reader again."""
        from cgr.pretrained.support_reader import load_support_reader

        self.support_reader = (
            None if folder is None else load_support_reader(folder).to(self.reader.device)
        )
        return self

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        """Checked whenever it is set, after loading too (questions scored together)."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"batch_size must be a whole number >= 1, not {value!r}")
        self._batch_size = value

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path,
        device: str | None = None,
        chains: bool | None = None,
        batch_size: int = 16,
        query_encoder: str = "auto",
        data_roots: Sequence[str | Path] = (),
    ) -> Predictor:
        """Loads with `weights_only=True` (a crafted pickle is refused). `chains=False` reads the
        plain pool instead of Ê; None keeps the checkpoint's setting. `query_encoder`: a CGR
        checkpoint retrieves with its "trained" query encoder, the "base" one it started from,
        or ("auto", as `cgr eval`) the snapshot its reader's last training evidence came from.
        `data_roots`: folders whose files (corpus, open book) a checkpoint written elsewhere
        may name (cgr.pretrained.paths)."""
        return cls._from_opened(
            open_model(path, query_encoder, data_roots), device, chains, batch_size
        )

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: str | None = None,
        chains: bool | None = None,
        batch_size: int = 16,
        data_roots: Sequence[str | Path] = (),
    ) -> Predictor:
        """A model folder `cgr export` wrote (safetensors weights, cgr_config.json): no pickle
        is read. The other arguments as `from_checkpoint`."""
        if not Path(path).is_dir():
            raise ConfigError(f"{path}: not a model folder (from_checkpoint opens checkpoints)")
        return cls._from_opened(open_model(path, data_roots=data_roots), device, chains, batch_size)

    @classmethod
    def _from_opened(cls, opened, device, chains, batch_size) -> Predictor:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a whole number >= 1, not {batch_size!r}")
        pipeline = EvidencePipeline.from_settings(opened.data, progress=False)
        if chains is not None:
            pipeline.chains.enabled = chains
        module, encoder = opened.load(_device(device), lightning=False)
        if encoder is not None:  # CGR
            pipeline.use_query_encoder(encoder)
        predictor = cls(module, pipeline, batch_size).use_support_reader(opened.support_reader)
        predictor.chain_order = opened.chain_order or predictor.chain_order
        predictor.chain_margin = (
            opened.chain_margin
        )  # fitted on the model's training questions, when it was
        return predictor

    def predict(
        self,
        question: str,
        choices: Sequence[str],
        labels: Sequence[str] | None = None,
        question_id: str = "question",
    ) -> Prediction:
        """Scores every choice of one question; labels default to A, B, C, ..."""
        return self.predict_questions([make_question(question, choices, labels, question_id)])[0]

    def predict_file(self, path: str | Path) -> list[Prediction]:
        """Every question of an official-format OBQA / ARC jsonl file."""
        if not isinstance(path, str | Path):
            raise ConfigError(f"path must be a file path, not {type(path).__name__}")
        return self.predict_questions(load_multiple_choice(path))

    def predict_questions(self, questions: list[Question]) -> list[Prediction]:
        return self.predict_examples(self.pipeline(questions))

    @torch.no_grad()
    def predict_examples(self, examples: list[ReaderExample]) -> list[Prediction]:
        """Scores examples that already hold their evidence (`self.pipeline`'s output, e.g.
        one pool selected two ways)."""
        from cgr.evaluation.prediction import predictions

        out: list[Prediction] = []
        for start in range(0, len(examples), self.batch_size):
            batch = examples[start : start + self.batch_size]
            scored = self.reader.score(batch)
            out += predictions(self.reader, scored, self.chain_order, self.support_candidates,
                               self.support_reader, self.chain_margin)  # fmt: skip
        return out


class Retriever:
    """Fact retrieval alone: dense (one step), beam (iterative), BM25 or TF-IDF over corpus
    files, with the package's cached corpus vectors and FAISS index."""

    def __init__(self, config: RetrievalConfig, query_model=None):
        if config.method in {"none", "gold"}:
            raise ConfigError(f"retrieval.method {config.method!r} retrieves nothing")
        self.config = config
        self._retriever = build_retriever(config)
        if query_model is not None and hasattr(self._retriever, "encoder"):
            self._retriever.encoder.model = query_model

    @classmethod
    def from_corpus(
        cls, corpus: str | Sequence[str], method: str = "dense", encoder: str = "minilm", **settings
    ) -> Retriever:
        """`settings`: any other RetrievalConfig field (beam_size, steps, open_book, ...)."""
        files = [corpus] if isinstance(corpus, str) else list(corpus)
        return cls(RetrievalConfig(method=method, corpus=files, encoder=encoder, **settings))

    @classmethod
    def from_checkpoint(cls, path: str | Path, data_roots: Sequence[str | Path] = ()) -> Retriever:
        """The retrieval a checkpoint (or model folder) was trained with, with CGR's trained
        query encoder (the one its evidence came from)."""
        opened = open_model(path, data_roots=data_roots)
        config = RetrievalConfig(**opened.data["retrieval"])
        query_model = None
        if opened.folder is not None or module_class(opened.checkpoint).__name__ == "CGRModule":
            _, query_model = opened.load()
        return cls(config, query_model)

    def retrieve(
        self, queries: str | Sequence[str], k: int = 10
    ) -> list[RetrievedFact] | list[list[RetrievedFact]]:
        """One query: its best `k` facts; a list of queries: a list of such lists."""
        if isinstance(k, bool) or not isinstance(k, int):
            raise ConfigError(f"k must be a whole number, not {k!r}")
        if k < 1:
            raise ConfigError(f"k must be >= 1, not {k}")
        single = isinstance(queries, str)
        if not single and (queries is None or not all(isinstance(q, str) for q in queries)):
            raise ConfigError("queries must be a string or a list of strings")
        with torch.no_grad():
            found = self._retriever.retrieve([queries] if single else list(queries), k)
        if any(len(facts) < k for facts in found):
            warnings.warn(
                f"fewer than k={k} facts for a query: data.retrieval.beam_size "
                f"({self.config.beam_size}) and steps ({self.config.steps}) bound what one query "
                "retrieves; raise them for more",
                stacklevel=2,
            )
        return found[0] if single else found
