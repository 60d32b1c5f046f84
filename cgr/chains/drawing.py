"""Reasoning chains drawn: the chains of one choice merged into one graph (identical paths counted,
shared facts drawn once), laid out in columns by hop. The layout is computed here, once; the
chains page's script and `to_svg` (`cgr explain --svg`) only place its boxes and lines, so the
page, `cgr explain` and `cgr serve` draw the same picture."""

from __future__ import annotations

import html
import re
import textwrap

from cgr.chains.graph import SIMILAR

# geometry shared with the page's script (passed to it as JSON)
BOX = {"width": 230, "height": 50, "col_gap": 80, "row_gap": 16, "margin": 10, "title": 24}
LINE_CHARS = 36  # a text in its box: two lines of at most this many characters, all on hover
TOP_PATHS = 5  # paths drawn before "show all N chains"
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def surface_word(concept: str, texts: list[str]) -> str:
    """The concept as written in the facts it links ("measur" -> "measure"): the shortest word
    of the texts that starts with the concept key (or that the key starts with); else the key."""
    if SIMILAR in concept:  # a node reached by a similar concept: both as written
        return SIMILAR.join(surface_word(part, texts) for part in concept.split(SIMILAR))
    key = concept.lower().replace("_", " ").split("-")[0]
    if not key.strip():  # a link without a concept (beam paths link by vectors)
        return ""
    found = [
        w
        for text in texts
        for w in _WORD.findall(text)
        if len(w) >= 3 and (w.lower().startswith(key) or key.startswith(w.lower()))
    ]
    return min(found, key=len) if found else concept


def chain_words(links: list[str], texts: list[str], answer: str) -> list[str]:
    """Each linking concept as written: link i joins fact i-1 and fact i (the first: the
    question side and fact 0; the last: the last fact and the answer)."""
    words = []
    for i, concept in enumerate(links):
        around = texts[max(0, i - 1) : i + 1] + ([answer] if i == len(links) - 1 else [])
        words.append(surface_word(concept, around))
    return words


def merge_paths(chains: list[dict], texts: dict[int, str], answer: str) -> list[dict]:
    """Chains with the same facts in the same order as one path with a count, most frequent first
    (then first found). `chains`: {"facts": [numbers], "links": [concept keys]}."""
    merged: dict[tuple[int, ...], dict] = {}
    for chain in chains:
        facts = tuple(chain["facts"])
        if facts in merged:
            merged[facts]["count"] += 1
            continue
        links = chain["links"]
        words = chain_words(links, [texts[n] for n in facts], answer)
        merged[facts] = {"facts": list(facts), "links": list(links), "words": words, "count": 1}
    return sorted(merged.values(), key=lambda p: -p["count"])


def layout(paths: list[dict], texts: dict[int, str], ends: dict[str, str]) -> dict:
    """Question in column 0, each fact in the column of its earliest hop, the answer last; edges
    between consecutive nodes of each path, an edge on several paths drawn once with their
    count. Compact, as the page embeds one per choice: a node is [id, col, row, cut1, cut2]
    (id "q", "a" or a fact number; its box shows text[:cut1] and text[cut1:cut2], `cuts`), an
    edge [from, to, "word/word", count]. `ends`: the question's and the answer's text."""
    depth: dict[int, int] = {}
    for path in paths:
        for hop, n in enumerate(path["facts"], start=1):
            depth[n] = min(depth.get(n, hop), hop)
    last = max(depth.values(), default=0) + 1
    nodes = [["q", 0, 0, *cuts(ends["q"])]]
    rows = [1] + [0] * last
    index = {"q": 0}
    for path in paths:
        for n in path["facts"]:
            if n not in index:
                col = depth[n]
                index[n] = len(nodes)
                nodes.append([n, col, rows[col], *cuts(texts[n])])
                rows[col] += 1
    index["a"] = len(nodes)
    nodes.append(["a", last, 0, *cuts(ends["a"])])
    edges: dict[tuple[int, int], list] = {}
    for path in paths:
        stops = [0, *(index[n] for n in path["facts"]), index["a"]]
        for i, (a, b) in enumerate(zip(stops, stops[1:], strict=False)):
            edge = edges.setdefault((a, b), [a, b, [], 0])
            edge[3] += path["count"]
            if path["words"][i] not in edge[2]:
                edge[2].append(path["words"][i])
    edge_list = [[a, b, "/".join(words), count] for a, b, words, count in edges.values()]
    return {"nodes": nodes, "edges": edge_list, "cols": last + 1, "rows": max(rows)}


