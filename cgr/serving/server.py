"""`cgr serve`: a web page (question and choices in, answer and chains drawn out) and a JSON
endpoint over a checkpoint, on 127.0.0.1 by default.

Under load it keeps answering: requests wait in a bounded queue and one worker thread answers
them in batches (the reader scores a batch of questions about as fast as one on a CPU); only a
full queue turns a request away, with 503 and Retry-After. A malformed request gets 422."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

from pydantic import BaseModel, Field

from cgr.data.records import Question
from cgr.errors import CGRError, ConfigError
from cgr.evaluation.prediction import Prediction
from cgr.serving import checkpoint_parser

log = logging.getLogger(__name__)


class Ask(BaseModel):
    """The JSON body of POST /api/predict."""

    question: str = Field(min_length=1, max_length=2000)
    choices: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        min_length=2, max_length=26
    )
    labels: list[str] | None = None


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


def create_app(predictor, max_waiting: int = 64, max_batch: int = 8):
    """The FastAPI app: GET / (the page), POST /api/predict (JSON), GET /api/health."""
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import HTMLResponse

    from cgr.api import make_question
    from cgr.chains.export import export_record, render_page

    queue = BatchingQueue(predictor.predict_questions, max_waiting, max_batch)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await queue.start()
        yield
        await queue.stop()

    app = FastAPI(title="cgr", lifespan=lifespan)
    page = render_page([], "cgr: ask a question", mode="serve")

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return page

    @app.get("/api/health")
    async def health() -> dict:
        return {"status": "ok", "answered": queue.answered, "waiting": queue._queue.qsize()}

    @app.post("/api/predict")
    async def predict(ask: Ask) -> dict:
        try:
            question = make_question(ask.question, ask.choices, ask.labels)
        except ConfigError as e:
            raise HTTPException(status_code=422, detail=str(e)) from e
        try:
            prediction = await queue.submit(question)
        except QueueFull as e:
            raise HTTPException(
                status_code=503,
                detail=f"busy: {max_waiting} questions are waiting; retry shortly",
                headers={"Retry-After": "1"},
            ) from e
        except CGRError as e:
            raise HTTPException(status_code=422, detail=str(e)) from e
        record = prediction.to_dict()
        return {**record, "report": export_record(record)}

    return app


def main(argv: list[str]) -> int:
    parser = checkpoint_parser("cgr serve", "A web page and a JSON endpoint over a checkpoint.")
    parser.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-waiting", type=int, default=64, help="queued requests before 503")
    parser.add_argument("--max-batch", type=int, default=8, help="questions scored together")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, not {args.port}")
    import uvicorn

    from cgr.api import Predictor

    predictor = Predictor.from_checkpoint(args.checkpoint)
    app = create_app(predictor, args.max_waiting, args.max_batch)
    print(f"serving {args.checkpoint} on http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
