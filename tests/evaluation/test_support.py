"""Chain support: the reader, reading one chain's facts for every choice, judges which choice
the chain supports; chains are ranked by it and the contrast names what separates the answer
from the runner-up."""

import pytest
import torch

from cgr.data.records import Chain
from cgr.evaluation.prediction import predictions
from cgr.evaluation.support import SUPPORTED, chain_support, contrast, rank_by_support
from cgr.reader.examples import ReaderExample


class WordReader(torch.nn.Module):
    """A stand-in reader: a choice scores 4 when a fact it reads names the choice's word."""

    device = "cpu"

    def encode(self, batch, device):
        return batch

    def forward(self, batch):
        return torch.tensor([[4.0 if any(c in f.text for f in facts) else 0.0
                              for c, facts in zip(ex.choices, ex.facts, strict=True)]
                             for ex in batch])  # fmt: skip


class Module:
    reader, device = WordReader(), "cpu"


def thermometer() -> ReaderExample:
    chain = Chain(("f1",), ("thermometer", "measure"), ("a thermometer measures temperature",))
    wind = Chain(("f2",), ("measure", "wind"), ("an anemometer measures wind speed",))
    return ReaderExample("q", "What is a thermometer used for?", ["A", "B", "C"],
                         ["temperature", "length", "wind"], ["h1", "h2", "h3"],
                         facts=[[], [], []], answer_index=0,
                         chains=[[chain], [wind, chain], [wind]])  # fmt: skip


def test_a_chain_supports_the_choice_it_states_not_the_one_it_is_shown_for():
    support = chain_support(Module(), [thermometer()])[0]
    # the thermometer fact supports (A); shown for (B) "length" it supports nothing of (B)
    assert support[0][0] > SUPPORTED and support[1][1] < 0.1 and support[1][0] < 0.1
    assert support[2][0] > SUPPORTED  # the wind fact supports (C) "wind"


class CountingReader(WordReader):
    """WordReader that keeps what it was given to read."""

    def __init__(self):
        super().__init__()
        self.read = []

    def encode(self, batch, device):
        self.read.extend(batch)
        return batch


def test_a_chain_shown_for_two_choices_is_read_once_and_scored_for_each():
    reader = CountingReader()
    support = chain_support(reader, [thermometer(), thermometer()], batch_size=3)
    # each question: the thermometer chain (A, B) and the wind chain (B, C), each read once
    assert len(reader.read) == 4
    one_by_one = [chain_support(Module(), [thermometer()], batch_size=1)[0]] * 2
    assert support == one_by_one
    # one reading, each choice's own probability: (A) supported, (B) not
    assert support[0][0][0] > SUPPORTED > support[0][1][1]


def test_chains_are_ranked_by_support_with_the_search_order_on_ties():
    ex = thermometer()
    ranked = rank_by_support(ex, [[0.9], [0.2, 0.2], [0.7]])
    assert ranked == [[0.9], [0.2, 0.2], [0.7]]
    assert [c.facts for c in ex.chains[1]] == [("f2",), ("f1",)]  # tie: the search's order
    ranked = rank_by_support(ex, [[0.9], [0.1, 0.6], [0.7]])
    assert [c.facts for c in ex.chains[1]] == [("f1",), ("f2",)] and ranked[1] == [0.6, 0.1]


@pytest.mark.parametrize(
    ("support", "kind"),
    [([[0.9], [0.2]], "answer_only"), ([[0.2], [0.8]], "runner_up_only"),
     ([[0.9], [0.7]], "both"), ([[0.1], [0.2]], "none")],
)  # fmt: skip
def test_the_contrast_names_what_separates_the_answer_from_the_runner_up(support, kind):
    chains = [[Chain(("f1",), ("a", "b"), ("t1",))], [Chain(("f2",), ("a", "b"), ("t2",))]]
    why = contrast(["A", "B"], [2.0, 1.0], chains, support, [["read 1", "read 2"], ["x"]])
    assert why["kind"] == kind and why["answer"] == "A" and why["runner_up"] == "B"
    if kind in ("none", "both"):  # no chain separates them: what the answer read first
        assert why["facts"] == ["read 1", "read 2"] and why["text"].startswith("no chain separates")


def test_predictions_carry_support_and_a_contrast():
    ex = thermometer()
    prediction = predictions(Module(), [(ex, [3.0, 1.0, 0.5])])[0]
    record = prediction.to_dict()
    second = record["choices"][1]["chains"]
    assert [c["supports"] for c in second] == [False, False]
    assert record["contrast"]["kind"] == "answer_only"
    # the margin: a chain's support minus the best support any other choice's chain has
    best = [max(c.support) for c in prediction.choices]
    for c, choice in enumerate(record["choices"]):
        others = max(b for i, b in enumerate(best) if i != c)
        assert [ch["margin"] for ch in choice["chains"]] == pytest.approx(
            [s - others for s in prediction.choices[c].support], abs=1e-4
        )
    kept = predictions(Module(), [(thermometer(), [3.0, 1.0, 0.5])], order="search")[0]
    assert [c.facts for c in kept.choices[1].chains] == [("f2",), ("f1",)]


