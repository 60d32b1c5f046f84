"""`generator.backend: openai` against a real OpenAI-compatible server: llama.cpp's HTTP server
(xllamacpp, the packaged SmolLM2 GGUF) on 127.0.0.1. Greedy answers equal the in-process
engine's; answers are cached so a re-run sends nothing; `cgr ircot` runs on it end to end and
the API key is written nowhere; a dead server is one line."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cgr.cli import main
from tests.conftest import ROOT
from tests.ircot.test_cli import official_sample

pytestmark = pytest.mark.slow  # a real model behind a real server

PROMPTS = ["Q: What is the capital of France?\nA: The capital of France is",
           "Q: Which gas do plants take in from the air?\nA: Plants take in"]  # fmt: skip


@pytest.fixture(scope="module")
def server():
    from cgr.generation.llamacpp import LlamaCppGenerator

    engine = LlamaCppGenerator(max_new_tokens=24, context_tokens=4096)
    address = engine.listening_address
    url = (address if address.startswith("http") else f"http://{address}") + "/v1"
    assert url.startswith("http://127.0.0.1:")
    yield engine, url
    engine.close()


def test_greedy_answers_equal_the_engines_and_a_second_run_reads_the_cache(server, tmp_path):
    from cgr.generation.openai_api import OpenAIGenerator

    engine, url = server
    cache = str(tmp_path / "answers.sqlite")
    client = OpenAIGenerator(url, "smollm2", max_new_tokens=24, concurrency=2, cache=cache)
    answers = client.generate(PROMPTS, stop="sentence")
    assert [a.text for a in answers] == [a.text for a in engine.generate(PROMPTS, stop="sentence")]
    assert answers[0].text.startswith("Paris")
    assert client.count_tokens("hello world") == engine.count_tokens("hello world")
    client.close()
    # the same requests again (a re-run after a kill): all answered from the cache, none sent
    again = OpenAIGenerator(url, "smollm2", max_new_tokens=24, cache=cache)

    def sent(**request):
        raise AssertionError(f"a cached prompt was sent again: {request['prompt'][:40]!r}")

    again.client.completions.create = sent
    assert [a.text for a in again.generate(PROMPTS, stop="sentence")] == [a.text for a in answers]
    with pytest.raises(AssertionError, match="sent again"):
        again.generate(["a prompt it never answered"], stop="sentence")


def test_chat_api_applies_the_servers_template(server, tmp_path):
    from cgr.generation.openai_api import OpenAIGenerator

    _, url = server
    client = OpenAIGenerator(url, "smollm2", api="chat", max_new_tokens=16, cache="")
    (answer,) = client.generate(["What is the capital of France? Answer in one word."], stop="none")
    assert "paris" in answer.text.lower()


def test_ircot_runs_on_the_server_and_writes_the_key_nowhere(server, tmp_path, capsys, monkeypatch):
    _, url = server
    secret = "sk-test-do-not-store-0123456789"
    monkeypatch.setenv("CGR_TEST_API_KEY", secret)
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite"
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"),
            "--data", str(official_sample(tmp_path)), "--limit", "2", "--out", str(out),
            "--loop.max_steps", "2", "--loop.reader_max_new_tokens", "24",
            "--generator.backend", "openai", "--generator.base_url", url,
            "--generator.model", "smollm2", "--generator.api_key_env", "CGR_TEST_API_KEY",
            "--generator.max_new_tokens", "24", "--generator.response_cache", str(cache),
            "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr()
    assert printed.out.strip().splitlines()[-1].startswith("recall: ")
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["t1", "t2"] and all(r["generated_tokens"] > 0 for r in rows)

    # a second run reads every answer from the cache: the same chains, and no new entry
    def entries() -> int:
        with sqlite3.connect(cache) as db:
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    before, again = entries(), tmp_path / "again"
    rerun = list(args)
    rerun[rerun.index("--out") + 1] = str(again)
    assert main(rerun) == 0
    capsys.readouterr()
    rows_again = [
        json.loads(line) for line in (again / "predictions.jsonl").read_text().splitlines()
    ]
    assert [r["cot"] for r in rows] == [r["cot"] for r in rows_again] and entries() == before > 0
    written = [p for p in [*out.rglob("*"), cache] if p.is_file()]
    assert written and not [p for p in written if secret.encode() in p.read_bytes()]
    assert secret not in printed.out + printed.err


def test_a_dead_server_is_one_line(tmp_path, capsys):
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"),
            "--data", str(official_sample(tmp_path)), "--limit", "1", "--out", str(tmp_path / "o"),
            "--generator.backend", "openai", "--generator.base_url", "http://127.0.0.1:9/v1",
            "--generator.model", "smollm2", "--generator.timeout", "2", "--generator.max_retries", "1",
            "--generator.response_cache", "",
            "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("ircot:")]  # no bar
    assert len(lines) == 1 and lines[0].startswith("error: generator http://127.0.0.1:9/v1")
    assert "Traceback" not in err


def test_a_server_that_fails_twice_then_answers_is_retried(tmp_path):
    """A loopback server that answers 503 twice, then a completion: the client's backoff
    retries it and the answer arrives."""
    import http.server
    import threading

    from cgr.generation.openai_api import OpenAIGenerator

    calls = []

    class Flaky(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            calls.append(self.path)
            tries = [c for c in calls if c.endswith("/completions")]
            if self.path.endswith("/completions") and len(tries) <= 2:
                self.send_error(503, "busy")
                return
            if not self.path.endswith("/completions"):
                self.send_error(404, "no such endpoint")
                return
            body = json.dumps({"id": "c1", "object": "text_completion", "created": 0, "model": "m",
                               "choices": [{"index": 0, "text": "Paris", "finish_reason": "stop",
                                            "logprobs": None}],
                               "usage": {"prompt_tokens": 5, "completion_tokens": 1,
                                         "total_tokens": 6}}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        client = OpenAIGenerator(url, "m", cache="", tokenizer="smollm2", max_retries=3)
        (answer,) = client.generate(["Q: capital of France?\nA:"], stop="sentence")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert answer.text == "Paris." and answer.new_tokens == 1
    assert [c for c in calls if c.endswith("/completions")] == ["/v1/completions"] * 3
