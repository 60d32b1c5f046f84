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
    """A stand-in reader: a choice scores 3 when a fact it reads names the choice's word, 1.5
    more when that fact also names the question's subject (its last word but two: the
    "thermometer" of "What is a thermometer used for?")."""

    device = "cpu"

    def encode(self, batch, device):
        return batch

    def forward(self, batch):
        def score(ex, choice, facts):
            subject = ex.question.split()[-3]
            named = [f.text for f in facts if choice in f.text]
            return (3.0 + 1.5 * any(subject in t for t in named)) if named else 0.0

        return torch.tensor([[score(ex, c, facts) for c, facts in zip(ex.choices, ex.facts, strict=True)]
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
    ("readings", "kind"),
    [([[[0.9, 0.1]], [[0.8, 0.2]]], "answer"), ([[[0.3, 0.7]], [[0.2, 0.8]]], "runner_up"),
     ([[[0.52, 0.48]], [[0.5, 0.5]]], "none"), ([[], []], "no_chains")],
)  # fmt: skip
def test_the_contrast_names_the_chain_that_separates_the_answer_from_the_runner_up(readings, kind):
    chains = [[Chain(("f1",), ("a", "b"), ("t1",))], [Chain(("f2",), ("a", "b"), ("t2",))]]
    if kind == "no_chains":
        chains = [[], []]
    why = contrast(["A", "B"], [2.0, 1.0], chains, readings, [["read 1", "read 2"], ["x"]])
    assert why["kind"] == kind and why["answer"] == "A" and why["runner_up"] == "B"
    if kind == "answer":  # (A)'s chain favours (A) over (B) by 0.8, more than (B)'s does
        assert why["chain"] == ["f1"] and why["shown_for"] == "A" and why["gap"] == 0.8
        assert (
            why["text"]
            == "(A) over (B): a chain, shown for (A), favours (A) over (B) (p 0.90 against 0.10)"
        )
    if kind == "runner_up":
        assert why["chain"] == ["f2"] and why["text"].startswith("(A) over (B) although a chain")
    if kind in ("none", "no_chains"):  # no chain separates them: what the answer read first
        assert why["facts"] == ["read 1", "read 2"]
        assert why["text"].startswith(
            "no chain separates" if kind == "none" else "no chain was found"
        )


@pytest.mark.parametrize(
    ("row", "choice", "margin", "label"),
    [([0.46, 0.30, 0.12, 0.12], 0, 0.2, ("supports", 0)),
     ([0.46, 0.30, 0.12, 0.12], 0, 0.0, ("links_words", None)),  # rivals' chains support as much
     ([0.30, 0.46, 0.12, 0.12], 0, 0.3, ("points_to", 1)),  # its reading prefers (B)
     ([0.40, 0.38, 0.11, 0.11], 2, -0.3, ("links_words", None)),
     ([0.5, 0.5], 0, 0.2, ("links_words", None)), ([0.56, 0.44], 0, 0.06, ("supports", 0)),
     ([], 0, 0.5, ("links_words", None))],
)  # fmt: skip
def test_a_chains_label_is_its_margin_and_the_lead_of_its_reading(row, choice, margin, label):
    """Supports: its reading prefers its choice and it supports it more than the other
    choices' chains support theirs, by MARGIN; points to X: its reading prefers X by LEAD;
    else it links words. The same rule with 2 choices as with 4."""
    from cgr.evaluation.support import LEAD, MARGIN, chain_label

    kind, lead, favoured = chain_label(row, choice, margin)
    assert (kind, favoured) == label
    if row:
        assert lead == pytest.approx(row[choice] - max(p for j, p in enumerate(row) if j != choice))
    assert (LEAD, MARGIN) == (0.1, 0.05)


def test_predictions_carry_support_and_a_contrast():
    ex = thermometer()
    prediction = predictions(Module(), [(ex, [3.0, 1.0, 0.5])])[0]
    record = prediction.to_dict()
    second = record["choices"][1]["chains"]
    assert [c["supports"] for c in second] == [False, False]
    # (B) "length": the wind fact states what (C) is, the thermometer fact what (A) is
    assert [c["label"] for c in second] == ["points to (C)", "points to (A)"]
    assert [c["favours"] for c in second] == ["C", "A"]
    first = record["choices"][0]["chains"][0]
    assert first["label"] == "supports" and first["lead"] > 0.9 and first["threshold"] == 0.05
    assert record["contrast"]["kind"] == "answer" and record["contrast"]["shown_for"] == "A"
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
    assert any("(points to (C): lead -0.86, margin needed 0.05)" in line for line in lines)
    assert (
        "why: (A) over (B): chain [1], shown for (A), favours (A) over (B) (p 0.98 against 0.01)"
        in lines
    )
    record = export_record(prediction.to_dict())
    assert record["contrast"]["kind"] == "answer"
    page = page_record(prediction.to_dict())
    by_label = {c["label"]: c for c in page["choices"]}
    assert by_label["B"]["supporting"] == 0 and by_label["A"]["supporting"] == 1
    assert page["contrast"].startswith("(A) over (B)")
    # (B)'s chains state what (A) and (C) are, so they give (B) far less than those give
    # theirs; (A)'s chain names the question's subject, (C)'s does not: (A) supports, (C)'s
    # chain, as strong in its own reading but weaker than (A)'s, links words
    assert by_label["B"]["best_margin"] < -0.9
    assert by_label["A"]["best_margin"] == pytest.approx(0.069, abs=1e-3)
    b_lines = [line for line in lines if "(points to (" in line]
    assert len(b_lines) == 2 and all(", margin -0.9" in line for line in b_lines)
    assert any("support 0.98, margin +0.07 (supports: lead +0.97" in line for line in lines)
    assert any("support 0.91, margin -0.07 (links words: lead +0.86" in line for line in lines)


def test_supported_first_keeps_the_search_order_within_each_group():
    ex = thermometer()
    ranked = rank_by_support(ex, [[0.9], [0.2, 0.6], [0.7]], order="supported_first")
    assert [c.facts for c in ex.chains[1]] == [("f1",), ("f2",)] and ranked[1] == [0.6, 0.2]
    ex = thermometer()
    ranked = rank_by_support(ex, [[0.9], [0.7, 0.9], [0.7]], order="supported_first")
    # both support (B): the search's first stays first although the second scores higher
    assert [c.facts for c in ex.chains[1]] == [("f2",), ("f1",)] and ranked[1] == [0.7, 0.9]


def test_by_default_supporting_chains_come_first_in_the_search_order():
    both = Chain(("f1",), ("measure",), ("rain and wind are measured",))  # 0.5 / 0.5: links words
    wind = Chain(("f2",), ("wind",), ("wind is moving air",))  # 0.98: supports (A)
    rain = Chain(("f3",), ("rain",), ("rain is water",))  # points to (B), not (A)

    def example():
        return ReaderExample("q", "What does an anemometer measure?", ["A", "B"],
                             ["wind", "rain"], ["h1", "h2"], facts=[[], []], answer_index=0,
                             chains=[[rain, both, wind], []])  # fmt: skip

    shown = predictions(Module(), [(example(), [2.0, 1.0])])[0]
    assert [c.facts for c in shown.choices[0].chains] == [("f2",), ("f3",), ("f1",)]
    labels = [c["label"] for c in shown.to_dict()["choices"][0]["chains"]]
    assert labels == ["supports", "points to (B)", "links words"]
    by_value = predictions(Module(), [(example(), [2.0, 1.0])], order="support")[0]
    assert [c.facts for c in by_value.choices[0].chains] == [("f2",), ("f1",), ("f3",)]


def test_a_contrast_where_both_have_supporting_chains_numbers_what_the_answer_read():
    from cgr.chains.export import contrast_line

    # a contrast saved by an older cgr, read by today's export
    why = {"kind": "both", "answer": "A", "runner_up": "B", "answer_support": 0.54,
           "runner_up_support": 0.62, "facts": ["read 1", "read 2"]}  # fmt: skip
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
    assert (
        "1 of 1 chain(s) scored support (A), best 0.98; +0.07 against the other choices' best"
        in dom
    )
    assert (
        "its chains do not support (B) (best support 0.04); a chain points to (A), a chain "
        "points to (C); -0.93 against the other choices' best"
    ) in dom
    # the wind fact reads as (C), but less surely than the thermometer fact reads as (A): it
    # does not separate (C) from the answer, so it is not labelled as supporting
    assert "its chains do not support (C) (best support 0.91); -0.07 against the other" in dom
