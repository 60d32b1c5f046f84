import penman
import pytest

from cgr.amr.embedded import EmbeddedParser


@pytest.fixture(scope="module")
def parser():
    return EmbeddedParser()


def graph(parser, sentence):
    text = parser.parse([sentence])[0]
    assert text is not None
    g = penman.decode(text)
    assert g.metadata["snt"] == sentence
    return g, {v: c for v, _, c in g.instances()}


def test_copula_becomes_domain(parser):
    g, concepts = graph(parser, "A whale is a mammal.")
    assert concepts[g.top] == "mammal"
    assert [(concepts[s], r, concepts[t]) for s, r, t in g.edges()] == [
        ("mammal", ":domain", "whale")
    ]


def test_predicate_sense_and_arguments(parser):
    g, concepts = graph(parser, "The girl sees a cat.")
    assert concepts[g.top] == "see-01"
    roles = {(r, concepts[t]) for s, r, t in g.edges() if s == g.top}
    assert roles == {(":ARG0", "girl"), (":ARG1", "cat")}


def test_named_entity_gets_name_with_ops(parser):
    g, concepts = graph(parser, "Isaac Newton discovered gravity.")
    person = next(v for v, c in concepts.items() if c == "person")
    name = next(t for s, r, t in g.edges() if s == person and r == ":name")
    assert concepts[name] == "name"
    assert sorted((r, t) for s, r, t in g.attributes() if s == name) == [
        (":op1", '"Isaac"'),
        (":op2", '"Newton"'),
    ]


def test_polarity_quant_and_coordination(parser):
    g, concepts = graph(parser, "Plants do not need sunlight and water.")
    assert (g.top, ":polarity", "-") in g.attributes()
    assert "and" in concepts.values()
    g, concepts = graph(parser, "A spider has eight legs.")
    assert any(r == ":quant" and t == "8" for _, r, t in g.attributes())


def test_location_preposition_becomes_a_role(parser):
    g, concepts = graph(parser, "Frogs lay eggs in water.")
    assert any(r == ":location" and concepts[t] == "water" for _, r, t in g.edges())


def test_batch_with_unparsable_lines_keeps_positions(parser):
    out = parser.parse(["...", "A cat sleeps.", "", "Rain falls."])
    assert out[0] is None and out[2] is None
    assert out[1] is not None and out[3] is not None


def test_several_sentences_in_one_line_become_multi_sentence(parser):
    g, concepts = graph(parser, "The sun is hot. Ice is cold.")
    assert concepts[g.top] == "multi-sentence" and {"hot", "cold"} <= set(concepts.values())


def test_non_numeric_quantity_is_quoted(parser):
    g, _ = graph(parser, "The bus leaves at 1:45 every day.")
    assert all(
        t.startswith('"') or t.replace(".", "").isdigit()
        for _, r, t in g.attributes()
        if r == ":quant"
    )
