"""`cgr serve` on a real tiny checkpoint, over real HTTP on loopback: JSON answers, 422s, a burst
of concurrent requests that all get answered, a full queue that says 503, and the page in
headless Chromium drawing the chains of a question typed into its form."""

import asyncio
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
import uvicorn

import cgr
from cgr.api import make_question
from cgr.serving.server import BatchingQueue, QueueFull, create_app
from tests.chromium import run_chromium

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tiny_run):
    predictor = cgr.Predictor.from_checkpoint(tiny_run / "ckpt" / "best.ckpt")
    port = free_port()
    config = uvicorn.Config(create_app(predictor, max_waiting=64, max_batch=8), host="127.0.0.1",
                            port=port, log_level="warning")  # fmt: skip
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not instance.started and time.time() < deadline:
        time.sleep(0.1)
    assert instance.started
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(timeout=10)


def post(url: str, body) -> tuple[int, dict]:
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    request = urllib.request.Request(url + "/api/predict", data=data,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


QUESTION = {"question": "Which energy source is renewable?", "choices": ["coal", "a solar panel"]}


def test_json_endpoint_answers_with_scores_facts_and_chains(server):
    status, body = post(server, QUESTION)
    assert status == 200
    assert body["predicted"] in {"A", "B"} and body["answer"] is None
    assert [c["label"] for c in body["choices"]] == ["A", "B"]
    assert all(c["facts"] for c in body["choices"])
    report = body["report"]  # the chains page's record: predicted choice first, graphs laid out
    assert report["choices"][0]["label"] == body["predicted"]
    assert any(choice["graph"]["edges"] for choice in report["choices"])


@pytest.mark.parametrize("body, reason", [
    ({"question": "", "choices": ["a", "b"]}, "question is empty"),
    ({"question": "Why?", "choices": ["only"]}, "choices has 1 choice (from 2 to 8)"),
    ({"question": "Why?", "choices": ["a", "b"], "labels": ["A"]}, "labels 1 given for 2 choices"),
    (b"{not json", "JSON decode error"),
])  # fmt: skip
def test_a_bad_request_is_422_with_the_reason(server, body, reason):
    status, answer = post(server, body)
    assert status == 422 and reason in json.dumps(answer)


def test_a_burst_of_concurrent_requests_is_all_answered(server):
    with ThreadPoolExecutor(max_workers=24) as pool:
        results = list(pool.map(lambda _: post(server, QUESTION), range(24)))
    assert [status for status, _ in results] == [200] * 24
    assert len({r["predicted"] for _, r in results}) == 1  # same question, same answer
    with urllib.request.urlopen(server + "/api/health", timeout=10) as response:
        assert json.loads(response.read())["answered"] >= 24


def test_a_full_queue_turns_requests_away_instead_of_hanging():
    def slow(questions):
        time.sleep(0.5)
        return [q.id for q in questions]

    async def scenario():
        queue = BatchingQueue(slow, max_waiting=2, max_batch=1)
        await queue.start()
        tasks = [asyncio.create_task(queue.submit(make_question("q?", ["a", "b"], question_id=str(i))))
                 for i in range(5)]  # fmt: skip
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await queue.stop()
        return results

    results = asyncio.run(scenario())
    answered = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, QueueFull)]
    assert len(answered) + len(refused) == 5 and len(refused) >= 2 and answered[0] == "0"


def test_the_page_draws_the_chains_of_a_question_typed_into_it(server, tmp_path):
    url = (server + "/?question=" + quote(QUESTION["question"]) + "&choices="
           + quote(" | ".join(QUESTION["choices"])))  # fmt: skip
    dom, console = run_chromium(url, tmp_path, budget_ms=20000)
    assert console == []
    assert 'id="ask-status">answer: (' in dom
    assert "Which energy source is renewable?" in dom and 'class="chain-graph"' in dom


class CountingPredictor:
    """The serving queue's view of a model: questions in, predictions out, slowly (the reader's
    work is not what this test measures; which questions reach it is)."""

    def __init__(self, predictor):
        self.real, self.seen = predictor, []

    def predict_questions(self, questions):
        self.seen += [q.stem for q in questions]
        time.sleep(0.4)
        return self.real.predict_questions(questions)


def test_requests_whose_clients_left_are_not_computed(tiny_run):
    """Clients that send a question and hang up: their questions are taken off the queue, so
    the next live request waits for at most the batch in progress, not for every abandoned one
    (12 abandoned requests delayed the next by 16 s when each was computed)."""
    counting = CountingPredictor(cgr.Predictor.from_checkpoint(tiny_run / "ckpt" / "best.ckpt"))
    port = free_port()
    config = uvicorn.Config(create_app(counting, max_waiting=64, max_batch=1), host="127.0.0.1",
                            port=port, log_level="warning")  # fmt: skip
    instance = uvicorn.Server(config)
    threading.Thread(target=instance.run, daemon=True).start()
    while not instance.started:
        time.sleep(0.1)
    url = f"http://127.0.0.1:{port}"
    try:
        warm = post(url, QUESTION)
        assert warm[0] == 200, warm
        first = ThreadPoolExecutor(1).submit(
            post, url, {**QUESTION, "question": "Which one first?"}
        )
        time.sleep(0.1)
        for i in range(12):  # send a question, then hang up
            body = json.dumps({**QUESTION, "question": f"Abandoned {i}?"}).encode()
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"POST /api/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
                time.sleep(0.05)
        time.sleep(0.5)  # the server notices the hang-ups (it checks every 0.1 s)
        status, answer = post(url, {**QUESTION, "question": "Which one last?"})
        assert status == 200 and answer["question"] == "Which one last?"
        assert first.result()[0] == 200
        abandoned = [q for q in counting.seen if q.startswith("Abandoned")]
        assert len(abandoned) <= 2, abandoned  # at most those taken before their client left
    finally:
        instance.should_exit = True
