"""`cgr serve`'s own guards, without a model: the Host header allow-list, the connection bound
and the rate-limited accept error."""

import logging
import socket
import time
from types import SimpleNamespace

import uvicorn
from fastapi.testclient import TestClient

from cgr.serving.connections import ACCEPT_ERROR, BoundedServer, RateLimited
from cgr.serving.server import create_app, host_names


class NoModel:
    def predict_questions(self, questions):
        raise AssertionError("never reached in these tests")


def test_only_the_bound_host_names_are_answered():
    app = create_app(NoModel(), allowed_hosts=host_names("127.0.0.1"))
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/api/health").status_code == 200
        assert client.get("/api/health", headers={"Host": "localhost:8000"}).status_code == 200
        # a DNS-rebinding page asks with its own name
        assert client.get("/api/health", headers={"Host": "evil.example:8000"}).status_code == 400
    assert "localhost" in host_names("0.0.0.0") and socket.gethostname() in host_names("0.0.0.0")
    assert host_names("10.0.0.5") == ["10.0.0.5"]


class FakeTransport:
    def __init__(self):
        self.closed = False

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True


class Connection:  # what the server reads of uvicorn's protocol objects
    def __init__(self, busy: bool = False):
        self.cycle = SimpleNamespace(response_complete=False) if busy else None
        self.transport = FakeTransport()


def connection(busy: bool = False) -> Connection:
    return Connection(busy)


def test_idle_connections_beyond_the_bound_or_too_old_are_closed():
    server = BoundedServer(uvicorn.Config(app=None), max_connections=3, idle_s=30)
    busy = [connection(busy=True) for _ in range(2)]
    idle = [connection() for _ in range(5)]
    server.server_state.connections.update(busy + idle)
    assert server.close_idle(now=100.0) == 4  # 7 open, bound 3: the 4 oldest idle go
    assert not any(c.transport.closed for c in busy)
    left = [c for c in idle if not c.transport.closed]
    assert len(left) == 1
    for c in idle:
        if c.transport.closed:
            server.server_state.connections.discard(c)
    assert server.close_idle(now=120.0) == 0  # idle 20 s: kept
    assert server.close_idle(now=131.0) == 1 and left[0].transport.closed  # idle 31 s: closed


def test_the_accept_error_is_logged_once_per_interval_with_its_count():
    limited = RateLimited(ACCEPT_ERROR, interval=60)
    record = lambda msg: logging.LogRecord("asyncio", logging.ERROR, "", 0, msg, (), None)  # noqa: E731
    assert limited.filter(record(ACCEPT_ERROR + "\nsocket: <x>"))
    assert sum(limited.filter(record(ACCEPT_ERROR)) for _ in range(10_000)) == 0
    assert limited.filter(record("another error"))
    limited.last = time.monotonic() - 61
    again = record(ACCEPT_ERROR)
    assert limited.filter(again) and "10000 more like it" in again.msg
