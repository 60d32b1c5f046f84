"""`cgr explain`: one question answered by a checkpoint, with each choice's chains as text and
the same question drawn in an HTML page."""

from __future__ import annotations

from pathlib import Path

from cgr.chains.drawing import to_svg
from cgr.chains.export import UNSUPPORTED, export_record, page_record, write_exports
from cgr.evaluation.prediction import Prediction
from cgr.files import atomic_write_text, require_writable_dir, require_writable_file
from cgr.serving import checkpoint_parser, load_predictor
from cgr.terminal import terminal_safe


def signed(value: float) -> str:
    """+0.31, -0.95, and 0.00 for a tie (no sign a rounding gave)."""
    return "0.00" if abs(value) < 0.005 else f"{value:+.2f}"


def support_note(chain: dict) -> str:
    """How a chain is shown: its support, its margin over the other choices' best chains, and
    its label (supports / points to (X) / links words) with the lead of its reading and the
    margin a supporting chain needs."""
    if "support" not in chain:
        return ""
    margin = f", margin {signed(chain['margin'])}" if "margin" in chain else ""
    if "label" not in chain:  # a predictions file written before chains had labels
        return f"  support {chain['support']:.2f}{margin}" + (
            "" if chain["supports"] else f" ({UNSUPPORTED})"
        )
    why = f"lead {signed(chain['lead'])}, margin needed {chain['threshold']:.2f}"
    return f"  support {chain['support']:.2f}{margin} ({chain['label']}: {why})"


def explanation(prediction: Prediction, max_chains: int = 3) -> list[str]:
    """The lines `cgr explain` prints: answer first, then every choice with its chains (facts
    numbered once per question, listed at the end)."""
    record = export_record(prediction.to_dict())
    best = prediction.answer_choice
    lines = [
        f"question: {prediction.question}",
        f"answer: ({best.label}) {best.text}  score {best.score:.3f}",
    ]
    by_id = {f["id"]: f for f in record["facts"]}
    shown = {fid for choice in record["choices"] for chain in choice["chains"][:max_chains]
             for fid in chain["facts"]}  # fmt: skip
    for choice in record["choices"]:
        mark = "*" if choice["label"] == prediction.answer else " "
        chains = choice["chains"]
        lines.append(
            f"{mark} ({choice['label']}) {choice['text']}  score {choice['score']:.3f}  "
            f"{len(chains)} chain(s), {len(choice['facts_read'])} fact(s) read"
        )
        lines.extend(
            f"      {chain['rendered']}{support_note(chain)}" for chain in chains[:max_chains]
        )
        if not chains and choice["facts_read"]:
            first = by_id[choice["facts_read"][0]]
            lines.append(f"      no chain; best fact read: [{first['n']}] {first['text']}")
            shown.add(first["id"])
    if why := record.get("contrast"):
        lines.append(f"why: {why['line']}")
        shown |= {f["id"] for f in record["facts"] if f["text"] in (why.get("facts") or [])}
    if listed := [f for f in record["facts"] if f["id"] in shown]:  # the facts named above
        lines.append("facts:")
        lines.extend(f"  [{f['n']}] {f['text']}" for f in listed)
    return lines


def main(argv: list[str]) -> int:
    parser = checkpoint_parser("cgr explain", "Answer one question and show the chains behind it.")
    parser.add_argument("--question", required=True, help="the question's text")
    parser.add_argument("--choices", nargs="+", required=True, help="two or more answer choices")
    parser.add_argument("--labels", nargs="+", default=None, help="default: A B C ...")
    parser.add_argument("--max-chains", type=int, default=3, help="chains printed per choice")
    parser.add_argument(
        "--out-dir",
        default="explain",
        help="chains.jsonl and chains.html go here (default: explain/)",
    )
    parser.add_argument(
        "--svg", default=None, help="also write the question's chains as a standalone SVG file"
    )
    args = parser.parse_args(argv)
    from cgr.data.limits import make_question

    question = make_question(args.question, args.choices, args.labels)  # before the model loads
    out_dir = require_writable_dir(args.out_dir, "--out-dir")
    if args.svg:
        require_writable_file(args.svg, "--svg")
    from cgr.data.hypothesis import HypothesesInChild

    # spaCy loads in a child while the models load here: 1.2 s on the other core
    hypotheses = HypothesesInChild([(question.stem, [c.text for c in question.choices])])
    model = load_predictor(args)
    model.pipeline.use_hypotheses(hypotheses)
    prediction = model.predict_questions([question])[0]
    # corpus lines and the question are data: escapes in them must not act on the terminal
    print("\n".join(terminal_safe(line) for line in explanation(prediction, args.max_chains)))
    _, page = write_exports([prediction.to_dict()], Path(out_dir))
    print(f"page: {page}")
    if args.svg:
        atomic_write_text(Path(args.svg), to_svg(page_record(prediction.to_dict())))
        print(f"svg: {args.svg}")
    return 0
