"""Export of reasoning chains: JSONL for programs, one self-contained HTML file for people.

Each chain is also rendered as text, with the concept that links every step:
`Question -natural-> [3] -renew-> [2] -solar-> [1] -panel-> (C)`.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from cgr.chains.drawing import BOX, TOP_PATHS, chain_words, layout, merge_paths
from cgr.data.records import fact_id
from cgr.files import atomic_write_text


def chain_text(chain: dict, numbers: dict[str, int], label: str) -> str:
    """`chain["words"]` (the concepts as written) when present, else its concept keys."""
    links = chain.get("words") or chain["links"]
    parts = [f"Question -{links[0]}->"]
    for i, fid in enumerate(chain["facts"]):
        parts.append(f"[{numbers[fid]}]")
        parts.append(f"-{links[i + 1]}->")
    parts.append(f"({label})")
    return " ".join(parts)


def export_record(prediction: dict) -> dict:
    """One question: its facts numbered once (the chains' facts first, then the facts read),
    each by its content id, and per choice the hypothesis, chains, score and the ids of the
    facts it read, in reading order."""
    numbers: dict[str, int] = {}
    facts: list[dict] = []

    def number(fid: str, text: str) -> int:
        if fid not in numbers:
            numbers[fid] = len(numbers) + 1
            facts.append({"n": numbers[fid], "id": fid, "text": text})
        return numbers[fid]

    for choice in prediction["choices"]:
        for chain in choice.get("chains") or []:
            for fid, text in zip(chain["facts"], chain.get("texts", chain["facts"]), strict=True):
                number(fid, text)
    by_text: dict[str, str] = {}  # a fact read, by its text: the contrast names facts by text
    for choice in prediction["choices"]:
        for fact in choice.get("facts") or []:
            number(fact["fact_id"], fact["text"])
            by_text.setdefault(fact["text"], fact["fact_id"])
    choices = []
    for choice in prediction["choices"]:
        chains = choice.get("chains") or []
        choices.append(
            {
                "label": choice["label"],
                "text": choice["text"],
                "score": choice["score"],
                "hypothesis": choice["hypothesis"],
                "facts_read": [f["fact_id"] for f in choice.get("facts") or []],
                "chains": [_with_words(c, choice, numbers) for c in chains],
            }
        )
    record = {
        "id": prediction["id"],
        "question": prediction["question"],
        "predicted": prediction["predicted"],
        "answer": prediction["answer"],
        "correct": prediction["correct"],
        "facts": facts,
        "choices": choices,
    }
    if why := prediction.get("contrast"):
        known = lambda text: number(by_text.get(text) or fact_id(text), text)  # noqa: E731
        record["contrast"] = {**why, "line": contrast_line(why, known, numbers.__getitem__)}
    return record


UNSUPPORTED = "links words, does not support"


def contrast_line(why: dict, number, number_id=None) -> str:
    """The contrast (cgr.evaluation.support.contrast) as one line; `number(text)` numbers the
    facts the answer read first, for "no chain separates ...", and `number_id(fact id)` the
    facts of the chain that separates them."""
    if why["kind"] in ("answer", "runner_up") and number_id is not None and why.get("chain"):
        return separated(why, "chain " + " ".join(f"[{number_id(f)}]" for f in why["chain"]))
    if why["kind"] not in ("none", "both", "no_chains"):
        return why["text"]
    named = [f"[{number(text)}]" for text in why.get("facts") or []]
    return unseparated(why, f"facts {', '.join(named)}" if named else "the facts it read")


def separated(why: dict, chain: str) -> str:
    """The line of a contrast a chain decides: its reading favours the answer over the
    runner-up ("answer") or the runner-up over the answer ("runner_up"); `chain`: its name."""
    a, b, shown = why["answer"], why["runner_up"], why["shown_for"]
    p = f"p {why['answer_p']:.2f} against {why['runner_up_p']:.2f}"
    if why["kind"] == "answer":
        return f"({a}) over ({b}): {chain}, shown for ({shown}), favours ({a}) over ({b}) ({p})"
    return (f"({a}) over ({b}) although {chain}, shown for ({shown}), favours ({b}) ({p}); the "
            f"reader's choice rests on the facts ({a}) read")  # fmt: skip


def unseparated(why: dict, rests: str) -> str:
    """The line of a contrast no chain decides ("none"; "no_chains": neither choice has a
    chain; "both": saved by an older cgr, both had supporting chains); `rests`: what the
    reader's choice rests on instead."""
    a, b = why["answer"], why["runner_up"]
    if why["kind"] == "no_chains":
        return f"no chain was found for ({a}) or ({b}); the reader's choice rests on {rests}"
    both = ""
    if why["kind"] == "both":
        both = (f": both have supporting chains (support {why['answer_support']:.2f} against "
                f"{why['runner_up_support']:.2f})")  # fmt: skip
    return f"no chain separates ({a}) from ({b}){both}; the reader's choice rests on {rests}"


def page_record(prediction: dict) -> dict:
    """One question as the chains page draws it, compact (the 57-question quickstart page stays
    under 150 KB): facts numbered once (chain facts first, as in `export_record`) with their
    source and retrieval step; per choice, predicted first, how many facts it read (the best one
    numbered), its chains merged into paths, and the laid-out graph of the first TOP_PATHS
    paths (and of all, when there are more)."""
    numbers: dict[str, int] = {}
    facts: list[dict] = []
    found = {f.get("fact_id"): f for c in prediction["choices"] for f in c.get("facts") or []}

    def number(fid: str, text: str) -> int:
        if fid not in numbers:
            meta = found.get(fid, {})
            numbers[fid] = len(facts) + 1
            facts.append({"n": numbers[fid], "text": text, "source": meta.get("source", "corpus"),
                          "step": meta.get("step")})  # fmt: skip
        return numbers[fid]

    for choice in prediction["choices"]:
        for chain in choice.get("chains") or []:
            for fid, text in zip(chain["facts"], chain.get("texts", chain["facts"]), strict=True):
                number(fid, text)
    choices = []
    for choice in sorted(
        prediction["choices"], key=lambda c: c["label"] != prediction["predicted"]
    ):
        read = choice.get("facts") or []
        texts = {f["n"]: f["text"] for f in facts}
        chains = [{"facts": [numbers[f] for f in c["facts"]], "links": c["links"],
                   **{k: c[k] for k in ("support", "label") if k in c}}
                  for c in choice.get("chains") or []]  # fmt: skip
        paths = merge_paths(chains, texts, choice["text"])
        ends = {"q": prediction["question"], "a": f"({choice['label']}) {choice['text']}"}
        graphs = [layout(paths[:TOP_PATHS], texts, ends)]
        graphs.append(layout(paths, texts, ends) if len(paths) > TOP_PATHS else None)
        choices.append({
            "label": choice["label"], "text": choice["text"], "score": round(choice["score"], 4),
            "hypothesis": choice["hypothesis"], "read": len(read), "chains": len(chains),
            # the best fact read, for a choice without chains (the rest: chains.jsonl)
            "first_read": number(read[0].get("fact_id") or read[0]["text"], read[0]["text"]) if read else None,
            "paths": len(paths), "shortest": min((len(p["facts"]) for p in paths), default=0),
            **_support_summary(choice.get("chains") or []),
            "graph": graphs[0], "graph_all": graphs[1],
        })  # fmt: skip
    keep = ("id", "question", "predicted", "answer", "correct")
    record = {**{k: prediction[k] for k in keep}, "facts": facts, "choices": choices}
    if why := prediction.get("contrast"):
        by_text = {f["text"]: fid for fid, f in found.items()}
        record["contrast"] = contrast_line(why, lambda t: number(by_text.get(t, t), t),
                                           lambda fid: numbers[fid])  # fmt: skip
    return record


def _support_summary(chains: list[dict]) -> dict:
    """A choice's chains as the page states them: how many were scored, how many support it,
    the best support and its margin over the other choices' best (none when no chain was
    scored; no margin in a predictions file written before it was)."""
    scored = [c["support"] for c in chains if "support" in c]
    if not scored:
        return {}
    margin = [c["margin"] for c in chains if "margin" in c]
    pointing = sorted({c["favours"] for c in chains if c.get("label", "").startswith("points to")})
    return {"scored": len(scored), "supporting": sum(bool(c.get("supports")) for c in chains),
            "best_support": round(max(scored), 3), "points_to": pointing,
            **({"best_margin": round(max(margin), 3)} if margin else {})}  # fmt: skip


def _with_words(chain: dict, choice: dict, numbers: dict[str, int]) -> dict:
    texts = list(chain.get("texts") or chain["facts"])
    words = chain_words(list(chain["links"]), texts, choice["text"])
    chain = {**chain, "words": words}
    return {**chain, "rendered": chain_text(chain, numbers, choice["label"])}


def write_exports(predictions: list[dict], out_dir: Path) -> tuple[Path, Path]:
    """chains.jsonl (every chain, for programs) and chains.html (the page, for people)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / "chains.jsonl"
    atomic_write_text(jsonl, "".join(json.dumps(export_record(p)) + "\n" for p in predictions))
    page = out_dir / "chains.html"
    atomic_write_text(page, render_html([page_record(p) for p in predictions]))
    return jsonl, page


_TEMPLATE = (Path(__file__).with_name("report.html")).read_text(encoding="utf-8")


def render_html(records: list[dict]) -> str:
    """One file, no network: the data is embedded as JSON and drawn by inline JS as SVG."""
    return render_page(records, f"cgr chains: {len(records)} questions")


def script_json(value) -> str:
    """JSON safe inside a <script> block: every "<", ">" and "&" as a \\u escape, so text such
    as "<!--<script>" or "</script>" in a question cannot end or swallow the data block."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(records: list[dict], title: str, mode: str = "report") -> str:
    """The chains page: `report` (a static file) or `serve` (with a question form, cgr serve)."""
    return (
        _TEMPLATE.replace("/*DATA*/[]", script_json(records))
        .replace('/*MODE*/"report"', script_json(mode))
        .replace("/*BOX*/{}", script_json(BOX))
        .replace("{{TITLE}}", html.escape(title))
    )
