"""The margin a chain's "supports" label needs, fitted on training predictions: the threshold
that best separates right from wrong choices, with what it was fitted on; a stored fit is
checked before it is used, and one fitted to the older lead rule is not used."""

import pytest

from cgr.errors import ConfigError
from cgr.pretrained.chain_labels import fit_margin, read_margin, training_sample


def record(answer: str, margins: dict[str, list[float]], lead: float = 0.2) -> dict:
    return {"answer": answer, "choices": [
        {"label": label, "chains": [{"margin": x, "lead": lead, "label": "supports"}
                                    for x in values]}
        for label, values in margins.items()]}  # fmt: skip


def test_the_fit_separates_right_from_wrong_choices_and_says_on_what():
    records = [record("A", {"A": [0.3, 0.1], "B": [0.05], "C": []}),
               record("B", {"A": [0.02], "B": [0.25]}),
               record("C", {"A": [0.12], "B": [-0.2], "C": [0.4]})]  # fmt: skip
    fit = fit_margin(records, {"files": ["train.jsonl"], "questions": 3, "split": "train"})
    assert 0.12 < fit["margin"] <= 0.25  # every right choice above, every wrong one below
    assert fit["right_supported"] == 1.0 and fit["wrong_supported"] == 0.0
    assert fit["fitted_on"]["choices_with_chains"] == 7 and fit["fitted_on"]["split"] == "train"
    assert set(fit["by_choices"]) == {"2", "3"}


def test_no_right_and_wrong_choices_with_chains_is_no_fit():
    with pytest.raises(ConfigError, match="no training question has chains"):
        fit_margin([record("A", {"A": [0.3], "B": []})], {})


def test_a_chain_whose_reading_prefers_another_choice_cannot_make_its_choice_supported():
    """A large margin with a negative lead (the chain's own reading favours another choice)
    counts as no supporting chain: the right choice here is never supported."""
    records = [record("A", {"A": [0.3], "B": [0.0]}, lead=-0.1),
               record("A", {"A": [0.3], "B": [0.0]})]  # fmt: skip
    fit = fit_margin(records, {})
    assert fit["right_supported"] == 0.5 and fit["wrong_supported"] == 0.0


@pytest.mark.parametrize(
    "bad", [{"margin": "0.1"}, {"margin": 2}, {"margin": True}, [0.1], {"margin": None}]
)
def test_a_stored_margin_that_is_not_a_share_is_refused(bad):
    with pytest.raises(ConfigError, match="chain_labels.margin must be a number in"):
        read_margin(bad, "model/cgr_config.json")
    assert read_margin({"margin": 0.15}, "x") == 0.15 and read_margin(None, "x") is None


def test_a_lead_fitted_to_the_older_rule_is_not_used(caplog):
    import logging

    with caplog.at_level(logging.INFO):
        assert read_margin({"lead": 0.17, "rule": "..."}, "m/cgr_config.json") is None
    assert "older rule" in caplog.text and "m/cgr_config.json" in caplog.text


def test_the_sample_is_the_first_training_questions_over_the_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": 1}\n\n{"id": 2}\n')
    b.write_text('{"id": 3}\n{"id": 4}\n')
    out = tmp_path / "s.jsonl"
    assert training_sample([str(a), str(b)], out, limit=3) == 3
    assert out.read_text() == '{"id": 1}\n{"id": 2}\n{"id": 3}\n'
