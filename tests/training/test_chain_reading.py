"""The chain reading term: the reader also trained on one chain's facts offered alone to every
choice (what a chain's support reads), with the question's answer as the label."""

import pytest
import torch
from torch.nn import functional as F

from cgr.data.records import Chain
from cgr.errors import ConfigError
from cgr.reader.examples import ReaderExample, reading_only
from cgr.training.module import ReaderModule

pytestmark = pytest.mark.slow  # loads MiniLM

THERMOMETER = Chain(("f1",), ("thermometer", "measure"), ("a thermometer measures temperature",))
WIND = Chain(("f2",), ("measure", "wind"), ("an anemometer measures wind speed",))


def question(qid: str, chains) -> ReaderExample:
    return ReaderExample(qid, "What is a thermometer used for?", ["A", "B"], ["temperature", "wind"],
                         ["A thermometer measures temperature.", "A thermometer measures wind."],
                         facts=[[], []], answer_index=0, chains=chains)  # fmt: skip


@pytest.fixture(scope="module")
def modules():
    off, on = ReaderModule(max_length=32), ReaderModule(max_length=32, chain_reading=2.0)
    on.reader.load_state_dict(off.reader.state_dict())  # the same reader, dropout off
    return off.eval(), on.eval()


def test_the_term_is_the_readers_loss_on_one_drawn_chain_read_alone(modules):
    off, on = modules
    batch = [question("q1", [[THERMOMETER], [WIND, THERMOMETER]])]
    assert off.chain_reading_loss(batch) is None  # the paper's reader: off by default
    with torch.no_grad():
        term = on.chain_reading_loss(batch)
        each = [2.0 * F.cross_entropy(on([reading_only(batch[0], c)]), torch.tensor([0]))
                for c in (THERMOMETER, WIND)]  # fmt: skip
        assert any(torch.allclose(term, e) for e in each)
        assert torch.equal(term, on.chain_reading_loss(batch))  # the draw is seeded
        step = on.training_step(batch, 0) - off.training_step(batch, 0)
    assert torch.allclose(step, term, atol=1e-6)


def test_questions_without_a_chain_add_nothing(modules):
    _, on = modules
    assert on.chain_reading_loss([question("q2", [[], []])]) is None
    with torch.no_grad():
        one = on.chain_reading_loss([question("q1", [[WIND], []])])
        both = on.chain_reading_loss([question("q1", [[WIND], []]), question("q2", [[], []])])
    assert torch.allclose(one, both)


def test_a_negative_weight_is_refused():
    with pytest.raises(ConfigError, match="chain_reading"):
        ReaderModule(max_length=32, chain_reading=-1.0)
