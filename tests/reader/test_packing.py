import pytest
from transformers import AutoTokenizer

from cgr.models import resolve_model
from cgr.reader.packing import EvidencePacker, as_sentence


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model("minilm"))


def n_tokens(tokenizer, first, second):
    return len(tokenizer(first, second or None)["input_ids"])


def test_facts_become_sentences():
    assert as_sentence(" the sun is a star ") == "the sun is a star."
    assert as_sentence("Is it hot?") == "Is it hot?"


@pytest.mark.parametrize("max_length", [24, 40, 64, 128])
def test_packed_input_fits_and_keeps_facts_whole(tokenizer, max_length):
    facts = [
        f"fact number {i} says that {'very ' * (i % 4)}warm things melt ice" for i in range(12)
    ]
    packer = EvidencePacker(tokenizer, max_length, min_evidence_tokens=8)
    [p] = packer.pack([("Which thing melts ice fastest in the sun?", "a warm rock", facts)])
    assert n_tokens(tokenizer, p.first, p.second) <= max_length
    assert p.first.endswith("[SEP] a warm rock")
    assert p.second == " ".join(as_sentence(facts[i]) for i in p.read)
    assert list(p.read) == sorted(p.read)  # relevance order kept
    if p.read:  # greedy: the first fact that fits is taken
        assert p.read[0] == 0 or max_length < 40


def test_skips_a_fact_too_long_for_the_room_left_and_takes_a_shorter_one(tokenizer):
    packer = EvidencePacker(tokenizer, 32, min_evidence_tokens=8)
    long_fact = "the " + "very " * 40 + "long fact"
    [p] = packer.pack([("q?", "a", [long_fact, "short fact"])])
    assert p.second == "short fact." and p.read == (1,)


def test_no_facts_no_second_segment(tokenizer):
    [p] = EvidencePacker(tokenizer, 32).pack([("what is hot?", "fire", [])])
    assert p.second == "" and p.read == () and not p.question_cut
