"""Sentence vectors for retrieval without importing sentence-transformers.

Inference (explain, serve, eval, the API) only encodes text: a transformer, a pooling and an L2
normalisation. sentence-transformers imports scikit-learn and SciPy whatever it is asked (2 s of
a 9 s `cgr explain`), so a folder whose modules are exactly that plain layout is read here with
transformers alone; any other layout (prompts, dense layers, a hub name) is left to
sentence-transformers. Training keeps sentence-transformers: it trains the query encoder through
its modules. The vectors equal sentence-transformers' (tests/retrieval/test_plain_encoder.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

POOLINGS = ("mean", "cls", "max")
# sentence-transformers' module classes under the names each major version writes
TRANSFORMER = {"sentence_transformers.models.Transformer",
               "sentence_transformers.base.modules.transformer.Transformer"}  # fmt: skip
POOLING = {"sentence_transformers.models.Pooling",
           "sentence_transformers.sentence_transformer.modules.pooling.Pooling"}  # fmt: skip
NORMALIZE = {"sentence_transformers.models.Normalize",
             "sentence_transformers.base.modules.normalize.Normalize"}  # fmt: skip
KNOWN_MODULES = TRANSFORMER | POOLING | NORMALIZE
# the transformer module's config in the format sentence-transformers 6 writes
_FEATURE_EXTRACTION = {
    "transformer_task": "feature-extraction",
    "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
    "module_output_name": "token_embeddings",
}


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def plain_layout(folder: Path) -> tuple[str, bool, int | None, bool] | None:
    """(pooling, normalise, max_seq_length, lower_case) when `folder` is a transformer, a
    pooling and optionally a normalisation with no prompt; None otherwise."""
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list) or not 2 <= len(modules) <= 3:
        return None
    kinds = [m.get("type") if isinstance(m, dict) else None for m in modules]
    if kinds[0] not in TRANSFORMER or modules[0].get("path") not in ("", None):
        return None
    if kinds[1] not in POOLING or (len(kinds) == 3 and kinds[2] not in NORMALIZE):
        return None
    pooling = _pooling(_json(folder / str(modules[1].get("path", "")) / "config.json"))
    settings = _json(folder / "sentence_bert_config.json") or {}
    if not isinstance(settings, dict):
        return None
    if set(settings) <= {"max_seq_length", "do_lower_case"}:
        max_length, lower = settings.get("max_seq_length"), bool(settings.get("do_lower_case"))
    elif settings == _FEATURE_EXTRACTION:
        max_length, lower = None, False
    else:
        return None
    st = _json(folder / "config_sentence_transformers.json") or {}
    prompts = st.get("prompts") or {} if isinstance(st, dict) else None
    if not isinstance(prompts, dict) or any(prompts.values()) or st.get("default_prompt_name"):
        return None
    if pooling is None or not (max_length is None or isinstance(max_length, int)):
        return None
    return pooling, len(kinds) == 3, max_length, lower


def _pooling(config) -> str | None:
    if not isinstance(config, dict):
        return None
    if "pooling_mode" in config:  # sentence-transformers 6
        mode = config["pooling_mode"]
        return mode if mode in POOLINGS and config.get("include_prompt", True) else None
    modes = [m for m in POOLINGS if config.get(f"pooling_mode_{m}_tokens" if m != "cls"
                                               else "pooling_mode_cls_token")]  # fmt: skip
    others = [k for k, v in config.items() if k.startswith("pooling_mode") and v]
    return modes[0] if len(modes) == 1 and len(others) == 1 else None


class PlainSentenceEncoder(torch.nn.Module):
    """A transformer, a pooling and an optional normalisation: what sentence-transformers
    builds for such a folder, encoding the same way (length-sorted batches, the same pooling)."""

    def __init__(self, folder: Path, pooling: str, normalize: bool, max_length, lower: bool):
        super().__init__()
        from transformers import AutoModel

        from cgr.weights import loaders

        self.auto_model = loaders.from_pretrained(AutoModel, folder, "the sentence encoder",
                                                  dtype=torch.float32)  # fmt: skip
        self.tokenizer = loaders.auto_tokenizer(folder, "the sentence encoder's tokenizer")
        self.pooling, self.normalize, self.lower = pooling, normalize, lower
        if max_length is not None:
            self.max_seq_length = max_length
        limit = getattr(self.auto_model.config, "max_position_embeddings", None)
        if limit and self.tokenizer.model_max_length > limit:
            self.tokenizer.model_max_length = limit

    @classmethod
    def from_folder(cls, folder: str | Path) -> PlainSentenceEncoder | None:
        folder = Path(folder)
        layout = plain_layout(folder) if folder.is_dir() else None
        return None if layout is None else cls(folder, *layout)

    @property
    def max_seq_length(self) -> int:
        return self.tokenizer.model_max_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.tokenizer.model_max_length = value

    @property
    def device(self) -> torch.device:
        """Where the weights are (as sentence-transformers' models say)."""
        return next(self.auto_model.parameters()).device

    def get_embedding_dimension(self) -> int:
        return int(self.auto_model.config.hidden_size)

    def _vectors(self, texts: list[str]) -> torch.Tensor:
        texts = [t.lower() for t in texts] if self.lower else texts
        features = self.tokenizer(texts, padding=True, truncation="longest_first",
                                  return_tensors="pt", max_length=self.max_seq_length)  # fmt: skip
        features = {k: v.to(self.device) for k, v in features.items()}
        tokens = self.auto_model(**features).last_hidden_state
        mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        if self.pooling == "cls":
            vectors = tokens[:, 0]
        elif self.pooling == "max":
            vectors = tokens.masked_fill(mask == 0, -1e9).max(dim=1).values
        else:
            vectors = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(vectors, p=2, dim=1) if self.normalize else vectors

    @torch.no_grad()
    def encode(self, texts: list[str], batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> np.ndarray:  # fmt: skip
        """sentence-transformers' `encode` for a list of texts, as numpy float32."""
        order = np.argsort([-len(t) for t in texts])  # sentence-transformers' batches
        chunks = []
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            vectors = self._vectors(batch)
            if normalize_embeddings:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
            chunks.append(vectors.float().cpu())
        if not chunks:
            return np.zeros((0, self.get_embedding_dimension()), dtype=np.float32)
        out = torch.cat(chunks)[torch.from_numpy(np.argsort(order))]
        return out.numpy()
