"""Dual encoders (paper §2.1, Eq. 1): a trainable query encoder and a frozen evidence encoder.

Both are sentence-transformers models, so each uses its own pooling (mean pooling for
all-MiniLM-L6-v2; the paper's BERT uses [CLS]) and vectors are L2-normalised, which makes the
inner product of the FAISS index a cosine similarity, as in the authors' code.
"""

from __future__ import annotations

import copy
import logging

import numpy as np
import torch

from cgr.models import resolve_model

log = logging.getLogger(__name__)


def load_sentence_encoder(name: str, device: str | None = None, plain: bool = False):
    """A sentence-transformers model; with `plain` (encoding only, never trained), a folder of
    the plain layout loads without importing sentence-transformers (cgr.retrieval.plain_encoder)."""
    path = resolve_model(name)
    if plain:
        from cgr.retrieval.plain_encoder import PlainSentenceEncoder

        if (encoder := PlainSentenceEncoder.from_folder(path)) is not None:
            log.info("Loading plain sentence encoder from %s", path)
            return encoder.to(str(device) if device else "cpu").eval()
    from cgr.weights.loaders import sentence_transformer

    return sentence_transformer(path, "the sentence encoder", str(device) if device else "cpu")


class TextEncoder:
    """Encodes text to normalised float32 vectors without gradients (retrieval time). The model
    loads on first use: a retriever whose corpus vectors are cached and whose queries a trained
    query encoder encodes never loads the base model (`cgr explain` loaded it twice)."""

    def __init__(self, model_name: str, batch_size: int = 64, max_length: int = 128, device=None):
        self.model_name, self.max_length = model_name, max_length
        self.batch_size, self.device = batch_size, device
        self._model = None

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_encoder(self.model_name, self.device, plain=True)
            self._model.max_seq_length = self.max_length
        return self._model

    @model.setter
    def model(self, model) -> None:
        self._model = model

    def with_model(self, model) -> TextEncoder:
        """This encoder's settings over another model (a trained query encoder)."""
        other = copy.copy(self)
        other._model = model
        return other

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @torch.no_grad()
    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
