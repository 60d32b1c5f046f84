"""Chain-guided hops over paragraphs: the AMR concept a first paragraph adds to the question
(the bridge) leads the second hop, with the real embedded parser and MiniLM."""

from collections import Counter

import pytest

from cgr.amr.parsers import AMRConfig
from cgr.chains.hops import ChainHopRetriever, frontier_concepts
from cgr.retrieval.paragraphs import CorpusParagraph
from tests.retrieval.test_paragraphs import CORPUS, QUESTION


@pytest.fixture(scope="module")
def hops(tmp_path_factory):
    cache = tmp_path_factory.mktemp("amr") / "amr.sqlite"
    return ChainHopRetriever(CORPUS, beam_size=3, amr=AMRConfig(cache=str(cache)))


def test_the_bridge_concept_leads_to_the_second_paragraph(hops):
    (chains,) = hops.retrieve_chains([QUESTION])
    best = chains[0]
    assert [p.title for p in best.paragraphs] == ["Zorbland", "Quixville"]
    assert best.links[1] == "quixville" and best.grounded  # the frontier, written in paragraph 2
    assert best.to_dict()["paragraphs"] == ["Zorbland", "Quixville"]
    (found,) = hops.retrieve([QUESTION], k=2)
    assert [p.title for p in found] == ["Zorbland", "Quixville"]


def test_names_come_first_among_frontier_concepts():
    paragraph = CorpusParagraph(
        "Zorbland", "Zorbland is an island whose capital city is Quixville."
    )
    ranked = frontier_concepts(paragraph, {"island", "city", "quixville", "1703"}, Counter())
    assert ranked[0] == "quixville" and "1703" not in ranked


def test_a_concept_naming_another_paragraph_comes_before_other_names():
    """ "Quixville" and "Marrow Bay" are both names; only Marrow Bay has a paragraph of its own
    (its title, parenthesised description dropped), so it is the bridge tried first."""
    from cgr.chains.hops import bare_title

    paragraph = CorpusParagraph(
        "Zorbland", "Zorbland is an island whose capital Quixville lies on Marrow Bay."
    )
    candidates = {"quixville", "marrow bay", "island", "zorbland"}
    titles = frozenset({bare_title("Marrow Bay (harbour)"), bare_title("Zorbland")})
    assert bare_title("Marrow Bay (harbour)") == "marrow bay"
    ranked = frontier_concepts(paragraph, candidates, Counter(), titles)
    assert ranked[:2] == ["marrow bay", "quixville"]  # its own title is no bridge
    assert frontier_concepts(paragraph, candidates, Counter())[0] == "quixville"


def test_chain_guided_ircot_queries_add_the_next_frontier_concept(tmp_path):
    from cgr.chains.hops import FrontierFinder
    from cgr.data.records import OpenQuestion, Paragraph
    from cgr.ircot.loop import IRCoTRunner, LoopConfig, QuestionState

    finder = FrontierFinder(AMRConfig(cache=str(tmp_path / "amr.sqlite")))
    question = OpenQuestion("z1", QUESTION, ["Blue Heron Tower"], [])
    state = QuestionState(
        question, [Paragraph("Zorbland", CORPUS[0].text)], ["Zorbland is an island."]
    )
    queries = {}
    for query in ("cot", "chains", "both"):
        runner = IRCoTRunner(None, None, None, None, LoopConfig(query=query), frontier=finder)
        state.frontier_used = set()
        queries[query] = runner._step_query(state)
    assert queries["cot"] == "Zorbland is an island."
    assert queries["chains"] == f"{QUESTION} quixville"
    assert queries["both"] == "Zorbland is an island. quixville"
    state.frontier_used = {"quixville"}  # a concept is used once; the next one follows
    assert (
        IRCoTRunner(
            None, None, None, None, LoopConfig(query="chains"), frontier=finder
        )._step_query(state)
        != f"{QUESTION} quixville"
    )


def test_paragraph_hops_read_concepts_as_they_were_measured():
    """The multi-hop hops keep the package's earlier reading (every root links, a named node is
    its name, attribute values beside their node), not the QA chains' paper rules."""
    from cgr.chains.hops import concepts_of_paragraph

    g = '(d / discover-01 :ARG0 (p / person :name (n / name :op1 "Isaac" :op2 "Newton")) :ARG1 (g / gravity) :quant 3 :polarity -)'
    assert concepts_of_paragraph(g) == {"discover", "isaac newton", "gravity", "3"}
