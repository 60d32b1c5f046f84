"""Evidence for a question about a long document, by D3 and by the baselines, all behind one
`evidence(question, usage)` call (paragraph ids in reading order, the sections chosen), and
the answer from that evidence.

* `d3` (D3-BASE, paper §3.3): the LM reads the condensed outline ("* Section: name summary")
  and names the relevant sections; then BASE: their paragraphs, marked with ids, in chunks of
  `chunk_tokens` that never split a paragraph, and the LM lists the relevant ids.
* `d3_hier` (HIERBASE): BASE over the paragraphs' summaries, then BASE over the full text of
  the candidates it kept.
* `d3_dense`: the LM's sections, then our dense encoder keeps their `top_k` paragraphs (in
  place of the paper's MonoT5 re-ranker, which is not available offline).
* `paragraph`: dense or BM25 over all paragraphs, `top_k` kept (no LM for evidence).
* `chunk` (CHUNK): BASE over the whole document in chunks.
* `mapreduce` (MAP-REDUCE OPTIMIZED): CHUNK, then BASE once more over what it kept.
"""

from __future__ import annotations

import random
import time
from collections import Counter

from cgr.generation.counting import CountingLM
from cgr.longdoc.config import LM_EVIDENCE, LongDocConfig
from cgr.longdoc.document import DocQuestion, Document
from cgr.longdoc.metrics import answer_f1, evidence_scores, official_evidence_f1
from cgr.longdoc.prompts import (
    ANSWER_INSTRUCTION,
    PARAGRAPHS_INSTRUCTION,
    SECTIONS_INSTRUCTION,
    numbered,
    outline,
    read_ids,
    read_sections,
)
from cgr.longdoc.ranking import DocumentRanker
from cgr.longdoc.summaries import Summarizer, lead

CONTENT_FREE = "N/A"  # the question of the calibration prompt


def section_labels(document: Document, kind: str) -> list[str]:
    """Names shown to the LM: the heading paths, or random ids (same per document) that carry
    no meaning, to measure what the headings contribute."""
    if kind == "real":
        return [s.name for s in document.sections]
    rng = random.Random(document.id)
    ids = rng.sample(range(100, 1000), len(document.sections))
    return [f"S{i}" for i in ids]


