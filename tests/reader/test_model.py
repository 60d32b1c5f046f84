import pytest
import torch

from cgr.reader.examples import ReaderExample
from cgr.reader.model import MultipleChoiceReader
from cgr.retrieval.base import RetrievedFact


@pytest.fixture(scope="module")
def reader():
    return MultipleChoiceReader("minilm", max_length=48)


def example(n_choices, n_facts=2, answer=0):
    facts = [[RetrievedFact(f"f{c}{i}", f"fact {i} about choice {c}", 1.0 - i / 10) for i in range(n_facts)]
             for c in range(n_choices)]  # fmt: skip
    return ReaderExample("q", "What is hot?", list("ABCDE"[:n_choices]), [f"thing {c}" for c in range(n_choices)],
                         [f"Thing {c} is hot." for c in range(n_choices)], facts, answer)  # fmt: skip


def test_input_is_question_sep_answer_sep_facts(reader):
    enc = reader.encode([example(4)])
    ids = enc["input_ids"][0, 2][enc["attention_mask"][0, 2].bool()]
    text = reader.tokenizer.decode(ids)
    assert text.startswith(
        "[CLS] what is hot? [SEP] thing 2 [SEP] fact 0 about choice 2. fact 1 about choice 2."
    )


def test_mixed_choice_counts_are_padded_and_masked(reader):
    batch = [example(3), example(5, answer=4)]
    enc = reader.encode(batch)
    assert enc["input_ids"].shape[:2] == (2, 5)
    assert enc["choice_mask"].tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    logits = reader(enc)
    assert logits.shape == (2, 5) and torch.isfinite(logits[0, :3]).all()
    assert (logits[0, 3:] < -1e30).all() and logits[0].argmax() < 3


def test_long_evidence_keeps_whole_facts_within_max_length(reader):
    ex = example(2, n_facts=30)
    enc = reader.encode([ex])
    assert enc["input_ids"].shape[-1] <= 48
    ids = enc["input_ids"][0, 0][enc["attention_mask"][0, 0].bool()]
    text = reader.tokenizer.decode(ids)
    assert "thing 0 [SEP]" in text  # the question and answer survive
    read = len(enc["facts_read"][0][0])
    assert 0 < read < 30 and enc["facts_read"][0][0] == list(range(read))
    # the facts read are whole and in order; the next one is absent, not cut
    expected = " ".join(f"fact {i} about choice 0." for i in range(read))
    assert text.endswith(expected + " [SEP]")
    assert f"fact {read} " not in text


def test_long_question_loses_its_start_not_the_choice(reader):
    ex = example(2, n_facts=3)
    ex.question = " ".join(f"word{i}" for i in range(60)) + " which thing is hot?"
    enc = reader.encode([ex])
    text = reader.tokenizer.decode(enc["input_ids"][0, 1][enc["attention_mask"][0, 1].bool()])
    assert "which thing is hot? [SEP] thing 1 [SEP] fact 0 about choice 1." in text
    assert "word0 " not in text and enc["facts_read"][0][1][0] == 0


def test_no_facts_reads_question_and_answer_only(reader):
    ex = example(2, n_facts=0)
    enc = reader.encode([ex])
    text = reader.tokenizer.decode(enc["input_ids"][0, 1][enc["attention_mask"][0, 1].bool()])
    assert text == "[CLS] what is hot? [SEP] thing 1 [SEP]"


def test_gradients_reach_the_encoder(reader):
    logits = reader(reader.encode([example(4, answer=1)]))
    torch.nn.functional.cross_entropy(logits, torch.tensor([1])).backward()
    grad = reader.model.bert.embeddings.word_embeddings.weight.grad
    assert grad is not None and grad.abs().sum() > 0
    reader.zero_grad()


def test_dataloader_workers_encode_what_the_reader_would(reader):
    """ReaderCollate packs and tokenises in DataLoader worker processes; the reader then reads
    the same tensors it would have made itself."""
    from torch.utils.data import DataLoader

    data = [example(3), example(5, answer=4), example(4, n_facts=6), example(2, n_facts=0)]
    loader = DataLoader(data, batch_size=2, num_workers=2, collate_fn=reader.collate())
    batches = list(loader)
    assert [len(b) for b in batches] == [2, 2] and batches[0].encoded is not None
    for batch, start in zip(batches, (0, 2), strict=True):
        ours = reader.encode(batch)
        theirs = reader.encode(list(data[start : start + 2]))  # a plain list: encoded here
        assert ours.keys() == theirs.keys()
        for key, value in theirs.items():
            if torch.is_tensor(value):
                assert torch.equal(ours[key], value), key
            else:
                assert ours[key] == value, key
