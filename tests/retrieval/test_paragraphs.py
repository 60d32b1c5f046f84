"""Beam-iterative retrieval over paragraphs: the second hop finds the paragraph that only the
first one names (the bridge), and paths come back as chains of paragraphs, best first."""

import pytest

from cgr.retrieval.paragraphs import (
    BeamParagraphRetriever,
    CorpusParagraph,
    DenseParagraphRetriever,
)

CORPUS = [
    CorpusParagraph(
        "Zorbland", "Zorbland is a small island nation whose capital city is Quixville."
    ),
    CorpusParagraph("Quixville", "Quixville is known for the Blue Heron Tower, built in 1903."),
    CorpusParagraph("Heron", "Herons are long-legged birds that wade in shallow water."),
    CorpusParagraph("Island nations", "Many island nations depend on fishing and tourism."),
    CorpusParagraph("Tower Bridge", "Tower Bridge crosses the River Thames in London."),
    CorpusParagraph("Capital cities", "A capital city is where a country's government sits."),
    CorpusParagraph(
        "Capital towers", "The tallest tower in a capital is often its television tower."
    ),
    CorpusParagraph("Clock tower", "A clock tower stands in the capital's main square."),
]
QUESTION = "Which tower stands in the capital of Zorbland?"


@pytest.fixture(scope="module")
def beam():
    return BeamParagraphRetriever(CORPUS, beam_size=3, steps=2)


def test_paths_are_chains_of_two_paragraphs_best_first(beam):
    (paths,) = beam.retrieve_chains([QUESTION])
    scores = [path.score for path in paths]
    assert scores == sorted(scores, reverse=True)
    assert all(len(p.paragraphs) == 2 and p.paragraphs[0] != p.paragraphs[1] for p in paths)
    assert [p.title for p in paths[0].paragraphs] == [
        "Zorbland",
        "Quixville",
    ]  # bridge, then target


def test_the_bridge_paragraph_leads_to_the_answer_paragraph(beam):
    (found,) = beam.retrieve([QUESTION], k=2)
    assert {p.title for p in found} == {"Zorbland", "Quixville"}
    (one_step,) = DenseParagraphRetriever(CORPUS).retrieve([QUESTION], k=2)
    assert "Quixville" not in {p.title for p in one_step}  # what one dense step misses
