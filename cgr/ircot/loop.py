"""The IRCoT loop (§3.1) and its baselines, batched across questions.

IRCoT: K paragraphs for the question; then alternate *reason* (the next CoT sentence, only the
first generated sentence kept) and *retrieve* (that sentence as the query, K more paragraphs),
until a sentence says "answer is" or `max_steps` sentences; at most `max_paragraphs` in all.
OneR retrieves once with the question; NoR reads no paragraphs. A reader (CoT or Direct) then
answers from the collected paragraphs.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from cgr.data.records import OpenQuestion, Paragraph
from cgr.ircot.demos import PromptBuilder, extract_answer
from cgr.ircot.generator import Generator
from cgr.ircot.metrics import exact_match, f1_score, paragraph_recall
from cgr.ircot.retrievers import as_paragraph
from cgr.validation import at_least, one_of

METHODS = ("ircot", "oner", "nor")


@dataclass
class LoopConfig:
    method: Literal["ircot", "oner", "nor"] = "ircot"
    k: int = 4
    max_steps: int = 8
    max_paragraphs: int = 15
    skip_paragraph_words: int = 600  # IRCoT skips paragraphs longer than this
    reader: Literal["cot", "direct"] = "cot"
    reader_max_new_tokens: int = 96

    def __post_init__(self) -> None:
        one_of("loop.method", self.method, METHODS)
        one_of("loop.reader", self.reader, ("cot", "direct"))
        for name in (
            "k",
            "max_steps",
            "max_paragraphs",
            "skip_paragraph_words",
            "reader_max_new_tokens",
        ):
            at_least(f"loop.{name}", getattr(self, name), 1)


@dataclass
class QuestionState:
    question: OpenQuestion
    paragraphs: list[Paragraph] = field(default_factory=list)
    cot: list[str] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    done: bool = False
    generated_tokens: int = 0

    def add(self, found, cfg: LoopConfig, counters: Counter) -> list[str]:
        added = []
        known = {(p.title, p.text) for p in self.paragraphs}
        for p in found:
            if len(self.paragraphs) >= cfg.max_paragraphs:
                break
            if len(p.text.split()) > cfg.skip_paragraph_words:
                counters["paragraphs_skipped_too_long"] += 1
                continue
            if (p.title, p.text) not in known:
                known.add((p.title, p.text))
                self.paragraphs.append(as_paragraph(p))
                added.append(p.title)
        return added


class IRCoTRunner:
    def __init__(self, retriever, generator: Generator, cot_prompts: PromptBuilder, reader_prompts: PromptBuilder,
                 cfg: LoopConfig):  # fmt: skip
        self.retriever, self.generator, self.cfg = retriever, generator, cfg
        self.cot_prompts, self.reader_prompts = cot_prompts, reader_prompts
        self.counters: Counter[str] = Counter()

    def _retrieve(self, states: list[QuestionState], queries: list[str]) -> None:
        results = (
            self.retriever.retrieve(queries, self.cfg.k)
            if self.retriever
            else [[] for _ in queries]
        )
        for state, query, found in zip(states, queries, results, strict=True):
            if not found:
                self.counters["empty_retrievals"] += 1
            state.steps.append(
                {"query": query, "retrieved": state.add(found, self.cfg, self.counters)}
            )

    def run(self, questions: list[OpenQuestion]) -> list[dict]:
        start = time.perf_counter()
        states = [QuestionState(q) for q in questions]
        if self.cfg.method in {"ircot", "oner"}:
            self._retrieve(states, [s.question.question for s in states])
        if self.cfg.method == "ircot":
            for _ in range(self.cfg.max_steps):
                active = [s for s in states if not s.done]
                if not active:
                    break
                prompts = [
                    self.cot_prompts.build(s.question.question, s.paragraphs, " ".join(s.cot))
                    for s in active
                ]
                for state, gen in zip(
                    active,
                    self.generator.generate(
                        prompts, stop="sentence", prefix=self.cot_prompts.prefix
                    ),
                    strict=True,
                ):
                    state.generated_tokens += gen.new_tokens
                    state.cot.append(gen.text)
                    if "answer is" in gen.text.lower() or not gen.text:
                        state.done = True
                still = [
                    s for s in active if not s.done and len(s.paragraphs) < self.cfg.max_paragraphs
                ]
                if still:
                    self._retrieve(still, [s.cot[-1] for s in still])
            self.counters["never_said_answer_is"] += sum(
                "answer is" not in " ".join(s.cot).lower() for s in states
            )
        answers = self._read(states)
        seconds = (time.perf_counter() - start) / max(1, len(states))
        return [self._record(s, a, seconds) for s, a in zip(states, answers, strict=True)]

    def _read(self, states: list[QuestionState]) -> list[str]:
        prompts = [self.reader_prompts.build(s.question.question, s.paragraphs) for s in states]
        cot = self.cfg.reader == "cot"
        gens = self.generator.generate(
            prompts,
            stop="answer" if cot else "sentence",
            max_new_tokens=self.cfg.reader_max_new_tokens,
            prefix=self.reader_prompts.prefix,
        )
        answers = []
        for state, gen in zip(states, gens, strict=True):
            state.generated_tokens += gen.new_tokens
            state.reader_output = gen.text
            answer = (
                extract_answer(gen.text) if cot else gen.text.split("\n")[0].strip().rstrip(".")
            )
            if answer is None:  # no "answer is": the last sentence stands for the answer
                self.counters["reader_without_answer_is"] += 1
                answer = gen.text.strip().split("\n")[0].rstrip(".")
            answers.append(answer)
        return answers

    def _record(self, state: QuestionState, answer: str, seconds: float) -> dict:
        q = state.question
        gold_titles = {p.title for p in q.paragraphs if p.is_supporting}
        titles = [p.title for p in state.paragraphs]
        return {
            "id": q.id, "question": q.question, "gold_answers": q.answers, "prediction": answer,
            "em": exact_match(answer, q.answers), "f1": f1_score(answer, q.answers),
            "recall": paragraph_recall(titles, gold_titles), "cot": state.cot,
            "reader_output": getattr(state, "reader_output", ""), "steps": state.steps, "paragraphs": titles,
            "generated_tokens": state.generated_tokens, "seconds": seconds,
        }  # fmt: skip
