"""Resumable runs over a question list, shared by the modes that answer one question at a time
(IRCoT, RICHES, long documents): finished questions are appended as they finish, and the same
command started again skips them."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from cgr.files import open_no_follow

log = logging.getLogger(__name__)


def partial_results(out: Path, argv: list[str]) -> Path:
    """Where a run's finished questions go (OUT/.partial-KEY.jsonl, KEY a hash of the command
    line and of the content of every file it names: the data file, the config): the same
    command on the same inputs resumes them; another command, or an edited data or config
    file, starts anew."""
    h = hashlib.sha256(chr(0).join(argv).encode())
    for arg in argv:
        path = Path(arg.partition("=")[2] if arg.startswith("--") and "=" in arg else arg)
        try:
            if path.is_file():
                h.update(path.read_bytes())
        except OSError:  # unreadable: the command itself says so
            continue
    return out / f".partial-{h.hexdigest()[:12]}.jsonl"


def run_in_chunks(
    runner, questions: list, partial: Path, chunk: int, desc: str = "ircot"
) -> list[dict]:
    """Runs `chunk` questions at a time with a progress bar (questions done, s/question, ETA).
    Each finished chunk is appended to `partial`, so a killed run started again with the same
    command skips the questions it has; `main` removes it once predictions.jsonl is written."""
    from tqdm.auto import tqdm

    partial.parent.mkdir(parents=True, exist_ok=True)  # --out may not exist yet
    done: dict[str, dict] = {}
    cut_short = False  # the file ends inside a line (a kill during a write)
    if partial.exists():
        text = partial.read_text(encoding="utf-8")
        cut_short = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # the line a kill cut short
                continue
            done[record["id"]] = record
        log.info(
            "resuming: %d of %d questions already answered (%s)", len(done), len(questions), partial
        )
    todo = [q for q in questions if q.id not in done]
    with tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q", desc=desc) as bar, \
            open_no_follow(partial, "a") as f:  # fmt: skip
        if cut_short:
            f.write("\n")  # start a fresh line after the one cut short
        for start in range(0, len(todo), chunk):
            for record in runner.run(todo[start : start + chunk]):
                done[record["id"]] = record
                f.write(json.dumps(record) + "\n")
            f.flush()
            bar.update(min(chunk, len(todo) - start))
    return [done[q.id] for q in questions]
