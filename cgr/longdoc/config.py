"""`cgr longdoc`'s settings, apart from the methods and the LM so that a command line is checked
before torch imports (a bad setting is refused in well under a second)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.validation import at_least, one_of

METHODS = ("d3", "d3_hier", "d3_dense", "paragraph", "chunk", "mapreduce")
LM_EVIDENCE = {"d3", "d3_hier", "d3_dense", "chunk", "mapreduce"}


@dataclass
class LongDocConfig:
    # d3 | d3_hier | d3_dense | paragraph | chunk | mapreduce (see docs/longdoc.md)
    method: Literal["d3", "d3_hier", "d3_dense", "paragraph", "chunk", "mapreduce"] = "d3"
    chunk_tokens: int = 1500  # BASE's context per call (the paper: 3,500 with gpt-3.5)
    list_tokens: int = 48  # new tokens for a list of section names or paragraph ids
    # where a list answer ends: at the first blank line ("answer") or after list_tokens ("none");
    # small LMs often write "The relevant sections are:", a blank line, then the list
    list_stop: Literal["answer", "none"] = "answer"
    retriever: Literal["dense", "bm25"] = "dense"  # paragraph baseline, d3_dense, fallback
    top_k: int = 3  # paragraphs kept by `paragraph` and `d3_dense`
    section_names: Literal["real", "random"] = "real"  # random ids: the paper's Table 4
    # how the LM picks sections: writes their names (the paper) or, for small LMs that do not
    # keep the format, scores every name as its answer and the best `select_sections` are kept
    select: Literal["generate", "likelihood"] = "generate"
    select_sections: int = 2  # likelihood selection: sections kept
    # likelihood: each name's score minus its score for a content-free question ("N/A"), so a
    # name the LM favours whatever is asked does not win every question of its paper
    # (contextual calibration, Zhao et al. 2021); "none" keeps the raw scores
    select_calibration: Literal["content_free", "none"] = "content_free"
    # when the LM names no section: keep none (the paper) or take the best one by the encoder
    empty_selection: Literal["none", "dense"] = "none"
    paragraph_summary_words: int = 25  # d3_hier: a paragraph's leading words stand for it
    answer: bool = True  # answer from the evidence with the same LM
    answer_tokens: int = 1024  # evidence budget of the answer prompt (whole paragraphs)
    answer_max_new_tokens: int = 32  # tokens of the answer
    encoder: str = "minilm"  # the dense encoder (paragraph baseline, d3_dense, the fallback)
    # every LM output stored under a hash of generator, prompt and limits, with its seconds, so
    # re-runs and methods sharing calls read it ("": off; see cgr/longdoc/lm.py)
    lm_cache: str = ".cache/cgr/longdoc/generations.sqlite"

    def __post_init__(self) -> None:
        one_of("longdoc.method", self.method, METHODS)
        one_of("longdoc.retriever", self.retriever, ("dense", "bm25"))
        one_of("longdoc.section_names", self.section_names, ("real", "random"))
        one_of("longdoc.empty_selection", self.empty_selection, ("none", "dense"))
        one_of("longdoc.select", self.select, ("generate", "likelihood"))
        one_of("longdoc.list_stop", self.list_stop, ("answer", "none"))
        one_of("longdoc.select_calibration", self.select_calibration, ("content_free", "none"))
        at_least("longdoc.select_sections", self.select_sections, 1)
        for name in ("chunk_tokens", "answer_tokens"):
            at_least(f"longdoc.{name}", getattr(self, name), 64)
        for name in ("list_tokens", "top_k", "paragraph_summary_words", "answer_max_new_tokens"):
            at_least(f"longdoc.{name}", getattr(self, name), 1)


@dataclass
class SummaryConfig:
    # extractive (a section's leading sentences, no LM) | lm (the generator writes one per section)
    method: Literal["extractive", "lm"] = "extractive"
    words: int = 40  # extractive: leading sentences up to this many words (at least one)
    input_tokens: int = 384  # lm: the text is cut to this many tokens before summarising
    max_new_tokens: int = 48  # lm: summary length bound
    cache: str = ".cache/cgr/longdoc/summaries.sqlite"  # summaries by model, settings and text (sqlite; "": off)

    def __post_init__(self) -> None:
        one_of("summaries.method", self.method, ("extractive", "lm"))
        at_least("summaries.words", self.words, 1)
        at_least("summaries.input_tokens", self.input_tokens, 16)
        at_least("summaries.max_new_tokens", self.max_new_tokens, 4)
