"""Which continuations of a decoded key exist in the corpus.

`FMKeyIndex` (fm-index, Rust): all keys joined as "\\x02key\\x03..." in one FM-index; "is this a
key prefix" is a count of "\\x02" + prefix, whose time depends on the prefix length only, not
on the corpus size; with `substrings` any substring of a key is allowed (decoding may start
inside a paragraph). `TrieKeyIndex` (marisa-trie) answers the same questions for whole keys
from a compressed trie: the comparison of benchmarks/riches.py. Both map a decoded key back to
its corpus ids (paragraph positions)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

from cgr.riches.keys import Key

START, END = "\x02", "\x03"


class FMKeyIndex:
    def __init__(self, keys: list[Key], substrings: bool = False):
        from fm_index import FMIndex

        if not keys:
            raise ValueError("cannot index an empty set of retrieval keys")
        self.keys, self.substrings = keys, substrings
        parts, self._starts, offset = [], [], 0
        for key in keys:
            self._starts.append(offset)
            parts.append(START + key.text + END)
            offset += len(key.text) + 2
        self._fm = FMIndex("".join(parts))

    def allows(self, text: str) -> bool:
        """True when `text` can still grow into a key (or, with substrings, a key's substring)."""
        return self._fm.count(text if self.substrings else START + text) > 0

    def complete(self, text: str) -> bool:
        """True when `text` is a whole key (or, with substrings, occurs in one)."""
        return bool(text) and self._fm.count(text if self.substrings else START + text + END) > 0

    def continuations(self, text: str, limit: int = 256) -> list[str]:
        """What follows `text` in up to `limit` keys it starts (or, with substrings, occurs in);
        "" where it ends a key. Lets the decoder find an allowed token the LM did not rank high."""
        pattern = text if self.substrings else START + text
        out = []
        for pos in self._fm.iter_locate(pattern):
            n = bisect_right(self._starts, pos) - 1
            start = (
                pos - self._starts[n] - 1 if self.substrings else 0
            )  # where `text` sits in the key
            out.append(self.keys[n].text[start + len(text) :])
            if len(out) >= limit:
                break
        return out

    def paragraphs(self, text: str) -> list[int]:
        """The corpus ids (paragraph positions) of every key `text` is (or occurs in)."""
        pattern = text if self.substrings else START + text + END
        found = {
            self.keys[bisect_right(self._starts, pos) - 1].paragraph
            for pos in self._fm.locate(pattern)
        }
        return sorted(found)


class TrieKeyIndex:
    def __init__(self, keys: list[Key]):
        import marisa_trie

        if not keys:
            raise ValueError("cannot index an empty set of retrieval keys")
        self.keys = keys
        self._trie = marisa_trie.Trie([k.text for k in keys])
        self._ids: dict[str, set[int]] = defaultdict(set)
        for key in keys:
            self._ids[key.text].add(key.paragraph)

    def allows(self, text: str) -> bool:
        return next(self._trie.iterkeys(text), None) is not None

    def complete(self, text: str) -> bool:
        return text in self._trie

    def continuations(self, text: str, limit: int = 256) -> list[str]:
        out = []
        for key in self._trie.iterkeys(text):
            out.append(key[len(text) :])
            if len(out) >= limit:
                break
        return out

    def paragraphs(self, text: str) -> list[int]:
        return sorted(self._ids.get(text, ()))
