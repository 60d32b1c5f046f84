"""The IRCoT loop (§3.1) and its baselines, batched across questions.

IRCoT: K paragraphs for the question; then alternate *reason* (the next CoT sentence, only the
first generated sentence kept) and *retrieve* (that sentence as the query, K more paragraphs),
until a sentence says "answer is" or `max_steps` sentences; at most `max_paragraphs` in all.
OneR retrieves once with the question; NoR reads no paragraphs; beam retrieves once with CGR's
beam-iterative search over the paragraphs (the retriever does the hops, no LM call). A reader
(CoT or Direct) then answers from the collected paragraphs.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from cgr.data.records import OpenQuestion, Paragraph
from cgr.evaluation.qa_metrics import exact_match, f1_score, paragraph_recall
from cgr.generation.generator import Generator
from cgr.ircot.config import LoopConfig
from cgr.ircot.demos import PromptBuilder, extract_answer
from cgr.retrieval.paragraphs import as_paragraph, paragraphs_of


def first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip().rstrip(".")


@dataclass
class QuestionState:
    question: OpenQuestion
    paragraphs: list[Paragraph] = field(default_factory=list)
    cot: list[str] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    done: bool = False
    generated_tokens: int = 0
    frontier_used: set[str] = field(default_factory=set)

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
                 cfg: LoopConfig, direct_prompts: PromptBuilder | None = None, frontier=None):  # fmt: skip
        """`direct_prompts`: the direct-answer prompts of the "answer is" fallback (cot reader);
        `frontier`: a cgr.chains.hops.FrontierFinder, for `loop.query` chains / both."""
        self.retriever, self.generator, self.cfg = retriever, generator, cfg
        self.frontier = frontier
        self.cot_prompts, self.reader_prompts = cot_prompts, reader_prompts
        self.direct_prompts = direct_prompts
        self.counters: Counter[str] = Counter()

    def _retrieve(self, states: list[QuestionState], queries: list[str]) -> None:
        chains: list[list] = [[] for _ in queries]
        if hasattr(self.retriever, "retrieve_chains"):  # beam / chains: keep why each came
            chains = self.retriever.retrieve_chains(queries)
            results = [paragraphs_of(c, self.cfg.k) for c in chains]
        elif self.retriever:
            results = self.retriever.retrieve(queries, self.cfg.k)
        else:
            results = [[] for _ in queries]
        for state, query, found, why in zip(states, queries, results, chains, strict=True):
            if not found:
                self.counters["empty_retrievals"] += 1
            step = {"query": query, "retrieved": state.add(found, self.cfg, self.counters)}
            if why:  # the chains behind the paragraphs read (the best, as many as gave them)
                used = {p.title for p in found}
                step["chains"] = [
                    c.to_dict() for c in why if {p.title for p in c.paragraphs} <= used
                ]
            state.steps.append(step)

    def run(self, questions: list[OpenQuestion]) -> list[dict]:
        start = time.perf_counter()
        states = [QuestionState(q) for q in questions]
        if self.cfg.method in {"ircot", "oner", "beam", "chains"}:
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
                    self._retrieve(still, [self._step_query(s) for s in still])
            self.counters["never_said_answer_is"] += sum(
                "answer is" not in " ".join(s.cot).lower() for s in states
            )
        answers = self._read(states)
        seconds = (time.perf_counter() - start) / max(1, len(states))
        return [self._record(s, a, seconds) for s, a in zip(states, answers, strict=True)]

    def _step_query(self, state: QuestionState) -> str:
        """The retrieval query after a reasoning step (`loop.query`)."""
        if self.cfg.query == "cot" or self.frontier is None:
            return state.cot[-1]
        concept = self.frontier.next(state.question.question, state.paragraphs, state.frontier_used)
        if concept is None:
            self.counters["steps_without_frontier"] += 1
            return state.cot[-1]
        state.frontier_used.add(concept)
        base = state.question.question if self.cfg.query == "chains" else state.cot[-1]
        return f"{base} {concept}"

    def _read(self, states: list[QuestionState]) -> list[str]:
        prompts = [self.reader_prompts.build(s.question.question, s.paragraphs) for s in states]
        cot = self.cfg.reader == "cot"
        gens = self.generator.generate(
            prompts,
            stop="answer" if cot else "sentence",
            max_new_tokens=self.cfg.reader_max_new_tokens,
            prefix=self.reader_prompts.prefix,
        )
        answers: list[str | None] = []
        for state, gen in zip(states, gens, strict=True):
            state.generated_tokens += gen.new_tokens
            state.reader_output = gen.text
            answer = extract_answer(gen.text) if cot else first_line(gen.text)
            if answer is None:
                self.counters["reader_without_answer_is"] += 1
            answers.append(answer)
        missing = [i for i, a in enumerate(answers) if a is None]
        if missing and self.cfg.answer_fallback == "direct" and self.direct_prompts is not None:
            self.counters["answer_fallback_direct"] += len(missing)
            direct = [self.direct_prompts.build(states[i].question.question, states[i].paragraphs)
                      for i in missing]  # fmt: skip
            fallback = self.generator.generate(
                direct, stop="sentence", max_new_tokens=self.cfg.fallback_max_new_tokens,
                prefix=self.direct_prompts.prefix,
            )  # fmt: skip
            for i, gen in zip(missing, fallback, strict=True):
                states[i].generated_tokens += gen.new_tokens
                answers[i] = first_line(gen.text)
        # otherwise (or if the direct answer is empty too) the reader's first line stands for it
        return [
            a if a else first_line(s.reader_output) for a, s in zip(answers, states, strict=True)
        ]

    def _record(self, state: QuestionState, answer: str, seconds: float) -> dict:
        q = state.question
        gold_titles = {p.title for p in q.paragraphs if p.is_supporting}
        titles = [p.title for p in state.paragraphs]
        return {
            "id": q.id, "question": q.question, "type": q.kind, "gold_answers": q.answers, "prediction": answer,
            "em": exact_match(answer, q.answers), "f1": f1_score(answer, q.answers),
            "recall": paragraph_recall(titles, gold_titles), "cot": state.cot,
            "reader_output": getattr(state, "reader_output", ""), "steps": state.steps, "paragraphs": titles,
            "generated_tokens": state.generated_tokens, "seconds": seconds,
        }  # fmt: skip