class LongDocQA:
    def __init__(self, cfg: LongDocConfig, lm: CountingLM | None, summarizer: Summarizer):
        if lm is None and (cfg.method in LM_EVIDENCE or cfg.answer):
            raise ValueError(f"method {cfg.method!r} (or answering) needs a generator")
        self.cfg, self.lm, self.summarizer = cfg, lm, summarizer
        self.ranker = DocumentRanker(cfg.retriever, cfg.encoder)
        self.counters: Counter[str] = Counter()
        self._said: list[dict] = []  # the LM's raw answers for the current question
        self._prior: dict[tuple, list[float]] = {}  # content-free section scores per document

    # ------------------------------------------------------------------ evidence

    def evidence(self, q: DocQuestion, usage: Counter) -> tuple[list[int], list[str]]:
        doc, method = q.document, self.cfg.method
        if method == "paragraph":
            order = self.ranker.rank(q.question, doc.paragraphs, (doc.id, "paragraphs"))
            return sorted(order[: self.cfg.top_k]), []
        if method in ("chunk", "mapreduce"):
            kept = self.base(q.question, list(enumerate(doc.paragraphs)), usage, "chunk")
            if method == "mapreduce" and kept:
                kept = self.base(
                    q.question, [(i, doc.paragraphs[i]) for i in kept], usage, "reduce"
                )
            return sorted(kept), []
        sections = self.sections(q, usage)
        candidates = sorted(i for s in sections for i in doc.sections[s].paragraphs)
        names = [doc.sections[s].name for s in sections]
        if method == "d3_dense":
            texts = [doc.paragraphs[i] for i in candidates]
            order = self.ranker.rank(q.question, texts)
            return sorted(candidates[j] for j in order[: self.cfg.top_k]), names
        if method == "d3_hier":
            words = self.cfg.paragraph_summary_words
            shown = [(i, lead(doc.paragraphs[i], words)) for i in candidates]
            candidates = self.base(q.question, shown, usage, "paragraph_summaries")
        kept = self.base(
            q.question, [(i, doc.paragraphs[i]) for i in candidates], usage, "paragraphs"
        )
        return sorted(kept), names

    def sections(self, q: DocQuestion, usage: Counter) -> list[int]:
        """D3's first step: the sections the LM names from the condensed outline."""
        doc = q.document
        if not doc.sections:
            return []
        labels = section_labels(doc, self.cfg.section_names)
        summaries = self.summarizer.summaries([doc.section_text(s) for s in doc.sections])
        text = outline(labels, summaries)
        instruction = SECTIONS_INSTRUCTION.format(outline=text, question=q.question)
        if self.cfg.select == "likelihood":
            scores = self.lm.option_scores(instruction, labels, "sections", usage)
            if self.cfg.select_calibration == "content_free":
                prior = self.prior_scores(doc.id, labels, text, usage)
                scores = [s - p for s, p in zip(scores, prior, strict=True)]
            order = sorted(range(len(labels)), key=lambda i: -scores[i])[: self.cfg.select_sections]
            self._said.append({"stage": "sections", "scores": scores, "read": order})
            return order
        answer = self.lm.ask(
            [instruction], self.cfg.list_tokens, "sections", usage, self.cfg.list_stop
        )[0]
        chosen = read_sections(answer, labels)
        self._said.append({"stage": "sections", "output": answer, "read": chosen})
        if not chosen:
            self.counters["no_section_named"] += 1
            if self.cfg.empty_selection == "dense":
                shown = [f"{n} {s}" for n, s in zip(labels, summaries, strict=True)]
                chosen = self.ranker.rank(q.question, shown, (doc.id, f"outline-{self.cfg.section_names}"))[:1]  # fmt: skip
        return chosen

    def prior_scores(
        self, doc_id: str, labels: list[str], text: str, usage: Counter
    ) -> list[float]:
        """Each name's score when the question says nothing: computed once per document (its
        tokens are counted for the first question that needs it)."""
        key = (doc_id, tuple(labels), text)
        if key not in self._prior:
            empty = SECTIONS_INSTRUCTION.format(outline=text, question=CONTENT_FREE)
            self._prior[key] = self.lm.option_scores(empty, labels, "sections_prior", usage)
        return self._prior[key]

    def chunks(
        self, question: str, paragraphs: list[tuple[int, str]]
    ) -> list[list[tuple[int, str]]]:
        """Paragraphs grouped in reading order so each BASE prompt fits `chunk_tokens`; a
        paragraph is never split (one longer than a chunk goes alone, cut to fit)."""
        budget = self.cfg.chunk_tokens - self.lm.count(PARAGRAPHS_INSTRUCTION.format(paragraphs="", question=question))  # fmt: skip
        budget = max(budget, 32)
        out: list[list[tuple[int, str]]] = []
        current: list[tuple[int, str]] = []
        used = 0
        for i, text in paragraphs:
            n = self.lm.count(f"[{i}] {text}\n")
            if n > budget:
                text, n = self.lm.truncate(text, budget - 8), budget
                self.counters["paragraphs_cut_to_chunk"] += 1
            if current and used + n > budget:
                out.append(current)
                current, used = [], 0
            current.append((i, text))
            used += n
        if current:
            out.append(current)
        return out

    def base(
        self, question: str, paragraphs: list[tuple[int, str]], usage: Counter, stage: str
    ) -> list[int]:
        """BASE: the ids the LM lists among `paragraphs`, one call per chunk."""
        if not paragraphs:
            return []
        chunks = self.chunks(question, paragraphs)
        prompts = [
            PARAGRAPHS_INSTRUCTION.format(paragraphs=numbered(c), question=question) for c in chunks
        ]
        answers = self.lm.ask(prompts, self.cfg.list_tokens, stage, usage, self.cfg.list_stop)
        kept: list[int] = []
        for chunk, answer in zip(chunks, answers, strict=True):
            read = read_ids(answer, {i for i, _ in chunk})
            self._said.append({"stage": stage, "output": answer, "read": read})
            kept.extend(i for i in read if i not in kept)
        return kept

    # ------------------------------------------------------------------ answer

    def answer(self, q: DocQuestion, ids: list[int], usage: Counter) -> str:
        doc = q.document
        budget = self.cfg.answer_tokens
        evidence: list[str] = []
        for i in ids:  # whole paragraphs in reading order while they fit
            n = self.lm.count(doc.paragraphs[i])
            if n > budget:
                if not evidence:
                    evidence.append(self.lm.truncate(doc.paragraphs[i], budget))
                break
            evidence.append(doc.paragraphs[i])
            budget -= n
        text = "\n".join(evidence) if evidence else "(none)"
        out = self.lm.ask([ANSWER_INSTRUCTION.format(evidence=text, question=q.question)],
                          self.cfg.answer_max_new_tokens, "answer", usage, stop="sentence")[0]  # fmt: skip
        return clean_answer(out)

    # ------------------------------------------------------------------ one question

    def run(self, questions: list[DocQuestion]) -> list[dict]:
        return [self._one(q) for q in questions]

    def _one(self, q: DocQuestion) -> dict:
        start = time.perf_counter()
        usage: Counter[str] = Counter()
        self._said = []
        ids, sections = self.evidence(q, usage)
        evidence_tokens = sum(v for k, v in usage.items() if k.endswith("_tokens"))
        evidence_calls = sum(v for k, v in usage.items() if k.endswith("_calls"))
        prediction = self.answer(q, ids, usage) if self.cfg.answer else ""
        scores = evidence_scores(set(ids), q.gold_evidence())
        chosen = [q.document.paragraphs[i] for i in ids]
        annotations = [(a.kind == "unanswerable", a.evidence) for a in q.answers]
        references = [a.text for a in q.answers]
        return {
            "id": q.id, "paper": q.document.id, "question": q.question,
            "sections": sections, "paragraphs": ids,
            "paragraph_texts": [q.document.paragraphs[i][:200] for i in ids],
            "evidence_precision": scores["precision"], "evidence_recall": scores["recall"],
            "evidence_f1": scores["f1"], "prediction": prediction, "gold_answers": references,
            # QASPER's scorer over evidence strings: its default and its text-evidence-only variant
            "evidence_f1_official": official_evidence_f1(chosen, annotations),
            "evidence_f1_official_text_only": official_evidence_f1(chosen, annotations, True),
            "answer_type": q.answers[0].kind if q.answers else None,
            "answer_f1": answer_f1(prediction, references) if self.cfg.answer else None,
            "evidence_tokens": evidence_tokens, "evidence_calls": evidence_calls,
            "tokens": sum(v for k, v in usage.items() if k.endswith("_tokens")),
            "calls": sum(v for k, v in usage.items() if k.endswith("_calls")),
            "usage": dict(usage), "lm_outputs": self._said,
            # the method's cost: calls read from the generation cache count at their first time
            "seconds": time.perf_counter() - start + usage.get("cache_seconds", 0.0),
        }  # fmt: skip


def clean_answer(text: str) -> str:
    """The answer without a leading "Answer:" and trailing full stop."""
    text = text.strip()
    if text.lower().startswith("answer:"):
        text = text[len("answer:") :].strip()
    return text.rstrip(".").strip()
