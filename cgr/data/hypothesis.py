"""Question + answer -> one declarative hypothesis (the retriever's first query, paper §2.1).

The paper uses the rule-based converter of Demszky et al. (2018), which is not packaged for
Python 3.11. This is our own rule set over spaCy's dependency parse:

* blanks (``___``) are filled; a stem without a question mark is completed by the answer;
* a wh-phrase that is the subject is replaced by the answer ("Which animal lays eggs?" ->
  "A bird lays eggs.");
* an object / adverbial wh-phrase is removed, subject-aux inversion is undone and the answer goes
  into the object slot ("What do plants need to grow?" -> "Plants do need water to grow.");
* context sentences before the question are kept; negations stay where they were.
When no rule applies we fall back to "question answer", as the paper does for unsolvable cases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cgr.nlp import spacy_pipeline

# part of the pool cache key: pools retrieved for other hypotheses are not reused when it changes
RULES_VERSION = 2

_BLANK = re.compile(r"_{2,}|\(\s*\)")
_WH = {"which", "what", "who", "whom", "whose", "where", "when", "why", "how"}
_INVERTED_AUX = {
    "do", "does", "did", "is", "are", "was", "were", "can", "could", "will", "would",
    "should", "shall", "may", "might", "must", "has", "have", "had",
}  # fmt: skip
_DO = {"do", "does", "did"}
_SUBJECT_DEPS = {"nsubj", "nsubjpass", "csubj", "csubjpass"}
_KIND_OF = re.compile(r"^(?:what|which) (?:type|kind|form|sort)s? of (.+)$", re.I)
_HAPPEN = {"happen", "happens", "happened", "occur", "occurs", "occurred"}
_CONDITION = {"when", "if", "after", "before", "as", "while"}
_PREPOSITIONS = {"in", "on", "at", "from", "to", "by", "with", "into", "inside", "under", "near"}
# where the stem's last word and the answer's first meet: "used for" + "to cut" and "made of" +
# "of wood" read "used for to cut", "made of of wood"; the answer's own word wins
_FOR_TO = re.compile(r"\bfor (to \w)", re.I)
_REPEATED = re.compile(r"\b(for|of|in|on|at|by|with|from|into|to|as) \1\b", re.I)


def _repair_joins(text: str) -> str:
    return _REPEATED.sub(r"\1", _FOR_TO.sub(r"\1", text))


def _answer_phrase(answer: str) -> str:
    text = answer.strip().rstrip(".!?").strip()
    if len(text) > 1 and text[0].isupper() and text[1].islower() and text.split()[0] != "I":
        text = text[0].lower() + text[1:]
    return text


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:!?'])", r"\1", text)
    text = text.rstrip(" ?")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!" else text + "."


def _split_context(stem: str) -> tuple[str, str]:
    """Context sentences, last sentence (the one that asks)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])", stem.strip())
    return " ".join(parts[:-1]), parts[-1]


def _top_of_phrase(wh):
    """Climb from the wh-word to the head of its phrase ("how many legs", "which animal")."""
    top = wh
    phrase_heads = {"NOUN", "PROPN", "ADJ", "ADV", "PRON", "NUM"}
    while (
        top.head is not top
        and top.dep_ in {"det", "advmod", "amod", "npadvmod"}
        and top.head.pos_ in phrase_heads
    ):
        top = top.head
    return top


def _subject_span(doc, start: int) -> tuple[int, int]:
    """The subject after an inverted auxiliary: its nsubj subtree, a noun chunk, or one token."""
    span = (start, min(start + 1, len(doc)))
    for tok in doc[start:]:
        if tok.dep_ in _SUBJECT_DEPS and tok.left_edge.i >= start:
            span = (tok.left_edge.i, tok.right_edge.i + 1)
            break
    else:
        for chunk in doc.noun_chunks:
            if chunk.start == start:
                span = (chunk.start, chunk.end)
    # a participle or verb glued onto the subject by a misparse ("a desk made of") stays outside
    end = next((t.i for t in doc[span[0] + 1 : span[1]] if t.tag_.startswith("VB")), span[1])
    return span[0], end


