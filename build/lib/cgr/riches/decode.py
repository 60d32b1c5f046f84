"""One decode that interleaves free text ("thoughts": keywords, the answer) with retrieval keys
that must exist verbatim in the corpus (RICHES §3).

Text between the markers (« and », configurable) is constrained: a beam may only take a token
whose text keeps the key a prefix of some corpus key (the key index answers), and may only close
the key when it is a whole key. Outside the markers decoding is free. Beam search over the
LM's log-probabilities keeps the K best sequences; with the **adaptive beam** (§3.3) a beam
outside a key is extended by its one best token (greedy) and only a beam inside a key by its K
best allowed tokens, so the beam's width goes to the search over the corpus, not to variants of
the free text. Constrained candidates are checked best first among the `top_candidates` most
likely tokens; a beam inside a key with no allowed token among them is dropped."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import torch

from cgr.riches.config import DecodeConfig


class KeyIndex(Protocol):
    def allows(self, text: str) -> bool: ...
    def complete(self, text: str) -> bool: ...
    def continuations(self, text: str, limit: int = 256) -> list[str]: ...


@dataclass
class Beam:
    ids: list[int] = field(default_factory=list)
    text: str = ""
    logprob: float = 0.0
    done: bool = False
    free_tokens: int = 0  # tokens since the last marker (the current thought's length)


def open_key(text: str, cfg: DecodeConfig) -> str | None:
    """The key being decoded at the end of `text` (after its last open marker), or None outside."""
    start = text.rfind(cfg.open_marker)
    if start < 0 or text.rfind(cfg.close_marker) > start:
        return None
    return text[start + len(cfg.open_marker) :].lstrip()


def step_allowed(text: str, piece: str, index: KeyIndex, cfg: DecodeConfig) -> bool:
    """May `piece` follow `text`? Free text may do anything but close a key that is not open;
    inside a key the key must stay a prefix of a corpus key, and only a whole key may close."""
    key = open_key(text, cfg)
    if key is None:
        if cfg.close_marker in piece:
            return False
        opened = open_key(text + piece, cfg)  # the piece may open a key and start it
        return not opened or index.allows(opened)
    if cfg.close_marker in piece:
        cut = piece.index(cfg.close_marker)
        rest = piece[cut + len(cfg.close_marker) :]
        return index.complete((key + piece[:cut]).strip()) and cfg.open_marker not in rest
    if "\n" in piece or cfg.open_marker in piece:
        return False
    grown = key + piece if key else piece.lstrip()
    return not grown or index.allows(grown)


class ConstrainedDecoder:
    """RICHES decoding with a Hugging Face causal LM (the IRCoT generator's model and tokenizer)."""

    def __init__(self, model, tokenizer, index: KeyIndex, cfg: DecodeConfig | None = None):
        self.model, self.tokenizer, self.index = model, tokenizer, index
        self.cfg = cfg or DecodeConfig()
        tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.pieces = [tokenizer.convert_tokens_to_string([t]) if t else "" for t in tokens]
        self.eos = tokenizer.eos_token_id
        self.open_token = self._token(" " + self.cfg.open_marker)
        self.answer_token = self._token(" answer")
        self.steps = 0

    def _token(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False).input_ids
        return ids[0]  # its first token: the marker (or word) with its leading space

    @torch.no_grad()
    def decode(self, prompt: str) -> Beam:
        cfg = self.cfg
        ids = self.tokenizer(prompt, return_tensors="pt").input_ids.to(self.model.device)
        out = self.model(input_ids=ids, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
        beams = [Beam()]
        for _ in range(cfg.max_new_tokens):
            self.steps += 1
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            candidates: list[tuple[float, int, int]] = []  # (score, beam, token or -1 = keep)
            for b, beam in enumerate(beams):
                if beam.done:
                    candidates.append((beam.logprob, b, -1))
                    continue
                candidates.extend(
                    (beam.logprob + lp, b, tok) for lp, tok in self._expand(beam, logprobs[b])
                )
            if not candidates:
                break
            candidates.sort(key=lambda c: -c[0])
            chosen = candidates[: cfg.beam_size]
            beams = [self._extend(beams[b], tok, score) for score, b, tok in chosen]
            if all(beam.done for beam in beams):
                break
            order = torch.tensor([b for _, b, _ in chosen], device=ids.device)
            cache.reorder_cache(order)
            last = torch.tensor(
                [[beam.ids[-1] if beam.ids else self.eos] for beam in beams], device=ids.device
            )
            out = self.model(input_ids=last, past_key_values=cache, use_cache=True)
            cache, logits = out.past_key_values, out.logits[:, -1]
        return max(beams, key=lambda beam: beam.logprob)

    def _expand(self, beam: Beam, logprobs: torch.Tensor) -> list[tuple[float, int]]:
        """The tokens this beam may take next, best first: K allowed ones inside a key (or
        everywhere without the adaptive beam), its single best token outside a key."""
        cfg = self.cfg
        inside = open_key(beam.text, cfg) is not None
        forced = None if inside else self._forced(beam)
        if forced is not None:
            return [(float(logprobs[forced]), forced)]
        width = cfg.beam_size if inside or not cfg.adaptive else 1
        values, tokens = torch.topk(logprobs, min(cfg.top_candidates, logprobs.shape[-1]))
        found: list[tuple[float, int]] = []
        for lp, tok in zip(values.tolist(), tokens.tolist(), strict=True):
            if math.isinf(lp):
                break
            if tok == self.eos or step_allowed(beam.text, self.pieces[tok], self.index, cfg):
                if tok == self.eos and inside:
                    continue
                found.append((lp, tok))
                if len(found) == width:
                    break
        if inside and len(found) < width:
            found = self._from_corpus(beam, logprobs, found, width)
        return found

    def _from_corpus(self, beam: Beam, logprobs: torch.Tensor, found: list, width: int) -> list:
        """Inside a key, when too few of the LM's likeliest tokens are allowed: the first token
        of each way the corpus continues the key (the close marker where a key ends), scored
        by the LM, so a key is always finished, never abandoned for a lack of candidates."""
        cfg = self.cfg
        key = open_key(beam.text, cfg) or ""
        options = set()
        for rest in self.index.continuations(key, cfg.continuations):
            piece = (" " if not key else "") + rest if rest else " " + cfg.close_marker
            options.add(self.tokenizer(piece, add_special_tokens=False).input_ids[0])
        seen = {tok for _, tok in found}
        extra = [(float(logprobs[t]), t) for t in options if t not in seen]
        extra = [
            (lp, t) for lp, t in extra if step_allowed(beam.text, self.pieces[t], self.index, cfg)
        ]
        return sorted(found + extra, key=lambda c: -c[0])[:width]

    def _forced(self, beam: Beam) -> int | None:
        """The token the format requires now, if any: a key after a long thought, the answer
        after a long thought once max_keys keys are quoted."""
        cfg = self.cfg
        after = beam.text[beam.text.rfind(cfg.close_marker) + 1 :]
        if beam.free_tokens < cfg.max_thought_tokens or "answer:" in after:
            return None
        keys = beam.text.count(cfg.close_marker)
        return self.open_token if keys < cfg.max_keys else self.answer_token

    def _extend(self, beam: Beam, tok: int, score: float) -> Beam:
        if tok < 0:
            return beam
        text = beam.text + ("" if tok == self.eos else self.pieces[tok])
        done = tok == self.eos or (
            open_key(text, self.cfg) is None and self.cfg.stop and self.cfg.stop in text.lstrip()
        )
        piece = self.pieces[tok] if tok != self.eos else ""
        marker = self.cfg.open_marker in piece or self.cfg.close_marker in piece
        return Beam(
            beam.ids + [tok], text, score, bool(done), 0 if marker else beam.free_tokens + 1
        )
