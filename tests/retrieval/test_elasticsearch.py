"""`--retriever elasticsearch`: no Elasticsearch or OpenSearch server installs here, so these
tests run against a loopback HTTP server that answers `POST /INDEX/_search` in Elasticsearch's
documented response format (hits.hits[]._score/_source, error.root_cause[].reason), ranking
its paragraphs with bm25s. What they check is cgr's side: the authors' query layout, repeats
dropped, the best k kept by score, retries on 503, the API key sent and written nowhere, and a
missing index or a dead server as one line."""

from __future__ import annotations

import http.server
import json

import pytest

from cgr.retrieval.elasticsearch import ElasticsearchError, ElasticsearchRetriever
from tests.loopback import Loopback

PARAGRAPHS = [
    {"id": "1", "title": "Arto Venn", "paragraph_text": "Arto Venn was a novelist. He died in Tamberg."},
    {"id": "2", "title": "Tamberg", "paragraph_text": "Tamberg is a city. The Sella river flows through Tamberg."},
    {"id": "2b", "title": "Tamberg (copy)", "paragraph_text": "Tamberg is a city. The Sella river flows through Tamberg. "},
    {"id": "3", "title": "Lindqvist Tower", "paragraph_text": "The Lindqvist Tower was designed by Helena Marsk."},
    *({"id": str(n), "title": f"Filler {n}", "paragraph_text": f"Filler paragraph number {n}."}
      for n in range(4, 30)),
]  # fmt: skip


class SearchServer(Loopback):
    """Answers `_search` for one index with bm25s scores; `fail_first` 503s before answering."""

    def __init__(self, index: str = "hotpotqa", fail_first: int = 0):
        import bm25s

        self.index, self.fail_first, self.bodies, self.headers = index, fail_first, [], []
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize([p["paragraph_text"] for p in PARAGRAPHS],
                                        show_progress=False), show_progress=False)  # fmt: skip
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                owner.headers.append(dict(self.headers))
                if owner.fail_first > 0:
                    owner.fail_first -= 1
                    return self.reply(503, {"error": "unavailable", "status": 503})
                if self.path != f"/{owner.index}/_search":
                    name = self.path.split("/")[1]
                    return self.reply(404, {"error": {"root_cause": [{
                        "type": "index_not_found_exception", "reason": f"no such index [{name}]"}],
                        "type": "index_not_found_exception"}, "status": 404})  # fmt: skip
                self.reply(200, owner.answer(body))

            def reply(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)

    def answer(self, body: dict) -> dict:
        import bm25s

        if "match_all" in body["query"]:
            return {"hits": {"total": {"value": len(PARAGRAPHS)}, "hits": []}}
        query = body["query"]["bool"]["should"][0]["match"]["paragraph_text"]
        size = min(body["size"], len(PARAGRAPHS))
        ids, scores = self.model.retrieve(bm25s.tokenize([query], show_progress=False), k=size,
                                          show_progress=False)  # fmt: skip
        # the copy of Tamberg scores a little lower, as a later duplicate would
        hits = [{"_index": self.index, "_id": PARAGRAPHS[int(i)]["id"],
                 "_score": float(s) - 0.01 * (PARAGRAPHS[int(i)]["id"] == "2b"),
                 "_source": {k: PARAGRAPHS[int(i)][k] for k in body["_source"]}}
                for i, s in zip(ids[0], scores[0], strict=True) if s > 0]  # fmt: skip
        hits.reverse()  # the client orders by _score itself
        return {
            "took": 1,
            "timed_out": False,
            "hits": {"total": {"value": len(hits)}, "hits": hits},
        }


@pytest.fixture
def server():
    s = SearchServer()
    yield s
    s.close()


def test_the_query_is_the_authors_and_repeats_are_dropped(server):
    retriever = ElasticsearchRetriever(server.url, "hotpotqa")
    assert retriever.check() == len(PARAGRAPHS) and server.bodies.pop()["size"] == 0
    (found,) = retriever.retrieve(["Which river flows through Tamberg?"], k=2)
    assert [p.title for p in found] == ["Tamberg", "Arto Venn"]  # the copy of Tamberg dropped
    body = server.bodies[0]
    assert body["size"] == 100 and set(body["_source"]) == {"id", "title", "paragraph_text"}
    assert body["query"] == {"bool": {"should": [
        {"match": {"paragraph_text": "Which river flows through Tamberg?"}}]}}  # fmt: skip
    ElasticsearchRetriever(server.url, "hotpotqa", title_too=True).retrieve(["Tamberg"])
    assert {"match": {"title": "Tamberg"}} in server.bodies[-1]["query"]["bool"]["should"]


def test_a_503_is_retried_and_the_key_is_sent_only_as_a_header(monkeypatch):
    flaky = SearchServer(fail_first=2)
    try:
        monkeypatch.setenv("CGR_TEST_ES_KEY", "es-secret-123")
        retriever = ElasticsearchRetriever(flaky.url, "hotpotqa", "CGR_TEST_ES_KEY")
        (found,) = retriever.retrieve(["Who designed the Lindqvist Tower?"], k=1)
        assert [p.title for p in found] == ["Lindqvist Tower"] and len(flaky.bodies) == 3
        assert flaky.headers[-1]["Authorization"] == "ApiKey es-secret-123"
        assert "es-secret-123" not in json.dumps(flaky.bodies)
    finally:
        flaky.close()


def test_a_missing_index_and_a_dead_server_are_one_line(server):
    with pytest.raises(ElasticsearchError) as missing:
        ElasticsearchRetriever(server.url, "wiki").retrieve(["x"])
    assert str(missing.value) == (
        f"elasticsearch {server.url}/wiki/_search: HTTP 404: no such index [wiki]"
    )
    with pytest.raises(ElasticsearchError, match=r"http://127.0.0.1:9/hotpotqa/_search: Connect"):
        ElasticsearchRetriever("http://127.0.0.1:9", "hotpotqa", max_retries=1).retrieve(["x"])
    with pytest.raises(ElasticsearchError, match="must be an http"):
        ElasticsearchRetriever("localhost:9200", "hotpotqa")


@pytest.mark.slow
def test_ircot_retrieves_from_the_index(server, tmp_path, capsys):
    """`cgr ircot --retriever elasticsearch`: paragraphs come from the index, not the
    questions' own contexts (the sample's "Glass Orchard" is in no index)."""
    from cgr.cli import main
    from tests.conftest import ROOT
    from tests.ircot.test_cli import official_sample

    out = tmp_path / "out"
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"),
            "--data", str(official_sample(tmp_path)), "--limit", "2", "--out", str(out),
            "--method", "oner", "--retriever", "elasticsearch", "--es_url", server.url,
            "--es_index", "hotpotqa", "--loop.k", "2", "--loop.reader_max_new_tokens", "24",
            "--generator.backend", "llamacpp",
            "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    assert main(args) == 0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    titles = {t for r in rows for t in r["paragraphs"]}
    assert titles and titles <= {p["title"] for p in PARAGRAPHS}
    assert len(server.bodies) >= 2
    capsys.readouterr()
    args[args.index("--es_index") + 1] = "wiki"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no such index [wiki]" in err and "Traceback" not in err