def _convert_question(doc, answer: str) -> str | None:
    wh = next((t for t in doc if t.lower_ in _WH), None)
    if wh is None:
        return None
    top = _top_of_phrase(wh)
    start, end = top.left_edge.i, top.right_edge.i + 1
    if wh.i < start or wh.i >= end:
        start, end = wh.i, wh.i + 1
    lower = wh.lower_
    nxt = doc[wh.i + 1].lower_ if wh.i + 1 < len(doc) else ""
    if lower == "how" and nxt in {"many", "much"}:
        replacement = f"{answer} {doc[wh.i + 2 : end].text}".strip()
    elif lower == "where":
        replacement = answer if answer.split()[0].lower() in _PREPOSITIONS else f"in {answer}"
    elif lower == "why":
        replacement = f"because {answer}"
    elif lower == "how":
        replacement = f"by {answer}"
    elif lower == "whose":
        replacement = f"{answer}'s {doc[wh.i + 1 : end].text}".strip()
    else:
        kind = _KIND_OF.match(doc[start:end].text)
        replacement = (
            f"{answer} {kind.group(1)}" if kind and kind.group(1) not in answer else answer
        )
    before = doc[:start].text
    after = [t for t in doc[end:] if t.text != "?"]
    if start > 0 or not after:  # in situ ("X is an example of what?"): replace in place
        return f"{before} {replacement} {' '.join(t.text for t in after)}"
    first = after[0]
    is_subject = (top.dep_ in _SUBJECT_DEPS and first.lower_ not in _DO) or (
        first.lower_ not in _INVERTED_AUX and first.tag_.startswith("VB")
    )
    if is_subject and lower not in {"where", "why", "how", "when"}:
        happen = next((n for n, t in enumerate(after[:2]) if t.lower_ in _HAPPEN), None)
        if happen is not None:
            cut = happen + 1
            cond = " ".join(t.text for t in after[cut:])
            first_word = cond.split()[0].lower() if cond else ""
            return f"{cond}, {answer}" if first_word in _CONDITION else answer
        return f"{replacement} {' '.join(t.text for t in after)}"
    if first.lower_ not in _INVERTED_AUX:
        return None
    s0, s1 = _subject_span(doc, first.i + 1)
    subject = doc[s0:s1].text
    rest = [t for t in doc[s1:] if t.text != "?"]
    if lower in {"where", "why", "how", "when"} and not (
        lower == "how" and nxt in {"many", "much"}
    ):
        return f"{subject} {first.text} {' '.join(t.text for t in rest)} {replacement}"
    if rest and rest[-1].tag_ in {"IN", "RP"} and rest[-1].lower_ not in {"that"}:  # "made of?"
        return f"{subject} {first.text} {' '.join(t.text for t in rest)} {replacement}"
    verb_pos = next((n for n, t in enumerate(rest) if t.tag_.startswith("VB")), None)
    if verb_pos is None:
        return f"{subject} {first.text} {replacement} {' '.join(t.text for t in rest)}"
    if rest[verb_pos].lower_ == "do" and (
        verb_pos == len(rest) - 1 or rest[verb_pos + 1].lower_ in {"to", "for", "in", "when", "if"}
    ):  # "What should a student do to ...?" -> "A student should <answer> to ..."
        tail = " ".join(t.text for t in rest[verb_pos + 1 :])
        return f"{subject} {first.text} {' '.join(t.text for t in rest[:verb_pos])} {replacement} {tail}"
    head = " ".join(t.text for t in rest[: verb_pos + 1])
    tail = " ".join(t.text for t in rest[verb_pos + 1 :])
    return f"{subject} {first.text} {head} {replacement} {tail}"


class HypothesisGenerator:
    """Turns (question stem, answer) pairs into declarative sentences, parsing each stem once.
    `repair_joins=False` keeps the stem/answer seams as they fall ("used for to cut"), for
    measuring what the repair changes (benchmarks/hypotheses.py)."""

    def __init__(self, repair_joins: bool = True) -> None:
        self._nlp = spacy_pipeline()
        self.repair_joins = repair_joins

    def fallback(self, stem: str, answer: str) -> str:
        return f"{stem.strip()} {answer.strip()}"

    def generate(self, stem: str, answers: Sequence[str]) -> list[str]:
        return self.generate_many([(stem, list(answers))])[0]

    def generate_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[list[str]]:
        splits = [_split_context(stem) for stem, _ in items]
        docs = self._nlp.pipe((q for _, q in splits), disable=["ner", "lemmatizer"], batch_size=256)
        out = []
        for (stem, answers), (context, question), doc in zip(items, splits, docs, strict=True):
            out.append([self._one(stem, context, question, doc, a) for a in answers])
        return out

    def _one(self, stem: str, context: str, question: str, doc, answer: str) -> str:
        phrase = _answer_phrase(answer)
        if not phrase:
            return self.fallback(stem, answer)
        if _BLANK.search(question):
            body = _BLANK.sub(phrase, question, count=1)
        elif not question.rstrip().endswith("?"):
            body = f"{question.rstrip().rstrip(':').rstrip('.')} {phrase}"
        else:
            try:
                body = _convert_question(doc, phrase)
            except (IndexError, ValueError):
                body = None
            if body is None:
                return self.fallback(stem, answer)
        if self.repair_joins:
            body = _repair_joins(body)
        return _finish(f"{context} {_finish(body)}" if context else body)


class HypothesesInChild:
    """Hypotheses for a few known questions, generated by a child process while this one loads
    its models: spaCy's import and load (1.2 s) then run on the other core, beside torch's and
    transformers' (`cgr explain`). Any other items, or a child that fails, are generated here.
    `generate_many` as HypothesisGenerator's."""

    def __init__(self, items: Sequence[tuple[str, Sequence[str]]]) -> None:
        import json
        import subprocess
        import sys

        self.items = [(stem, list(answers)) for stem, answers in items]
        self._child = subprocess.Popen(
            [sys.executable, "-m", "cgr.data.hypothesis"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            self._child.stdin.write(json.dumps(self.items))
            self._child.stdin.close()
        except OSError:  # the child died at once: generated here instead
            pass

    def _from_child(self) -> list[list[str]] | None:
        import json
        import subprocess

        try:
            out = self._child.stdout.read()  # stdin is closed already: not communicate()
            self._child.stdout.close()
            result = json.loads(out) if self._child.wait(timeout=60) == 0 else None
        except (subprocess.TimeoutExpired, ValueError, OSError):
            self._child.kill()
            return None
        shapes = [len(answers) for _, answers in self.items]
        if not (isinstance(result, list) and [len(r) for r in result] == shapes
                and all(isinstance(h, str) for r in result for h in r)):  # fmt: skip
            return None
        return result

    def generate_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[list[str]]:
        items = [(stem, list(answers)) for stem, answers in items]
        if items == self.items and (result := self._from_child()) is not None:
            return result
        return HypothesisGenerator().generate_many(items)


if __name__ == "__main__":  # the child of HypothesesInChild: JSON items in, hypotheses out
    import json
    import sys

    json.dump(HypothesisGenerator().generate_many(json.load(sys.stdin)), sys.stdout)
