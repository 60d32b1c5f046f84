"""Retrieval keys and the two indexes: the FM-index and the trie agree on every prefix of every
key and on text that is not in the corpus, and both map a key back to its paragraphs."""

import random

import pytest

from cgr.retrieval.paragraphs import CorpusParagraph
from cgr.riches.index import FMKeyIndex, TrieKeyIndex
from cgr.riches.keys import build_keys, split_sentences

PARAGRAPHS = [
    CorpusParagraph("Tamberg", "Tamberg is a city. The Sella river flows through Tamberg."),
    CorpusParagraph("Sella", "The Sella is a river in Norland. It is 120 km long."),
    CorpusParagraph("Sella (disambiguation)", "The Sella river flows through Tamberg."),
    CorpusParagraph("Quotes", "He said «yes». Dr. Ode left at 5 p.m. on Monday!"),
]


def test_sentences_titles_and_paragraphs_become_keys():
    assert split_sentences("A b. C d! 3 e? f g.") == ["A b.", "C d!", "3 e? f g."]
    sentences = build_keys(PARAGRAPHS, "sentence")
    assert [k.text for k in sentences if k.paragraph == 1] == [
        "The Sella is a river in Norland.",
        "It is 120 km long.",
    ]
    assert all("«" not in k.text and "»" not in k.text for k in sentences)  # markers stay markers
    assert [k.paragraph for k in build_keys(PARAGRAPHS, "title")] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="must be one of"):
        build_keys(PARAGRAPHS, "proposition")


@pytest.mark.parametrize("kind", ["sentence", "paragraph", "title"])
def test_fm_index_and_trie_agree_and_map_keys_to_paragraphs(kind):
    keys = build_keys(PARAGRAPHS, kind)
    fm, trie = FMKeyIndex(keys), TrieKeyIndex(keys)
    rng = random.Random(0)
    probes = {k.text[:n] for k in keys for n in range(1, len(k.text) + 1)}
    probes |= {k.text[: rng.randint(1, len(k.text))] + "zq" for k in keys} | {
        "Tamberg is a river.",
        "x",
    }
    for text in sorted(probes):
        assert fm.allows(text) == trie.allows(text), text
        assert fm.complete(text) == trie.complete(text), text
        assert fm.paragraphs(text) == trie.paragraphs(text), text
        assert sorted(set(fm.continuations(text))) == sorted(trie.continuations(text)), text
    if kind == "sentence":
        assert fm.paragraphs("The Sella river flows through Tamberg.") == [0, 2]  # shared text
        assert fm.complete("It is 120 km long.") and not fm.complete("It is 120 km")
        assert fm.allows("It is 120 km") and not fm.allows("It is 121")


def test_substring_mode_allows_decoding_from_inside_a_key():
    fm = FMKeyIndex(build_keys(PARAGRAPHS, "paragraph"), substrings=True)
    assert fm.allows("river in Norl") and fm.complete("river in Norland")
    assert fm.paragraphs("flows through Tamberg") == [0, 2]
    assert sorted(fm.continuations("river")) == [
        " flows through Tamberg.",
        " flows through Tamberg.",
        " in Norland. It is 120 km long.",
    ]
    assert not fm.allows("Tamberg. The Sella is")  # never across two paragraphs


def test_an_empty_key_set_is_refused():
    with pytest.raises(ValueError, match="empty"):
        FMKeyIndex([])
    with pytest.raises(ValueError, match="empty"):
        TrieKeyIndex([])
