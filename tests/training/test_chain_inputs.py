"""The chain losses' inputs, built once per batch: fixed rows per question, seeded sampling."""

from cgr.chains.search import Chain
from cgr.reader.examples import ReaderExample
from cgr.training.chain_inputs import ChainInputs


def example(qid: str, chains: list[Chain], gold=()) -> ReaderExample:
    return ReaderExample(qid, "Which?", ["A", "B"], ["copper", "wood"], ["Copper is.", "Wood is."],
                         answer_index=0, chains=[chains, []], gold_facts=list(gold))  # fmt: skip


def chain(*texts: str) -> Chain:
    return Chain(tuple(t[:3] for t in texts), ("q",) * (len(texts) + 1), texts)


def test_rows_are_padded_to_a_fixed_count_per_question():
    batch = [
        example("q1", [chain("a", "b", "c", "d")], gold=["g1", "g2", "g3", "g4"]),
        example("q2", []),
    ]
    inputs = ChainInputs.from_batch(batch, max_chain_facts=3, chains_per_hypothesis=2, seed="33:0")
    assert inputs.hypotheses == ["Copper is.", "Copper is."]
    assert inputs.rows == [["a", "b", "c"], [], [], []]  # cut at 3 facts; 2 rows per question
    assert inputs.row_question == [0, 0, 1, 1] and inputs.row_weights == [1.0, 0.0, 0.0, 0.0]
    assert inputs.gold == [["g1", "g2", "g3"], []]
    assert inputs.evidence == [["a", "b", "c", "d"], []]  # Ê: every fact of the gold chains
    assert inputs.questions_with_chains == 1
    assert sorted(set(inputs.fact_texts)) == ["a", "b", "c", "d", "g1", "g2", "g3"]


def test_sampling_is_seeded_by_question_and_epoch():
    chains = [chain(f"fact {i}") for i in range(10)]
    draw = lambda seed: ChainInputs.from_batch([example("q1", chains)], 3, 2, seed).rows  # noqa: E731
    assert draw("33:0") == draw("33:0")  # the same on every rank and after a resume
    assert len({tuple(map(tuple, draw(f"33:{epoch}"))) for epoch in range(6)}) > 1
    assert ChainInputs.from_batch([example("q1", chains)], 3, 2, "33:0").row_weights == [0.5, 0.5]