def cuts(text: str) -> tuple[int, int]:
    """Where a box's two lines end: whole words up to LINE_CHARS each."""
    first = len(textwrap.wrap(text, LINE_CHARS)[0]) if text.strip() else 0
    rest = text[first:].lstrip()
    start = len(text) - len(rest)
    second = textwrap.wrap(rest, LINE_CHARS)
    return start, start + (len(second[0]) if second else 0)


def box_lines(text: str, cut1: int, cut2: int) -> list[str]:
    lines = [
        text[:cut1].strip(),
        text[cut1:cut2].strip() + ("…" if cut2 < len(text.rstrip()) else ""),
    ]
    return [line for line in lines if line]


def graph_size(graph: dict) -> tuple[int, int]:
    b = BOX
    width = 2 * b["margin"] + graph["cols"] * b["width"] + (graph["cols"] - 1) * b["col_gap"]
    height = 2 * b["margin"] + graph["rows"] * (b["height"] + b["row_gap"])
    return width, height


def _xy(node: list) -> tuple[int, int]:
    b = BOX
    return (
        b["margin"] + node[1] * (b["width"] + b["col_gap"]),
        b["margin"] + node[2] * (b["height"] + b["row_gap"]),
    )


def svg_graph(graph: dict, record: dict, choice: dict, top: int = 0) -> list[str]:
    """SVG elements of one choice's graph, `top` pixels down (the same shapes the page draws)."""
    b, esc = BOX, html.escape
    facts = {f["n"]: f for f in record["facts"]}
    out = []
    for start, end, words, count in graph["edges"]:
        (x1, y1), (x2, y2) = _xy(graph["nodes"][start]), _xy(graph["nodes"][end])
        y1, y2 = y1 + top + b["height"] / 2, y2 + top + b["height"] / 2
        label = words + (f" ×{count}" if count > 1 else "")
        out.append(f'<line x1="{x1 + b["width"]}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555" '
                   'marker-end="url(#arrow)"/>')  # fmt: skip
        out.append(f'<text x="{(x1 + b["width"] + x2) / 2}" y="{(y1 + y2) / 2 - 4}" '
                   f'text-anchor="middle" fill="#333">{esc(label)}</text>')  # fmt: skip
    for node in graph["nodes"]:
        x, y = _xy(node)
        y += top
        if node[0] == "q":
            fill, note, full = "#e0ecff", "question", record["question"]
        elif node[0] == "a":
            fill, note, full = "#e6f6ea", "answer", f"({choice['label']}) {choice['text']}"
        else:
            fact = facts[node[0]]
            source = "open book" if fact.get("source") == "open_book" else fact.get("source")
            step = "?" if fact.get("step") is None else fact["step"]
            fill, note, full = "#fff7e0", f"[{fact['n']}] {source} · step {step}", fact["text"]
        lines, title = box_lines(full, node[3], node[4]), esc(full)
        out.append(f'<g><title>{title}</title><rect x="{x}" y="{y}" width="{b["width"]}" '
                   f'height="{b["height"]}" rx="6" fill="{fill}" stroke="#888"/>')  # fmt: skip
        out.append(f'<text x="{x + 6}" y="{y + 12}" fill="#777" font-size="9">{esc(note)}</text>')
        for i, line in enumerate(lines):
            out.append(f'<text x="{x + 6}" y="{y + 26 + 12 * i}">{esc(line)}</text>')
        out.append("</g>")
    return out


def to_svg(record: dict) -> str:
    """One question as a standalone SVG: its text, then each choice's merged graph, the
    predicted choice first (`record`: a chains-page record, `page_record`)."""
    b, esc = BOX, html.escape
    parts, top, width = [], b["title"] + 6, 400
    parts.append(f'<text x="{b["margin"]}" y="18" font-size="14" font-weight="bold">'
                 f'{esc(record["id"] + ": " + record["question"])}</text>')  # fmt: skip
    for choice in record["choices"]:
        graph = choice["graph"]
        mark = " (predicted)" if choice["label"] == record["predicted"] else ""
        score = f"score {choice['score']:.3f}, {choice['chains']} chain(s)"
        parts.append(f'<text x="{b["margin"]}" y="{top + 14}" font-weight="bold">'
                     f'({esc(choice["label"])}) {esc(choice["text"])}{mark}: {score}</text>')  # fmt: skip
        top += b["title"]
        if graph["edges"]:
            parts += svg_graph(graph, record, choice, top)
            w, h = graph_size(graph)
            width, top = max(width, w), top + h
        else:
            top += 6
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + 10}" '
        f'font-family="sans-serif" font-size="11"><defs><marker id="arrow" markerWidth="8" '
        'markerHeight="8" refX="7" refY="3" orient="auto"><path d="M0,0 L7,3 L0,6 z" fill="#555"/>'
        f'</marker></defs><rect width="100%" height="100%" fill="white"/>{"".join(parts)}</svg>\n'
    )
