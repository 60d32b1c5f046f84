"""Chain export: JSONL records, chain rendering, and the HTML report in a real headless Chromium."""

import json
import re

import pytest

from cgr.chains.export import chain_text, export_record, write_exports
from tests.chromium import run_chromium

PREDICTION = {
    "id": "solar-1", "question": "Which energy source is renewable and natural?", "predicted": "C", "answer": "C",
    "correct": True,
    "choices": [
        {"label": "A", "text": "coal", "score": -1.2, "hypothesis": "Coal is renewable.", "chains": []},
        {"label": "C", "text": "a solar panel", "score": 2.5, "hypothesis": "A solar panel is renewable.",
         "chains": [{"facts": ["f3", "f2", "f1"], "links": ["natural", "renew", "solar", "panel"],
                     "texts": ["natural resources can renew", "renewable energy includes solar power",
                               "a solar panel turns solar power into electricity"]}]},
    ],
}  # fmt: skip


def test_chain_is_rendered_with_linking_concepts():
    record = export_record(PREDICTION)
    assert [f["n"] for f in record["facts"]] == [1, 2, 3]
    rendered = record["choices"][1]["chains"][0]["rendered"]
    assert rendered == "Question -natural-> [1] -renew-> [2] -solar-> [3] -panel-> (C)"
    assert chain_text(PREDICTION["choices"][1]["chains"][0], {"f3": 3, "f2": 2, "f1": 1}, "C") == (
        "Question -natural-> [3] -renew-> [2] -solar-> [1] -panel-> (C)"
    )


def test_write_exports_gives_jsonl_and_self_contained_html(tmp_path):
    jsonl, page = write_exports([PREDICTION], tmp_path)
    record = json.loads(jsonl.read_text())
    assert record["id"] == "solar-1" and record["choices"][1]["chains"][0]["facts"] == [
        "f3",
        "f2",
        "f1",
    ]
    html = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # no network resources
    assert "</script><script" not in json.dumps(record)


@pytest.mark.slow
def test_report_renders_chains_in_headless_chromium(tmp_path):
    _, page = write_exports([PREDICTION], tmp_path)
    dom, console = run_chromium(page, tmp_path)
    assert console == []
    assert 'id="q-solar-1"' in dom
    assert dom.count('class="chain-graph"') == 1 and "renewable energy includes solar power" in dom
    for word in ("natural", "renew", "solar", "panel"):  # the concepts as the facts write them
        assert f'class="edge-label">{word}<' in dom, word
    assert "1 of 1 questions shown" in dom and "<td>accuracy</td><td>1.000</td>" in dom


@pytest.mark.slow
def test_console_errors_are_caught(tmp_path):
    """The check above can fail: a page that throws is reported."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    _, console = run_chromium(page, tmp_path)
    assert any("undefinedFunction" in line for line in console)


@pytest.mark.slow
def test_markup_in_a_question_cannot_blank_the_report(tmp_path):
    """`<!--<script>` in the data block once swallowed the page's script."""
    hostile = {**PREDICTION, "id": "h-1", "question": "Is <!--<script> or </script> & co safe?"}
    _, page = write_exports([hostile], tmp_path)
    data_block = page.read_text().split('<script id="data" type="application/json">')[1]
    assert "<!--" not in data_block.split("</script>")[0]
    dom, console = run_chromium(page, tmp_path)
    assert console == []
    assert "Is &lt;!--&lt;script&gt; or &lt;/script&gt; &amp; co safe?" in dom
    assert 'class="edge-label">natural<' in dom
