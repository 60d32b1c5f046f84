"""BM25 from an existing Elasticsearch or OpenSearch index (`cgr ircot --retriever
elasticsearch --es_url URL --es_index NAME`): where a corpus outgrows one machine, and the
IRCoT authors' own setup.

The index layout is the authors' (StonyBrookNLP/ircot, retriever_server/build_index.py): one
document per paragraph with `title`, `paragraph_text` (both `text` fields, English analyzer)
and optionally `id`, `url`, `is_abstract`, `paragraph_index`. The query is theirs too: a
`bool` `should` with a `match` on `paragraph_text` (and on `title` with `es_title_too`), a
buffer of 100 hits, paragraphs whose lower-cased text repeats dropped, the best `k` kept.
Only the REST `_search` endpoint is used, which Elasticsearch 7/8 and OpenSearch share, so no
client library pins a server version. Requests go through httpx with tenacity retries on
connection errors, 429 and 5xx; an API key is read from the environment at call time and never
written anywhere."""

from __future__ import annotations

import os

from cgr.errors import CGRError
from cgr.retrieval.paragraphs import CorpusParagraph

BUFFER = 100  # hits asked for before repeats are dropped (the authors' max_buffer_count)


class ElasticsearchError(CGRError):
    """The index could not be queried: one line naming the URL."""


class ElasticsearchRetriever:
    def __init__(self, url: str, index: str, api_key_env: str = "ES_API_KEY",
                 title_too: bool = False, timeout: float = 30.0, max_retries: int = 3):  # fmt: skip
        import httpx

        if not url.startswith(("http://", "https://")):
            raise ElasticsearchError(f"--es_url must be an http(s) URL, not {url!r}")
        if not index or "/" in index:
            raise ElasticsearchError(f"--es_index must name one index, not {index!r}")
        self.url, self.index, self.title_too = url.rstrip("/"), index, title_too
        self.api_key_env, self.max_retries = api_key_env, max_retries
        self.client = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"ApiKey {key}"} if key else {}

    def body(self, query: str) -> dict:
        should = [{"match": {"paragraph_text": query}}]
        if self.title_too:
            should.append({"match": {"title": query}})
        return {"size": BUFFER, "_source": ["id", "title", "paragraph_text"],
                "query": {"bool": {"should": should}}}  # fmt: skip

    def check(self) -> int:
        """The index answers (before any model loads): its number of paragraphs."""
        answer = self._search(None)
        total = (answer.get("hits") or {}).get("total") if isinstance(answer, dict) else None
        return int(total.get("value", 0) if isinstance(total, dict) else total or 0)

    def _search(self, query: str | None) -> dict:
        import httpx
        from tenacity import (
            retry,
            retry_if_exception,
            stop_after_attempt,
            wait_exponential,
        )

        where = f"{self.url}/{self.index}/_search"

        def transient(e: BaseException) -> bool:
            if isinstance(e, httpx.TransportError):
                return True
            return isinstance(e, httpx.HTTPStatusError) and (
                e.response.status_code == 429 or e.response.status_code >= 500
            )

        @retry(retry=retry_if_exception(transient), stop=stop_after_attempt(self.max_retries),
               wait=wait_exponential(multiplier=0.5, max=8), reraise=True)  # fmt: skip
        def post() -> dict:
            body = (
                self.body(query) if query is not None else {"size": 0, "query": {"match_all": {}}}
            )
            response = self.client.post(where, json=body, headers=self._headers())
            response.raise_for_status()
            return response.json()

        try:
            return post()
        except httpx.HTTPStatusError as e:
            reason = _reason(e.response)
            raise ElasticsearchError(f"elasticsearch {where}: HTTP {e.response.status_code}"
                                     f"{': ' + reason if reason else ''}") from None  # fmt: skip
        except httpx.TransportError as e:
            raise ElasticsearchError(f"elasticsearch {where}: {type(e).__name__} "
                                     f"({e or 'no answer'})") from None  # fmt: skip
        except ValueError:
            raise ElasticsearchError(f"elasticsearch {where}: the answer is not JSON") from None

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        return [self._one(q, k) for q in queries]

    def _one(self, query: str, k: int) -> list[CorpusParagraph]:
        if not query.strip():
            return []
        answer = self._search(query)
        hits = (answer.get("hits") or {}).get("hits") if isinstance(answer, dict) else None
        if not isinstance(hits, list):
            raise ElasticsearchError(f"elasticsearch {self.url}/{self.index}/_search: no hits "
                                     "list in the answer")  # fmt: skip
        seen, out = set(), []
        for hit in sorted(hits, key=lambda h: -float(h.get("_score") or 0.0)):
            source = hit.get("_source") or {}
            text, title = source.get("paragraph_text"), source.get("title")
            if not isinstance(text, str) or not isinstance(title, str):
                raise ElasticsearchError(f"elasticsearch index {self.index}: a hit without a "
                                         "string title and paragraph_text (the index layout "
                                         "is in docs/ircot.md)")  # fmt: skip
            key = text.strip().lower()
            if key not in seen:  # the authors keep one of each text
                seen.add(key)
                out.append(CorpusParagraph(title, text))
        return out[:k]

    def close(self) -> None:
        self.client.close()


def _reason(response) -> str:
    """Elasticsearch's own error reason, short (`error.root_cause[0].reason` or `error.type`)."""
    try:
        error = response.json().get("error")
    except ValueError:
        return ""
    if isinstance(error, dict):
        causes = error.get("root_cause") or [{}]
        reason = (causes[0] or {}).get("reason") or error.get("reason") or error.get("type")
        return str(reason)[:200] if reason else ""
    return str(error)[:200] if error else ""
