"""Generation from any OpenAI-compatible server: vLLM, SGLang, TGI, llama.cpp's server, or a
hosted API (`generator.backend: openai`). The official `openai` client does the HTTP: its
timeouts, and its retries with exponential backoff on 429, 5xx and dropped connections.

Greedy (temperature 0) as IRCoT is. `generator.api: completions` sends the raw prompt (base
models, IRCoT's few-shot prompts); `chat` sends it as one user message and the server applies
the model's chat template. A question's steps stay sequential in the loop; the prompts of one
`generate` call (one per question in flight) go `generator.concurrency` at a time.

Every answer is kept in a sqlite cache keyed by endpoint, model, api, prompt and settings: a
run killed half way and started again sends only the requests it had not had answered (a row
is written in one transaction, after its answer arrived). The API key is read from the
environment variable `generator.api_key_env` names, at call time; it is never logged, written
to a config, a run folder or the cache (the key is not part of the cache key either)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cgr.errors import ConfigError
from cgr.generation.generator import Generation, check_stop, cut

log = logging.getLogger(__name__)
# at most four stop strings (the OpenAI API's limit); `cut` ends the text as every backend does
STOP_STRINGS = {"sentence": [". ", ".\n", "? ", "! "], "answer": ["\n\n"], "none": []}


class ResponseCache:
    """(key -> text, new tokens) in sqlite; safe across the threads of one generator."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._db = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers "
                             "(key TEXT PRIMARY KEY, text TEXT, tokens INTEGER)")  # fmt: skip
            self._db.commit()

    def get(self, key: str) -> Generation | None:
        if self._db is None:
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT text, tokens FROM answers WHERE key = ?", (key,)
            ).fetchone()
        return Generation(row[0], row[1]) if row else None

    def put(self, key: str, value: Generation) -> None:
        if self._db is None:
            return
        with self._lock, self._db:  # one transaction: a row is whole or absent
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)",
                             (key, value.text, value.new_tokens))  # fmt: skip

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class OpenAIGenerator:
    """The Generator interface (`generate`, `count_tokens`, `max_input_tokens`) on a server."""

    def __init__(self, base_url: str, model: str, api: str = "completions",
                 api_key_env: str = "OPENAI_API_KEY", max_new_tokens: int = 48,
                 concurrency: int = 4, timeout: float = 120.0, max_retries: int = 3,
                 cache: str = ".cache/cgr/openai.sqlite", context_tokens: int = 8192,
                 tokenizer: str | None = None):  # fmt: skip
        if not base_url:
            raise ConfigError("generator.backend openai needs generator.base_url "
                              "(for example http://127.0.0.1:8000/v1)")  # fmt: skip
        if api not in ("completions", "chat"):
            raise ConfigError(f"generator.api must be completions or chat, not {api!r}")
        import openai

        for name in ("httpx", "httpx2", "openai"):  # a line per request otherwise
            logging.getLogger(name).setLevel(logging.WARNING)
        self.base_url, self.model, self.api = base_url.rstrip("/"), model, api
        self.api_key_env = api_key_env
        # a local server wants no key; the client insists on a string
        key = os.environ.get(api_key_env) or "EMPTY"
        self._http = _bounded_client(timeout)  # the client's, and /tokenize's
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout,
                                    max_retries=max_retries, http_client=self._http)  # fmt: skip
        self.max_new_tokens, self.concurrency = max_new_tokens, max(1, concurrency)
        self.max_input_tokens = max(64, context_tokens - max_new_tokens)
        self.cache = ResponseCache(cache)
        self._count = self._token_counter(tokenizer)

    def _key(self, prompt: str, stop: str, limit: int) -> str:
        settings = {"endpoint": self.base_url, "model": self.model, "api": self.api,
                    "stop": stop, "max_new_tokens": limit, "temperature": 0.0}  # fmt: skip
        payload = json.dumps(settings, sort_keys=True) + "\0" + prompt
        return hashlib.sha256(payload.encode()).hexdigest()

    def _ask(self, prompt: str, stop: str, limit: int) -> Generation:
        import openai

        key = self._key(prompt, stop, limit)
        if (hit := self.cache.get(key)) is not None:
            return hit
        stops = STOP_STRINGS[stop] or None
        try:
            if self.api == "chat":
                response = self.client.chat.completions.create(
                    model=self.model, messages=[{"role": "user", "content": prompt}],
                    max_tokens=limit, temperature=0.0, stop=stops)  # fmt: skip
                choice = response.choices[0]
                text = choice.message.content or ""
            else:
                response = self.client.completions.create(
                    model=self.model, prompt=prompt, max_tokens=limit, temperature=0.0,
                    stop=stops)  # fmt: skip
                choice = response.choices[0]
                text = choice.text or ""
        except openai.APIStatusError as e:
            raise ConfigError(f"generator {self.base_url} ({self.model}): HTTP {e.status_code}: "
                              f"{_short(e.message)}") from None  # fmt: skip
        except openai.APIConnectionError as e:
            why = e.__cause__ if isinstance(e.__cause__, AnswerTooLarge) else _short(str(e))
            raise ConfigError(f"generator {self.base_url}: no answer ({why}) after the "
                              "client's retries") from None  # fmt: skip
        except AnswerTooLarge as e:
            raise ConfigError(f"generator {self.base_url}: refused ({e})") from None
        except (openai.APIError, ValueError, AttributeError, IndexError, TypeError) as e:
            raise ConfigError(f"generator {self.base_url}: the answer is not a completion "
                              f"({type(e).__name__})") from None  # fmt: skip
        if stop == "sentence" and choice.finish_reason == "stop" and text.strip():
            text += "."  # the stop string's punctuation, which the server drops
        tokens = response.usage.completion_tokens if response.usage else 0
        result = Generation(cut(text, stop), tokens)
        self.cache.put(key, result)
        return result

    def generate(self, prompts: list[str], stop: str = "sentence", max_new_tokens: int | None = None,
                 prefix: str | None = None) -> list[Generation]:  # fmt: skip
        """Greedy continuations in prompt order (`prefix` is for in-process caches: a server
        reuses shared prompt starts by itself)."""
        check_stop(stop)
        limit = max_new_tokens or self.max_new_tokens
        if self.concurrency == 1 or len(prompts) == 1:
            return [self._ask(p, stop, limit) for p in prompts]
        with ThreadPoolExecutor(min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(lambda p: self._ask(p, stop, limit), prompts))

    def _token_counter(self, tokenizer: str | None):
        """The server's tokenizer (its /tokenize endpoint: llama.cpp, vLLM, SGLang), else the
        model's tokenizer (hub name or folder: `generator.tokenizer`, else the model name);
        one INFO line says which."""
        import httpx

        root = self.base_url.removesuffix("/v1")
        try:
            answer = self._http.post(f"{root}/tokenize", json={"content": "a b", "prompt": "a b",
                                     "model": self.model}, timeout=10.0)  # fmt: skip
            if answer.status_code == 200 and isinstance(answer.json().get("tokens"), list):
                log.info("generator: prompt budget counted by the server's tokenizer (%s/tokenize)",
                         root)  # fmt: skip

                def server_count(text: str) -> int:
                    body = {"content": text, "prompt": text, "model": self.model}
                    return len(
                        self._http.post(f"{root}/tokenize", json=body, timeout=30.0).json()[
                            "tokens"
                        ]
                    )

                return server_count
        except (httpx.HTTPError, ValueError, AnswerTooLarge):
            pass
        from cgr.generation.generator import resolve_generator
        from cgr.weights import loaders

        name = tokenizer or self.model
        try:
            path, gguf = resolve_generator(name, None)  # a packaged name, a hub name or a folder
            tok = loaders.auto_tokenizer(path, "the generator's tokenizer", gguf)
        except Exception as e:  # noqa: BLE001 - one line, with the setting that fixes it
            raise ConfigError(f"generator {self.base_url}: the server counts no tokens (no "
                              f"/tokenize) and {name!r} gives no tokenizer ({_short(str(e))}); "
                              "set generator.tokenizer to the model's hub name or folder") from None  # fmt: skip
        log.info("generator: prompt budget counted by the tokenizer of %s (no /tokenize answered "
                 "at %s)", name, root)  # fmt: skip
        return lambda text: len(tok(text, add_special_tokens=False).input_ids)

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def close(self) -> None:
        self.cache.close()
        self.client.close()


MAX_ANSWER_BYTES = 16 << 20  # a completion is a few KB: a server sending more is cut off


class AnswerTooLarge(Exception):
    def __str__(self) -> str:
        return f"the answer passed {MAX_ANSWER_BYTES:,} bytes"


def _bounded_client(timeout: float):
    """The openai client's HTTP client: redirects not followed (a key is never sent on to
    another address), and an answer's body cut at MAX_ANSWER_BYTES."""
    import httpx

    class Capped(httpx.SyncByteStream):
        def __init__(self, stream):
            self.stream = stream

        def __iter__(self):
            seen = 0
            for chunk in self.stream:
                seen += len(chunk)
                if seen > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge()
                yield chunk

        def close(self) -> None:
            self.stream.close()

    class CappedTransport(httpx.HTTPTransport):
        def handle_request(self, request):
            response = super().handle_request(request)
            return httpx.Response(response.status_code, headers=response.headers,
                                  stream=Capped(response.stream),
                                  extensions=response.extensions)  # fmt: skip

    return httpx.Client(transport=CappedTransport(), follow_redirects=False,
                        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))  # fmt: skip


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
