"""One persistent parse cache (sqlite), keyed by backend and sentence, used by every step.

sqlite in WAL mode lets several processes (DDP ranks, a benchmark beside training) read while
one writes; each batch is committed as it is parsed, so a killed parse resumes where it stopped.
A sentence that failed to parse is stored as NULL so it is not retried on every run.
Opening is serialised by a lock file: sqlite answers "database is locked" at once, without
waiting for its busy timeout, when two processes switch a fresh database to WAL together.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock
from tqdm.auto import tqdm

log = logging.getLogger(__name__)


class ParseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{self.path}.lock", timeout=60):
            try:
                self._open()
            except sqlite3.DatabaseError as e:  # not a database (a crash, a stray file)
                self.db.close()
                n = 1
                while (aside := self.path.with_name(f"{self.path.name}.damaged-{n}")).exists():
                    n += 1
                self.path.rename(aside)
                for suffix in ("-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                log.warning("AMR parse cache %s unreadable (%s): set aside as %s, parsing anew",
                            self.path, e, aside.name)  # fmt: skip
                self._open()

    def _open(self) -> None:
        self.db = sqlite3.connect(self.path, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS parses (backend TEXT, sentence TEXT, graph TEXT, PRIMARY KEY (backend, sentence))"
        )
        self.db.commit()

    def get_many(self, backend: str, sentences: list[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        unique = list(dict.fromkeys(sentences))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT sentence, graph FROM parses WHERE backend = ? AND sentence IN ({marks})",
                [backend, *chunk],
            )
            found.update(rows.fetchall())
        return found

    def put_many(self, backend: str, parsed: dict[str, str | None]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO parses VALUES (?, ?, ?)",
            [(backend, s, g) for s, g in parsed.items()],
        )
        self.db.commit()

    def parse(
        self,
        backend: str,
        sentences: list[str],
        parse_batch: Callable[[list[str]], list[str | None]],
        batch_size: int = 256,
        progress: bool = True,
        desc: str | None = None,
        known: dict[str, str | None] | None = None,
    ) -> list[str | None]:
        """Graphs for `sentences` in order, parsing (and storing) only what the cache lacks.
        `known`: what the caller already read with `get_many` (not read again)."""
        known = self.get_many(backend, sentences) if known is None else dict(known)
        todo = [s for s in dict.fromkeys(sentences) if s not in known]
        bar = tqdm(
            total=len(todo),
            desc=desc or f"parsing AMR ({backend})",
            unit="item" if desc else "sent",
            disable=not progress or not todo,
        )
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            parsed = dict(zip(chunk, parse_batch(chunk), strict=True))
            self.put_many(backend, parsed)
            known.update(parsed)
            bar.update(len(chunk))
        bar.close()
        return [known[s] for s in sentences]

    def close(self) -> None:
        self.db.close()
