"""Backend `amrlib`: a trained parse model (for example parse_xfm_bart_large) in amrlib's
model-dir format, loaded with `amrlib.load_stog_model(model_dir=...)`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from cgr.errors import ConfigError

log = logging.getLogger(__name__)


class AmrlibParser:
    def __init__(self, model_dir: str, batch_size: int = 16, device: str | None = None):
        meta = Path(model_dir) / "amrlib_meta.json"
        if not meta.is_file():
            raise ConfigError(f"{model_dir}: not an amrlib model folder (no amrlib_meta.json)")
        import amrlib

        kwargs = dict(json.loads(meta.read_text()).get("kwargs", {}))
        # a moved folder still loads: the tokenizer is read from the model folder itself
        kwargs.setdefault("tok_name_or_path", str(model_dir))
        kwargs["batch_size"] = batch_size
        if device:
            kwargs["device"] = device
        self.model = amrlib.load_stog_model(model_dir=str(model_dir), **kwargs)
        self.name = f"amrlib:{Path(model_dir).resolve().name}"

    def parse(self, sentences: list[str]) -> list[str | None]:
        try:
            graphs = self.model.parse_sents(sentences, add_metadata=True, disable_progress=True)
        except Exception as e:  # one bad sentence must not kill the batch: retry one by one
            log.warning("amrlib batch failed (%s); parsing one by one", e)
            graphs = []
            for s in sentences:
                try:
                    graphs.extend(
                        self.model.parse_sents([s], add_metadata=True, disable_progress=True)
                    )
                except Exception:
                    graphs.append(None)
        return [_valid(g) for g in graphs]


def _valid(graph: str | None) -> str | None:
    import penman

    if not graph:
        return None
    try:
        penman.decode(graph)
    except Exception:
        return None
    return graph
