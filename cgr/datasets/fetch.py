"""Downloads that lose nothing: streamed to `NAME.part` in the download cache, resumed with an
HTTP Range request after a dropped connection (a second `cgr data get` resumes too), retried
with exponential backoff (tenacity) on connection errors and 5xx / 429, and renamed into place
only when complete. A 404, or a host that stays unreachable, is one line naming the URL.

pooch would fit the registry part, but its downloader restarts a dropped transfer from byte
0 (no Range), which on a 680 MB archive over a flaky link is the failure that matters; httpx
(streaming, timeouts) with tenacity (backoff) is what this needs and nothing more."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cgr.datasets.release import DataGetError

CACHE_ENV = "CGR_DOWNLOADS"
ATTEMPTS = int(os.environ.get("CGR_DOWNLOAD_ATTEMPTS", "5"))


def download_cache() -> Path:
    """Where downloads live (kept, so a second `get` or a resume reads them): CGR_DOWNLOADS,
    else the user cache (XDG_CACHE_HOME or ~/.cache)/cgr/downloads."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cgr" / "downloads"


def cached_name(url: str, name: str) -> str:
    return f"{hashlib.sha256(url.encode()).hexdigest()[:12]}-{name}"


class _Retry(Exception):
    """A failure worth another try (dropped connection, 5xx, 429)."""


class TooLarge(Exception):
    """More bytes than the release can be: no retry."""


def download(url: str, name: str, quiet: bool = False, max_bytes: int | None = None) -> Path:
    """The file at `url` in the download cache, fetched (or finished) when not there yet; a
    server that announces or sends more than `max_bytes` (the registry's bound) is cut off in
    one line and its partial file removed."""
    import httpx
    from tenacity import (
        RetryError,
        retry,
        retry_if_exception_type,
        stop_after_attempt,
        wait_exponential,
    )

    folder = download_cache()
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / cached_name(url, name)
    if final.is_file():
        return final
    part = final.with_name(final.name + ".part")

    @retry(retry=retry_if_exception_type(_Retry), stop=stop_after_attempt(ATTEMPTS),
           wait=wait_exponential(multiplier=0.5, max=30), reraise=False)  # fmt: skip
    def attempt() -> None:
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        try:
            with httpx.stream("GET", url, headers=headers, follow_redirects=True,
                              timeout=httpx.Timeout(30.0, connect=15.0)) as response:  # fmt: skip
                if response.status_code == 416 and have:  # the .part is already whole
                    return
                if response.status_code in (429,) or response.status_code >= 500:
                    raise _Retry(f"HTTP {response.status_code}")
                if response.status_code >= 400:
                    raise DataGetError(f"{url}: HTTP {response.status_code} "
                                       f"{response.reason_phrase}")  # fmt: skip
                resumed = response.status_code == 206
                if have and not resumed:
                    have = 0  # the server ignored Range: start again
                total = _total(response, have)
                if max_bytes is not None and total is not None and total > max_bytes:
                    raise TooLarge(f"{url}: announces {total:,} bytes, more than the "
                                   f"{max_bytes:,} its release can be")  # fmt: skip
                with open(part, "ab" if resumed else "wb") as out, _bar(name, total, have,
                                                                      quiet) as bar:  # fmt: skip
                    for chunk in response.iter_bytes():  # as received: a drop keeps them
                        have += len(chunk)
                        if max_bytes is not None and have > max_bytes:
                            raise TooLarge(f"{url}: sent more than the {max_bytes:,} bytes its "
                                           "release can be")  # fmt: skip
                        out.write(chunk)
                        bar.update(len(chunk))
                if total is not None and part.stat().st_size < total:
                    raise _Retry("the connection closed early")
        except (httpx.TransportError, httpx.StreamError) as e:
            raise _Retry(f"{type(e).__name__}: {e}") from None

    try:
        attempt()
    except TooLarge as e:
        part.unlink(missing_ok=True)
        raise DataGetError(f"{e}; refused, nothing kept") from None
    except RetryError as e:
        cause = e.last_attempt.exception()
        raise DataGetError(f"{url}: {cause} (after {ATTEMPTS} tries; run the command again to "
                           "resume, or use --from with a copy of the release)") from None  # fmt: skip
    os.replace(part, final)
    return final


def _total(response, have: int) -> int | None:
    length = response.headers.get("content-length")
    return have + int(length) if length and length.isdigit() else None


def _bar(name: str, total: int | None, have: int, quiet: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=have, unit="B", unit_scale=True, unit_divisor=1024,
                desc=name, leave=False, disable=quiet or None)  # fmt: skip
