"""Section (and paragraph) summaries for D3's condensed outline, computed once per text.

`extractive` (default, no LM): the text's leading sentences up to `words` words — research
sections and paragraphs usually state their topic first. `lm`: the generator writes a one- or
two-sentence summary (the paper used bart-large-cnn, then LLMs; none of those is available
offline, and a 135M LM summarises poorly, so this is an option, measured in the benchmark).
LM summaries are stored in a sqlite cache keyed by a hash of the generator, settings and text
(the AMR parse cache's table: WAL, committed per batch, so a killed run resumes)."""

from __future__ import annotations

import hashlib
from collections import Counter

from cgr.generation.counting import CountingLM
from cgr.longdoc.config import SummaryConfig  # noqa: F401 (re-exported)
from cgr.nlp import split_sentences

SUMMARY_PROMPT = "Summarize the following section of a research paper in one sentence.\n\n{text}"


def lead(text: str, words: int) -> str:
    """The leading sentences of `text` up to `words` words (the first one always, cut to
    `words` words when it alone is longer)."""
    out: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        n = len(sentence.split())
        if out and count + n > words:
            break
        out.append(sentence)
        count += n
    summary = " ".join(out)
    tokens = summary.split()
    return " ".join(tokens[:words]) + (" ..." if len(tokens) > words else "")


class Summarizer:
    """`summaries(texts)` in order; LM summaries come from the cache when it has them."""

    def __init__(self, cfg: SummaryConfig, lm: CountingLM | None = None):
        if cfg.method == "lm" and lm is None:
            raise ValueError("LM summaries need a generator")
        self.cfg, self.lm = cfg, lm
        self._cache = None
        self.usage: Counter = Counter()  # LM summaries written in this run (cached ones cost 0)

    def summaries(self, texts: list[str]) -> list[str]:
        if self.cfg.method == "extractive":
            return [lead(t, self.cfg.words) for t in texts]
        from cgr.amr.cache import ParseCache

        if self._cache is None:
            self._cache = ParseCache(self.cfg.cache)
        keys = [self._key(t) for t in texts]
        by_key = dict(zip(keys, texts, strict=True))
        namespace = f"summary:{self.lm.name}:{self.cfg.input_tokens}:{self.cfg.max_new_tokens}"
        found = self._cache.parse(namespace, keys, lambda batch: self._write([by_key[k] for k in batch]),
                                  batch_size=8, desc="summarising sections")  # fmt: skip
        return [s or lead(t, self.cfg.words) for s, t in zip(found, texts, strict=True)]

    def _key(self, text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def _write(self, texts: list[str]) -> list[str]:
        prompts = [
            SUMMARY_PROMPT.format(text=self.lm.truncate(t, self.cfg.input_tokens)) for t in texts
        ]
        outputs = self.lm.ask(
            prompts, self.cfg.max_new_tokens, "summary", self.usage, stop="sentence"
        )
        return [" ".join(o.split()) for o in outputs]
