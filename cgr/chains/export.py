"""Export of reasoning chains: JSONL for programs, one self-contained HTML file for people.

Each chain is also rendered as text, with the concept that links every step:
`Question -natural-> [3] -renew-> [2] -solar-> [1] -panel-> (C)`.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from cgr.files import atomic_write_text


def chain_text(chain: dict, numbers: dict[str, int], label: str) -> str:
    links = chain["links"]
    parts = [f"Question -{links[0]}->"]
    for i, fid in enumerate(chain["facts"]):
        parts.append(f"[{numbers[fid]}]")
        parts.append(f"-{links[i + 1]}->")
    parts.append(f"({label})")
    return " ".join(parts)


def export_record(prediction: dict) -> dict:
    """One question: its facts numbered once, and per choice the hypothesis, chains and score."""
    numbers: dict[str, int] = {}
    facts: list[dict] = []
    for choice in prediction["choices"]:
        for chain in choice.get("chains") or []:
            for fid, text in zip(chain["facts"], chain.get("texts", chain["facts"]), strict=True):
                if fid not in numbers:
                    numbers[fid] = len(numbers) + 1
                    facts.append({"n": numbers[fid], "id": fid, "text": text})
    choices = []
    for choice in prediction["choices"]:
        chains = choice.get("chains") or []
        choices.append(
            {
                "label": choice["label"],
                "text": choice["text"],
                "score": choice["score"],
                "hypothesis": choice["hypothesis"],
                "facts_read": [f["text"] for f in choice.get("facts") or []],
                "chains": [
                    {**c, "rendered": chain_text(c, numbers, choice["label"])} for c in chains
                ],
            }
        )
    return {
        "id": prediction["id"],
        "question": prediction["question"],
        "predicted": prediction["predicted"],
        "answer": prediction["answer"],
        "correct": prediction["correct"],
        "facts": facts,
        "choices": choices,
    }


def write_exports(predictions: list[dict], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    records = [export_record(p) for p in predictions]
    jsonl = out_dir / "chains.jsonl"
    atomic_write_text(jsonl, "".join(json.dumps(r) + "\n" for r in records))
    page = out_dir / "chains.html"
    atomic_write_text(page, render_html(records))
    return jsonl, page


_TEMPLATE = (Path(__file__).with_name("report.html")).read_text(encoding="utf-8")


def render_html(records: list[dict]) -> str:
    """One file, no network: the data is embedded as JSON and drawn by inline JS as SVG."""
    return render_page(records, f"cgr chains: {len(records)} questions")


def script_json(value) -> str:
    """JSON safe inside a <script> block: every "<", ">" and "&" as a \\u escape, so text such
    as "<!--<script>" or "</script>" in a question cannot end or swallow the data block."""
    text = json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(records: list[dict], title: str, mode: str = "report") -> str:
    """The chains page: `report` (a static file) or `serve` (with a question form, cgr serve)."""
    return (
        _TEMPLATE.replace("/*DATA*/[]", script_json(records))
        .replace('/*MODE*/"report"', script_json(mode))
        .replace("{{TITLE}}", html.escape(title))
    )
