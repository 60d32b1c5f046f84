"""RICHES' decoding settings, apart from the decoder so that `cgr riches` checks a command line
before torch imports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.errors import ConfigError
from cgr.riches.keys import KINDS
from cgr.validation import at_least, one_of


@dataclass
class DecodeConfig:
    beam_size: int = 5  # constrained beams kept while decoding a key
    # stop widening the beam once a key is complete (the paper's adaptive beam)
    adaptive: bool = True
    max_new_tokens: int = 128  # tokens generated at most per question
    top_candidates: int = 64  # tokens checked against the index per constrained beam and step
    continuations: int = 256  # corpus continuations read when too few of those are allowed
    open_marker: str = "«"  # the marker that opens a key the decoder must copy from the corpus
    close_marker: str = "»"  # the marker that closes it
    stop: str = "\n"  # the example ends at a line break (after "answer: ...")
    # the format, enforced for small LMs that do not keep to it: a thought longer than this many
    # tokens is ended by opening a key; after max_keys keys the next long thought is the answer
    max_thought_tokens: int = 16
    max_keys: int = 3  # keys (retrievals) at most per question

    def __post_init__(self) -> None:
        for name in ("beam_size", "max_new_tokens", "top_candidates", "continuations",
                     "max_thought_tokens", "max_keys"):  # fmt: skip
            at_least(f"decode.{name}", getattr(self, name), 1)
        if not self.open_marker or not self.close_marker or self.open_marker == self.close_marker:
            raise ConfigError(
                "decode.open_marker and decode.close_marker must be two different strings"
            )


@dataclass
class RichesConfig:
    # what a key is: a corpus sentence, a paragraph or a title
    key_kind: Literal["sentence", "paragraph", "title"] = "sentence"
    index: Literal["fm", "trie"] = "fm"  # the FM-index, or a marisa trie (whole keys only)
    substrings: bool = False  # fm only: a key may be any substring of a paragraph's key
    demos: str = "data/riches/demos.json"  # few-shot demonstrations (json)
    # multi_hop (keys, then the answer) | single_hop (one key)
    hops: Literal["multi_hop", "single_hop"] = "multi_hop"
    keywords: bool = True  # the keyword thoughts of Table 6
    max_key_tokens: int = 256  # longer keys are left out of the index (counted)

    def __post_init__(self) -> None:
        one_of("riches.key_kind", self.key_kind, KINDS)
        one_of("riches.index", self.index, ("fm", "trie"))
        one_of("riches.hops", self.hops, ("multi_hop", "single_hop"))
        at_least("riches.max_key_tokens", self.max_key_tokens, 1)
        if self.substrings and self.index != "fm":
            raise ConfigError("riches.substrings needs riches.index fm (a trie holds whole keys)")
