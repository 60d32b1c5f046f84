"""`cgr ircot`'s loop settings, apart from the loop so that a command line is checked before
torch and the generator import (a bad setting is refused in well under a second)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.validation import at_least, one_of

METHODS = ("ircot", "oner", "nor", "beam", "chains")


@dataclass
class LoopConfig:
    # ircot | oner | nor | beam | chains (the retrieval the loop runs)
    method: Literal["ircot", "oner", "nor", "beam", "chains"] = "ircot"
    k: int = 4  # paragraphs retrieved per step
    # beam: CGR's beam-iterative search over the paragraphs (beam_size paths, beam_steps hops);
    # chains: hops guided by AMR concepts (the bridge concept a first paragraph adds to the
    # question); both then read the k paragraphs of the best chains with the OneR reader, and
    # call no LM while retrieving
    beam_size: int = 5
    beam_steps: int = 2  # beam / chains: hops per path
    # IRCoT's query at each step: the new CoT sentence (the paper), the question with the chain
    # frontier (a concept the paragraphs so far add to the question, cgr.chains.hops), or both
    query: Literal["cot", "chains", "both"] = "cot"
    max_steps: int = 8  # reasoning steps (CoT sentences) at most per question
    max_paragraphs: int = 15  # paragraphs the reader is given at most (IRCoT: 15)
    skip_paragraph_words: int = 600  # IRCoT skips paragraphs longer than this
    # cot (reason, then 'answer is') | direct (the answer at once)
    reader: Literal["cot", "direct"] = "cot"
    reader_max_new_tokens: int = 96  # tokens the reader may write
    # when the CoT reader never says "answer is": ask again with the direct-answer prompt over the
    # same paragraphs (a short answer, counted as answer_fallback_direct), or take its first line
    answer_fallback: Literal["direct", "first_line"] = "direct"
    fallback_max_new_tokens: int = 16  # tokens of the fallback's direct answer

    def __post_init__(self) -> None:
        one_of("loop.method", self.method, METHODS)
        one_of("loop.reader", self.reader, ("cot", "direct"))
        one_of("loop.query", self.query, ("cot", "chains", "both"))
        one_of("loop.answer_fallback", self.answer_fallback, ("direct", "first_line"))
        at_least("loop.fallback_max_new_tokens", self.fallback_max_new_tokens, 1)
        for name in (
            "k",
            "max_steps",
            "max_paragraphs",
            "skip_paragraph_words",
            "reader_max_new_tokens",
            "beam_size",
            "beam_steps",
        ):
            at_least(f"loop.{name}", getattr(self, name), 1)
