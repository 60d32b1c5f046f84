"""Packs one answer choice for the reader: `question [SEP] choice` and whole evidence facts.

Why not the tokenizer's own truncation: cutting the longest segment first removed the end of the
first segment (the answer choice itself) whenever a long ARC question met a long fact list, and it
cut the last fact mid-sentence. Here the choice is always kept whole, a question that leaves too
little room is shortened from its start (ARC puts context first and the actual question last),
and facts are added whole, in the order given (most relevant first), while they fit.
"""

from __future__ import annotations

from dataclasses import dataclass

_FINAL_PUNCT = (".", "!", "?", ";", ":")


def as_sentence(fact: str) -> str:
    """A fact ends with a full stop, so a list of facts reads as sentences, not one run-on."""
    fact = fact.strip()
    return fact if fact.endswith(_FINAL_PUNCT) else f"{fact}."


@dataclass
class PackedChoice:
    first: str  # question (possibly shortened from its start) + separator + choice
    second: str  # the facts read, joined
    read: tuple[int, ...]  # positions of the offered facts that fit whole (the facts read)
    question_cut: bool  # the question lost its start to fit


class EvidencePacker:
    """Args:
    tokenizer: the reader's tokenizer (token counts are its own).
    max_length: the reader's input length, special tokens included.
    min_evidence_tokens: room kept for facts when a long question would take it all.
    """

    def __init__(self, tokenizer, max_length: int, min_evidence_tokens: int = 32):
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.min_evidence_tokens = min_evidence_tokens
        self.sep = tokenizer.sep_token or ""
        self.specials = tokenizer.num_special_tokens_to_add(pair=True)

    def _lengths(self, texts: list[str]) -> dict[str, int]:
        unique = sorted(set(texts))
        if not unique:
            return {}
        ids = self.tokenizer(unique, add_special_tokens=False)["input_ids"]
        return {t: len(i) for t, i in zip(unique, ids, strict=True)}

    def _shorten_question(self, question: str, keep_tokens: int) -> str:
        """The last `keep_tokens` tokens of the question, cut at a token boundary."""
        if keep_tokens <= 0:
            return ""
        enc = self.tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        if len(offsets) <= keep_tokens:
            return question
        return question[offsets[len(offsets) - keep_tokens][0] :].lstrip()

    def pack(self, items: list[tuple[str, str, list[str]]]) -> list[PackedChoice]:
        """items: (question, choice, facts best first) per choice; one PackedChoice each."""
        facts_all = [as_sentence(f) for _, _, facts in items for f in facts]
        lengths = self._lengths([q for q, _, _ in items] + [c for _, c, _ in items] + facts_all)
        sep_tokens = 1 if self.sep else 0
        room = self.max_length - self.specials
        out = []
        for question, choice, facts in items:
            sentences = [as_sentence(f) for f in facts]
            choice_len = min(lengths[choice], room)
            reserve = min(self.min_evidence_tokens, sum(lengths[s] for s in sentences))
            q_room = max(0, room - reserve - choice_len - sep_tokens)
            cut = lengths[question] > q_room
            q_len = lengths[question]
            if cut:
                question = self._shorten_question(question, q_room)
                q_len = q_room
            used = q_len + sep_tokens + choice_len
            chosen = []
            for i, s in enumerate(sentences):
                if used + lengths[s] <= room:
                    chosen.append(i)
                    used += lengths[s]
            first = f"{question} {self.sep} {choice}" if self.sep else f"{question} {choice}"
            second = " ".join(sentences[i] for i in chosen)
            out.append(PackedChoice(first.strip(), second, tuple(chosen), cut))
        return out