def test_explain_and_the_page_say_which_chains_do_not_support():
    from cgr.chains.export import export_record, page_record
    from cgr.serving.explain import explanation

    ex = thermometer()
    prediction = predictions(Module(), [(ex, [3.0, 1.0, 0.5])])[0]
    lines = explanation(prediction)
    assert any("support" in line and "links words, does not support" in line for line in lines)
    assert any(line.startswith("why: (A) over (B)") for line in lines)
    record = export_record(prediction.to_dict())
    assert record["contrast"]["kind"] == "answer_only"
    page = page_record(prediction.to_dict())
    by_label = {c["label"]: c for c in page["choices"]}
    assert by_label["B"]["supporting"] == 0 and by_label["A"]["supporting"] == 1
    assert page["contrast"].startswith("(A) over (B)")
    # (B)'s chains state what (A) and (C) are, so they give (B) far less than those give
    # theirs; (A) and (C) each have a chain as strong as the other's: margin 0, shown unsigned
    assert by_label["B"]["best_margin"] < -0.9
    assert by_label["A"]["best_margin"] == pytest.approx(0.0, abs=1e-3)
    b_lines = [line for line in lines if line.strip().endswith("(links words, does not support)")]
    assert len(b_lines) == 2 and all(", margin -0.95 (" in line for line in b_lines)
    assert any(line.endswith("support 0.96, margin 0.00") for line in lines)


def test_supported_first_keeps_the_search_order_within_each_group():
    ex = thermometer()
    ranked = rank_by_support(ex, [[0.9], [0.2, 0.6], [0.7]], order="supported_first")
    assert [c.facts for c in ex.chains[1]] == [("f1",), ("f2",)] and ranked[1] == [0.6, 0.2]
    ex = thermometer()
    ranked = rank_by_support(ex, [[0.9], [0.7, 0.9], [0.7]], order="supported_first")
    # both support (B): the search's first stays first although the second scores higher
    assert [c.facts for c in ex.chains[1]] == [("f2",), ("f1",)] and ranked[1] == [0.7, 0.9]


def test_by_default_supporting_chains_come_first_in_the_search_order():
    both = Chain(("f1",), ("measure",), ("rain and wind are measured",))  # 0.5: supports (A)
    wind = Chain(("f2",), ("wind",), ("wind is moving air",))  # 0.98: supports (A) more
    rain = Chain(("f3",), ("rain",), ("rain is water",))  # supports (B), not (A)

    def example():
        return ReaderExample("q", "What does an anemometer measure?", ["A", "B"],
                             ["wind", "rain"], ["h1", "h2"], facts=[[], []], answer_index=0,
                             chains=[[rain, both, wind], []])  # fmt: skip

    shown = predictions(Module(), [(example(), [2.0, 1.0])])[0].choices[0].chains
    assert [c.facts for c in shown] == [("f1",), ("f2",), ("f3",)]
    by_value = predictions(Module(), [(example(), [2.0, 1.0])], order="support")[0]
    assert [c.facts for c in by_value.choices[0].chains] == [("f2",), ("f1",), ("f3",)]


def test_a_contrast_where_both_have_supporting_chains_numbers_what_the_answer_read():
    from cgr.chains.export import contrast_line

    chains = [[Chain(("f1",), ("a", "b"), ("t1",))], [Chain(("f2",), ("a", "b"), ("t2",))]]
    why = contrast(["A", "B"], [2.0, 1.0], chains, [[0.54], [0.62]], [["read 1", "read 2"], ["x"]])
    numbers = {"read 1": 3, "read 2": 1}
    line = contrast_line(why, numbers.__getitem__)
    assert line == ("no chain separates (A) from (B): both have supporting chains (support 0.54 "
                    "against 0.62); the reader's choice rests on facts [3], [1]")  # fmt: skip


class NoWordReader(WordReader):
    """A judge that finds no choice's word anywhere: every choice equally likely."""

    def forward(self, batch):
        return torch.zeros(len(batch), len(batch[0].choices))


def test_a_support_reader_judges_support_in_place_of_the_reader():
    judged = predictions(Module(), [(thermometer(), [3.0, 1.0, 0.5])], judge=NoWordReader())[0]
    even = pytest.approx(1 / 3)
    assert [c.support for c in judged.choices] == [[even], [even, even], [even]]
    assert judged.answer == "A"  # the reader's scores still answer
    own = predictions(Module(), [(thermometer(), [3.0, 1.0, 0.5])])[0]
    assert own.choices[0].support[0] > SUPPORTED


@pytest.mark.slow
def test_the_page_draws_each_choices_margin_in_headless_chromium(tmp_path):
    from cgr.chains.export import write_exports
    from tests.chromium import run_chromium

    prediction = predictions(Module(), [(thermometer(), [3.0, 1.0, 0.5])])[0]
    _, page = write_exports([prediction.to_dict()], tmp_path)
    dom, console = run_chromium(page, tmp_path)
    assert console == []
    assert "(best support 0.02); -0.95 against the other choices' best" in dom
    assert dom.count("; 0.00 against the other choices' best") == 2  # (A) and (C) tie
