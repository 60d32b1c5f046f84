"""The chains drawn: paths merged with counts, shared facts once, concept words as written, the
predicted choice first; the page (summary plot, filters, export buttons) and the standalone SVG
of `cgr explain --svg` in headless Chromium, with markup in every text field."""

import time
import xml.etree.ElementTree as ET

import pytest

from cgr.chains.drawing import TOP_PATHS, layout, merge_paths, surface_word, to_svg
from cgr.chains.export import page_record, write_exports
from tests.chromium import run_chromium

TEXTS = {
    1: "a magnet attracts iron objects",
    2: "a paper clip is made of iron",
    3: "magnets attract some metals",
}


def fact(fid, text, source="corpus", step=1):
    return {"fact_id": fid, "text": text, "score": 0.5, "step": step, "source": source}


def chain(*fids, links):
    return {"facts": list(fids), "links": links, "texts": [FACTS[f] for f in fids]}


FACTS = {"m": "a magnet attracts iron objects", "p": "a paper clip is made of iron",
         "s": "magnets attract some metals"}  # fmt: skip
PREDICTION = {
    "id": "mag-1", "question": "What can a magnet pick up?", "predicted": "B", "answer": "B", "correct": True,
    "choices": [
        {"label": "A", "text": "a wooden spoon", "score": -1.0, "hypothesis": "A magnet can pick up a wooden spoon.",
         "chains": [], "facts": [fact("s", FACTS["s"])]},
        {"label": "B", "text": "a paper clip", "score": 2.0, "hypothesis": "A magnet can pick up a paper clip.",
         "chains": [chain("m", "p", links=["magnet", "iron", "clip"]),
                    chain("m", "p", links=["magnet", "iron", "clip"]),  # found twice: one path, x2
                    chain("s", "p", links=["magnet", "metal", "clip"])],
         "facts": [fact("m", FACTS["m"], "open_book"), fact("p", FACTS["p"], step=2), fact("s", FACTS["s"])]},
    ],
}  # fmt: skip


def test_identical_paths_merge_with_a_count_and_shared_facts_are_one_node():
    paths = merge_paths(
        [{"facts": [1, 2], "links": ["magnet", "iron", "clip"]}] * 2
        + [{"facts": [3, 2], "links": ["magnet", "metal", "clip"]}],
        TEXTS,
        "a paper clip",
    )
    assert [(p["facts"], p["count"]) for p in paths] == [([1, 2], 2), ([3, 2], 1)]
    graph = layout(paths, TEXTS, {"q": "What can a magnet pick up?", "a": "(B) a paper clip"})
    ids = [node[0] for node in graph["nodes"]]
    assert ids == ["q", 1, 2, 3, "a"]  # fact 2 on both paths: drawn once
    edges = {(graph["nodes"][a][0], graph["nodes"][b][0]): (w, n) for a, b, w, n in graph["edges"]}
    assert edges[(2, "a")] == ("clip", 3)  # both paths end through fact 2: one edge, count 3
    assert edges[("q", 1)] == ("magnet", 2)


def test_concepts_are_shown_as_the_facts_write_them():
    assert surface_word("attract", ["magnets attract some metals"]) == "attract"
    assert surface_word("renew", ["renewable energy includes solar power"]) == "renewable"
    assert surface_word("nothing", ["no match here"]) == "nothing"


def test_page_record_puts_the_predicted_choice_first_with_sources_and_steps():
    record = page_record(PREDICTION)
    assert [c["label"] for c in record["choices"]] == ["B", "A"]
    by_text = {f["text"]: f for f in record["facts"]}
    assert by_text[FACTS["m"]]["source"] == "open_book" and by_text[FACTS["p"]]["step"] == 2
    b, a = record["choices"]
    assert (b["chains"], b["paths"], b["shortest"]) == (3, 2, 2)
    assert a["chains"] == 0 and record["facts"][a["first_read"] - 1]["text"] == FACTS["s"]


def test_many_paths_are_drawn_five_first_and_all_on_request():
    many = [chain("m", links=["magnet", "iron"])] + [
        {"facts": [f"x{i}"], "links": ["magnet", "clip"], "texts": [f"fact number {i}"]}
        for i in range(TOP_PATHS + 2)
    ]
    record = page_record({**PREDICTION, "choices": [{**PREDICTION["choices"][1], "chains": many}]})
    choice = record["choices"][0]
    assert choice["paths"] == TOP_PATHS + 3
    assert len(choice["graph"]["nodes"]) == TOP_PATHS + 2  # question, 5 facts, answer
    assert len(choice["graph_all"]["nodes"]) == TOP_PATHS + 5


HOSTILE = "<!--<script> or </script> & co"


def hostile_prediction() -> dict:
    b = PREDICTION["choices"][1]
    chains = [{**c, "texts": [t + " " + HOSTILE for t in c["texts"]]} for c in b["chains"]]
    choices = [PREDICTION["choices"][0], {**b, "text": "a clip " + HOSTILE, "chains": chains}]
    return {**PREDICTION, "question": "Is " + HOSTILE + "?", "choices": choices}


def test_svg_is_well_formed_and_escapes_markup(tmp_path):
    svg = to_svg(page_record(hostile_prediction()))
    root = ET.fromstring(svg)  # raises on broken markup
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "Is <!--<script>" in texts and "magnet ×2" in texts and "clip ×3" in texts
    assert "<script" not in svg


@pytest.mark.slow
def test_page_draws_merged_graph_summary_plot_and_export_in_chromium(tmp_path):
    _, page = write_exports([hostile_prediction(), {**PREDICTION, "id": "mag-2", "correct": False,
                                                    "predicted": "A"}], tmp_path)  # fmt: skip
    start = time.perf_counter()
    dom, console = run_chromium(page, tmp_path)
    print(
        f"chains page: {page.stat().st_size / 1000:.1f} KB, opened in {time.perf_counter() - start:.2f} s"
    )
    assert console == []
    assert 'class="edge-label">iron ×2<' in dom  # two identical chains drawn as one path
    assert 'class="edge-label">clip ×3<' in dom  # the last hop of all three
    assert dom.count('class="bar"') == 4 and 'id="length-plot"' in dom
    assert dom.count('class="small export-svg"') == 2 and dom.count('class="small export-png"') == 2
    assert "Is &lt;!--&lt;script&gt; or &lt;/script&gt; &amp; co?" in dom
    assert "open book · step 1" in dom and "corpus · step 2" in dom


@pytest.mark.slow
def test_standalone_svg_renders_in_chromium(tmp_path):
    path = tmp_path / "q.svg"
    path.write_text(to_svg(page_record(PREDICTION)))
    dom, console = run_chromium(path, tmp_path)
    assert console == []
    assert "What can a magnet pick up?" in dom and "iron ×2" in dom


def test_a_similar_link_is_drawn_with_both_words_as_written():
    from cgr.chains.drawing import surface_word

    # "disease ≈ illness": the answer's node and the fact's own concept, each as written
    assert surface_word("disease ≈ ill", ["an illness spreads", "disease"]) == "disease ≈ illness"
