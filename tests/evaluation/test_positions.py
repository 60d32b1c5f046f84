from cgr.evaluation.predict import describe_distribution, position_distribution


def record(predicted, labels="ABCD"):
    return {"predicted": predicted, "choices": [{"label": x} for x in labels]}


def test_positions_are_shares_named_by_their_usual_label():
    records = [record("A"), record("C"), record("C"), record("3", "1234")]
    assert position_distribution(records) == {"A": 0.25, "C": 0.75}


def test_a_collapsed_reader_is_warned_about():
    lines = describe_distribution(position_distribution([record("C")] * 6 + [record("A")] * 4))
    assert lines[0] == "predicted positions: A 40.0 %, C 60.0 %"
    assert lines[1].startswith("warning: 60.0 % of predictions are position C")
    balanced = describe_distribution(position_distribution([record(x) for x in "ABCD"]))
    assert len(balanced) == 1
