"""`cgr serve`: a web page (question and choices in, answer and chains drawn out) and a JSON
endpoint over a checkpoint, on 127.0.0.1 by default.

Under load it keeps answering: requests wait in a bounded queue and one worker thread answers
them in batches (the reader scores a batch of questions about as fast as one on a CPU); only a
full queue turns a request away, with 503 and Retry-After. A malformed request gets 422 with
the field and the reason (never its input), a body over --max-body-bytes 413 unread, a body that
is not UTF-8 or nests JSON more than 32 deep 400 before it is parsed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from pydantic import BaseModel
from starlette.requests import (
    Request,  # module level: FastAPI resolves the handler's annotations here
)

from cgr.data.records import Question
from cgr.errors import CGRError, ConfigError
from cgr.evaluation.prediction import Prediction
from cgr.serving import checkpoint_parser, load_predictor
from cgr.validation import at_least

log = logging.getLogger(__name__)


class Ask(BaseModel):
    """The JSON body of POST /api/predict. Its values are checked by `make_question` with
    cgr.data.limits (types, lengths, counts), so serve refuses exactly what question files and
    the Python API refuse, in the same words."""

    question: Any
    choices: Any
    labels: Any = None


MAX_BODY_BYTES = 1_000_000  # a request holding the longest question and 8 longest choices: ~60 kB
MAX_JSON_DEPTH = 32  # a request nests 2 deep; Python's parser recurses, and fails, near 1,000
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def body_problem(body: bytes) -> str | None:
    """Why a request body is refused before it is parsed (400), or None: bytes that are not
    UTF-8, or JSON nested deeper than MAX_JSON_DEPTH (a parser that recurses on each level would
    hit its limit on what the client chose to send)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"request body is not UTF-8 (byte {e.start})"
    # brackets inside strings do not nest: drop the strings, then count the depth
    marks = np.frombuffer(_JSON_STRING.sub(b'""', body), dtype=np.uint8)
    steps = np.isin(marks, (ord("["), ord("{"))).astype(np.int32) - np.isin(
        marks, (ord("]"), ord("}"))
    )
    depth = int(np.cumsum(steps).max(initial=0))
    if depth > MAX_JSON_DEPTH:
        return f"request body nests JSON {depth:,} deep (at most {MAX_JSON_DEPTH})"
    return None


class BodyLimit:
    """ASGI middleware: a request body over `max_bytes` is answered 413 before the app parses
    it (by its Content-Length, or while a body without one is read), so a 50 MB upload is
    neither parsed nor echoed."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            return await self._refuse(send, 413, self._too_large())
        chunks, size, more = [], 0, True
        while more:  # read (at most max_bytes) before the app sees any of it
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                return await self._refuse(send, 413, self._too_large())
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if (problem := body_problem(body)) is not None:
            return await self._refuse(send, 400, problem)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"request body over {self.max_bytes:,} bytes (--max-body-bytes)"

    async def _refuse(self, send, status: int, detail: str) -> None:
        payload = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": payload})


class QueueFull(Exception):
    pass


class BatchingQueue:
    """At most `max_waiting` requests wait; a worker takes up to `max_batch` at a time and runs
    `predict_many` on them in one thread (the model is not shared between threads)."""

    def __init__(
        self,
        predict_many: Callable[[list[Question]], list[Prediction]],
        max_waiting: int = 64,
        max_batch: int = 8,
    ):
        if max_waiting < 1 or max_batch < 1:
            raise ConfigError("--max-waiting and --max-batch must be >= 1")
        self.predict_many, self.max_waiting, self.max_batch = predict_many, max_waiting, max_batch
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgr-model")
        self.answered = 0

    async def start(self) -> None:
        self._queue = asyncio.Queue(maxsize=self.max_waiting)
        self._worker = asyncio.create_task(self._work())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def submit(self, question: Question) -> Prediction:
        future = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait((question, future))
        except asyncio.QueueFull as e:
            raise QueueFull from e
        return await future

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            live = [(q, f) for q, f in batch if not f.cancelled()]  # the client went away
            if not live:
                continue
            try:
                answers = await loop.run_in_executor(
                    self._executor, self.predict_many, [q for q, _ in live]
                )
            except Exception as e:  # one bad batch must not stop the server
                log.exception("prediction failed")
                answers = [e] * len(live)
            for (_, future), answer in zip(live, answers, strict=True):
                if future.cancelled():
                    continue
                if isinstance(answer, Exception):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)
                    self.answered += 1


class ClientLeft(Exception):
    pass


async def unless_client_left(awaitable, request, every_s: float = 0.1):
    """The awaitable's result, or ClientLeft once the client has disconnected: its question is
    then taken off the queue (a cancelled request is skipped by the worker) instead of
    computed for nobody. Starlette does not cancel a handler whose client went away."""
    task = asyncio.ensure_future(awaitable)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                raise ClientLeft
    except asyncio.CancelledError:
        task.cancel()
        raise


def create_app(
    predictor,
    max_waiting: int = 64,
    max_batch: int = 8,
    max_body_bytes: int = MAX_BODY_BYTES,
    allowed_hosts: Sequence[str] | None = None,
):
    """The FastAPI app: GET / (the page), POST /api/predict (JSON), GET /api/health.
    `allowed_hosts`: the Host header names answered (others get 400: a web page that rebinds
    its own name to this address reads nothing); None answers any (an app mounted elsewhere,
    whose server checks hosts itself). `cgr serve` passes the names of the address it binds."""
    from fastapi import FastAPI, HTTPException
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse

    from cgr.chains.export import page_record, render_page
    from cgr.data.limits import make_question

    queue = BatchingQueue(predictor.predict_questions, max_waiting, max_batch)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await queue.start()
        yield
        await queue.stop()

    app = FastAPI(title="cgr", lifespan=lifespan)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if allowed_hosts is not None:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError) -> JSONResponse:
        """The field and the reason, never the input: a 50 MB field is not sent back, and a
        NaN in it cannot break the reply's JSON."""
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]  # fmt: skip
        return JSONResponse(status_code=422, content={"detail": errors})

    page = render_page([], "cgr: ask a question", mode="serve")

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return page

    @app.get("/api/health")
    async def health() -> dict:
        return {"status": "ok", "answered": queue.answered, "waiting": queue._queue.qsize()}

    @app.post("/api/predict")
    async def predict(ask: Ask, request: Request) -> dict:
        try:
            question = make_question(ask.question, ask.choices, ask.labels)
        except ConfigError as e:
            raise HTTPException(status_code=422, detail=str(e)) from e
        try:
            prediction = await unless_client_left(queue.submit(question), request)
        except QueueFull as e:
            raise HTTPException(
                status_code=503,
                detail=f"busy: {max_waiting} questions are waiting; retry shortly",
                headers={"Retry-After": "1"},
            ) from e
        except CGRError as e:
            raise HTTPException(status_code=422, detail=str(e)) from e
        except ClientLeft:
            return JSONResponse(status_code=499, content={"detail": "the client disconnected"})
        record = prediction.to_dict()
        return {**record, "report": page_record(record)}

    return app


