"""`generator.backend: openai` against a hostile server (a loopback http.server): one that
answers slowly, with 100 MB, with JSON that is no completion or no JSON at all, or with a
redirect. Each is one line, in bounded time and memory; a redirect is not followed, so the API
key is never sent on."""

from __future__ import annotations

import http.server
import json
import time

import pytest

from cgr.errors import ConfigError
from cgr.generation.openai_api import MAX_ANSWER_BYTES, OpenAIGenerator
from tests.loopback import Loopback

COMPLETION = {"id": "x", "object": "text_completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "text": " Paris.", "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}  # fmt: skip


class Hostile(Loopback):
    def __init__(self, mode: str):
        self.mode, self.seen = mode, []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.seen.append((self.path, self.headers.get("Authorization")))
                if self.path.endswith("/tokenize"):
                    return self.send(200, json.dumps({"tokens": [1, 2, 3]}).encode())
                mode = owner.mode
                if mode == "slow":
                    time.sleep(3)
                    return self.send(200, json.dumps(COMPLETION).encode())
                if mode == "huge":  # 100 MB announced and sent
                    size = 100 << 20
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    try:
                        for _ in range(size // 65536):
                            self.wfile.write(b" " * 65536)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return None
                if mode == "not json":
                    return self.send(200, b"{'choices': [", "application/json")
                if mode == "no completion":
                    return self.send(200, json.dumps({"choices": []}).encode())
                if mode == "redirect":
                    self.send_response(307)
                    self.send_header("Location", f"{owner.url}/elsewhere/v1/completions")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self.send(200, json.dumps(COMPLETION).encode())

            def send(self, status: int, body: bytes, kind: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)


@pytest.mark.parametrize(
    ("mode", "says"),
    [("slow", "no answer"), ("huge", f"the answer passed {MAX_ANSWER_BYTES:,} bytes"),
     ("not json", "not a completion"), ("no completion", "not a completion"),
     ("redirect", "HTTP 307")],
)  # fmt: skip
def test_a_hostile_server_is_one_line_in_bounded_time(mode, says, monkeypatch):
    monkeypatch.setenv("CGR_TEST_KEY", "sk-hostile-test-key")
    server = Hostile(mode)
    try:
        client = OpenAIGenerator(f"{server.url}/v1", "m", api_key_env="CGR_TEST_KEY", cache="",
                                 timeout=1.0, max_retries=1)  # fmt: skip
        start = time.perf_counter()
        with pytest.raises(ConfigError) as caught:
            client.generate(["Q: What is the capital of France?\nA:"], stop="none")
        elapsed = time.perf_counter() - start
    finally:
        server.close()
    message = str(caught.value)
    assert says in message and "\n" not in message and "sk-hostile" not in message
    assert elapsed < 30
    # a redirect is not followed: the key never reaches the address it names
    assert not [p for p, _ in server.seen if p.startswith("/elsewhere")]


def test_a_server_that_answers_well_still_works():
    server = Hostile("fine")
    try:
        client = OpenAIGenerator(f"{server.url}/v1", "m", cache="", timeout=5.0, max_retries=0)
        (answer,) = client.generate(["Q: capital of France?\nA:"], stop="none")
        assert answer.text.strip() == "Paris." and client.count_tokens("a b c") == 3
    finally:
        server.close()
