"""Constrained decoding: the step rule on its own, then real SmolLM2 decodes whose every quoted
key is found verbatim in the corpus."""

import pytest

from cgr.riches.decode import ConstrainedDecoder, DecodeConfig, open_key, step_allowed
from cgr.riches.index import FMKeyIndex, TrieKeyIndex
from cgr.riches.keys import build_keys
from cgr.riches.prompts import RichesPrompt, parse_decode
from tests.conftest import ROOT
from tests.riches.test_index import PARAGRAPHS

CFG = DecodeConfig()


@pytest.fixture(scope="module")
def index():
    return FMKeyIndex(build_keys(PARAGRAPHS, "sentence"))


def test_a_key_may_only_grow_into_a_corpus_key_and_close_when_whole(index):
    assert open_key("keyword: x « The Sel", CFG) == "The Sel"
    assert open_key("keyword: x « The Sella is a river in Norland. » answer:", CFG) is None
    text = "keyword: river « The Sel"
    assert step_allowed(text, "la", index, CFG) and not step_allowed(text, "lo", index, CFG)
    assert not step_allowed(text, " »", index, CFG)  # not a whole key yet
    whole = "keyword: river « The Sella is a river in Norland."
    assert step_allowed(whole, " »", index, CFG) and step_allowed(whole, "»", index, CFG)
    assert step_allowed("keyword: river", " «", index, CFG)  # free text may open a key
    assert step_allowed("keyword: river «", " The", index, CFG)
    assert not step_allowed("keyword: river «", " Paris", index, CFG)
    assert not step_allowed("keyword: river", " »", index, CFG)  # nothing open to close
    assert not step_allowed("keyword: river « The", "\n", index, CFG)


def test_a_decode_is_read_as_keys_and_an_answer():
    keys, answer = parse_decode(
        " keyword: a « First key. » keyword: b « Second key. » answer: the Sella.\n"
    )
    assert keys == ["First key.", "Second key."] and answer == "the Sella"
    assert parse_decode(" keyword: a « Unfinished") == ([], "")


def test_prompts_follow_the_paper_format_with_or_without_keywords():
    demos = ROOT / "data" / "riches" / "demos.json"
    prompt = RichesPrompt.from_file(demos).build("Which river flows through Tamberg?")
    assert prompt.endswith("question: Which river flows through Tamberg?\npassage:")
    assert prompt.count("keyword:") == 6 and prompt.count(" answer: ") == 3
    bare = RichesPrompt.from_file(demos, keywords=False).build("Q?")
    assert "keyword" not in bare and bare.count("« ") == 7  # six keys and the instruction
    single = RichesPrompt.from_file(demos, hops="single_hop").build("Q?")
    assert single.count("« ") == 4  # three keys and the instruction
    with pytest.raises(ValueError, match="no 'three_hop'"):
        RichesPrompt.from_file(demos, hops="three_hop")


@pytest.mark.slow
@pytest.mark.parametrize("index_kind", ["fm", "trie"])
def test_every_decoded_key_is_corpus_text(index_kind):
    from cgr.generation.generator import _load, resolve_generator

    keys = build_keys(PARAGRAPHS, "sentence")
    index = FMKeyIndex(keys) if index_kind == "fm" else TrieKeyIndex(keys)
    tokenizer, model, _, _ = _load(*resolve_generator("smollm2", None), "cpu")
    decoder = ConstrainedDecoder(
        model, tokenizer, index, DecodeConfig(beam_size=3, max_new_tokens=80)
    )
    prompt = RichesPrompt.from_file(ROOT / "data" / "riches" / "demos.json")
    texts = {k.text for k in keys}
    quoted = 0
    for question in ("How long is the Sella river?", "Which river flows through Tamberg?"):
        beam = decoder.decode(prompt.build(question))
        found, _ = parse_decode(beam.text)
        assert all(k in texts for k in found), beam.text
        quoted += len(found)
    assert quoted >= 1  # the format makes it quote; what it quotes is the corpus's