def main(argv: list[str]) -> int:
    parser = checkpoint_parser("cgr serve", "A web page and a JSON endpoint over a checkpoint.")
    parser.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    parser.add_argument("--port", type=int, default=8000, help="the port (default: %(default)s)")
    parser.add_argument("--max-waiting", type=int, default=64, help="queued requests before 503")
    parser.add_argument("--max-batch", type=int, default=8, help="questions scored together")
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                        help="larger request bodies get 413 before they are parsed")  # fmt: skip
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="also answer requests whose Host header names NAME (default: only "
                             "the bound address's names; '*' answers any); repeatable")  # fmt: skip
    parser.add_argument("--max-connections", type=int, default=None,
                        help="open connections kept (default: half the descriptor limit, at "
                             "most 512); idle ones beyond it, or idle 30 s, are closed")  # fmt: skip
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, not {args.port}")
    for flag, value in (("--max-waiting", args.max_waiting), ("--max-batch", args.max_batch),
                        ("--max-body-bytes", args.max_body_bytes)):  # fmt: skip
        at_least(flag, value, 1)  # before the model loads
    max_connections = args.max_connections or default_max_connections()
    at_least("--max-connections", max_connections, 1)
    import uvicorn

    from cgr.serving.connections import BoundedServer, rate_limit_accept_errors

    sock = listening_socket(args.host, args.port)  # a port in use is refused before the model loads
    predictor = load_predictor(args)
    hosts = [*host_names(args.host), *args.allowed_host]
    app = create_app(predictor, args.max_waiting, args.max_batch, args.max_body_bytes, hosts)
    host, port = sock.getsockname()[:2]
    print(f"serving {args.checkpoint or args.model} on http://{host}:{port}/", flush=True)
    rate_limit_accept_errors()
    config = uvicorn.Config(app, log_level="warning", limit_concurrency=max_connections,
                            timeout_keep_alive=5)  # fmt: skip
    BoundedServer(config, max_connections).run(sockets=[sock])
    return 0


def host_names(host: str) -> list[str]:
    """The Host header names a server bound to `host` answers by default: the address itself,
    and for loopback or a wildcard address the names this machine goes by."""
    import socket

    names = [host, f"[{host}]"] if ":" in host else [host]
    if host in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "::"):
        names += ["localhost", "127.0.0.1", "[::1]"]
    if host in ("0.0.0.0", "::"):
        names += [socket.gethostname(), socket.getfqdn()]
    return list(dict.fromkeys(names))


def default_max_connections() -> int:
    """Half the soft descriptor limit (the rest: model files, the log, the listening socket),
    at most 512."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 512
    return max(8, min(512, soft // 2))


def listening_socket(host: str, port: int):
    """The server's socket, bound now: "serving ..." is printed only once it is listening."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # clients that come before uvicorn runs wait in the backlog
    except OSError as e:
        sock.close()
        raise ConfigError(
            f"--host {host} --port {port}: cannot listen there ({e.strerror})"
        ) from None
    return sock
