"""The README's results table, from the saved results of the other benchmark scripts (the rows a
user compares with the papers). `benchmarks/report.py --write` puts it into README.md.

    .venv/bin/python benchmarks/summary.py --table
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cgr_ablations import mean_std, tag  # noqa: E402
from benchmarks.common import load_result, print_table  # noqa: E402

DOCS = "docs/benchmarks.md"
MULTIHOP = "docs/benchmarks-multihop.md"  # the open-QA modes' page
IRCOT_DATASETS = ("hotpotqa", "2wiki", "musique")


def budget(**changed) -> argparse.Namespace:
    """A cgr_ablations budget (it names the saved runs): all OBQA train questions, one epoch,
    max length 128, lr 1e-4, CGR's models clipped apart, the MiniLM reader, unless changed."""
    return argparse.Namespace(**{"train_questions": 0, "epochs": 1, "max_length": 128, "lr": "1e-4",
                                 "gradient_clipping": "each", "reader": "minilm", **changed})  # fmt: skip


OBQA_E1, OBQA_E2 = budget(), budget(epochs=2)
MPNET = budget(lr="5e-5", reader="mpnet")
ARC = budget(lr="5e-5", train_questions=3200)
ARC_E2 = budget(train_questions=3200, epochs=2)


def accuracies(
    of: argparse.Namespace, row: str, seeds=(1, 2, 3), dataset: str = "obqa"
) -> list[float]:
    """The saved seeds of one cgr_ablations row, as fractions."""
    found = [load_result(tag(dataset, row, s, of)) for s in seeds]
    return [r["accuracy"] for r in found if r]


def cell(accuracy: list[float], short: bool = False) -> str:
    """mean ± std in %, with the number of seeds ("(3)" when `short`)."""
    if not accuracy:
        return "not run"
    seeds = f"{len(accuracy)}" if short else f"{len(accuracy)} seed{'s' * (len(accuracy) > 1)}"
    return f"{mean_std(accuracy)} ({seeds})"


def difference(of: argparse.Namespace, a: str, b: str) -> str:
    """b − a in points over the seeds both rows have (these rows predate saved answers, so
    per seed, without a paired interval)."""
    pairs = [(x, y) for s in (1, 2, 3) if (x := accuracies(of, a, (s,))) and (y := accuracies(of, b, (s,)))]  # fmt: skip
    if not pairs:
        return "not run"
    per_seed = ", ".join(f"{100 * (y[0] - x[0]):+.1f}" for x, y in pairs)
    mean = 100 * statistics.mean(y[0] - x[0] for x, y in pairs)
    return f"{mean:+.1f} ({len(pairs)} seeds: {per_seed}; answers not saved, no paired interval)"


def chain_row() -> str:
    cells = []
    for dataset in ("obqa", "arc"):
        r = load_result(f"chain_quality-{dataset}-dev-default")
        if r is None:
            return "not run"
        cells.append(f"{100 * r['gold_on_best_chain']:.1f} %; {100 * r['gold_in_E']:.1f} vs "
                     f"{100 * r['gold_in_pool_top_E']:.1f} %")  # fmt: skip
    return " / ".join(cells)


def ircot_row(method: str) -> str:
    cells = []
    for dataset in IRCOT_DATASETS:
        r = load_result(f"ircot-{dataset}-{method}-100-llamacpp")
        cells.append(f"{r['recall']:.3f} / {r['f1']:.3f}" if r else "not run")
    return ", ".join(cells)


def multihop_row() -> str:
    cells = [load_result(f"multihop-{d}-chains-n100") for d in IRCOT_DATASETS]
    return " / ".join(f"{r['recall@4']:.3f}" if r else "not run" for r in cells)


def rows() -> list[list[str]]:
    minilm, paper_bb = "MiniLM-L6 22M", "AristoRoBERTa-large"
    riches = load_result("riches-hotpotqa-riches-100")
    oracle_mpnet = [r["accuracy"] for s in (1, 2, 3)
                    if (r := load_result(f"evidence-obqa-gold_mpnet-q0-e1-l128-s{s}"))]  # fmt: skip
    d3 = load_result("longdoc-d3-200")
    table = [
        ["OpenBookQA", "accuracy: no facts / iterative retrieval / CGR, 1 epoch",
         " / ".join(cell(accuracies(OBQA_E1, r)) for r in ("reader", "iterative", "cgr")),
         "82.4 (CGR, test)", f"{minilm} / {paper_bb}", f"[benchmarks]({DOCS}#openbookqa-minilm)"],
        ["OpenBookQA", "CGR − iterative retrieval, 1 epoch (reader trained and evaluated on the base query encoder's evidence: the chain losses cannot reach it)",
         difference(OBQA_E1, "iterative", "cgr"), "+1.6 (vs DPR, test)", "same",
         f"[benchmarks]({DOCS}#what-one-epoch-measures)"],
        ["OpenBookQA", "accuracy: iterative retrieval / Ê with a frozen retriever / CGR / CGR without L_D, 2 epochs "
         "(epoch 2 trained and evaluated on evidence CGR's trained query encoder retrieved)",
         " / ".join(cell(accuracies(OBQA_E2, r)) for r in ("iterative", "chains", "cgr", "no_chain_losses")),
         "DPR 80.8, CGR 82.4 (test); CGR 79.7, without L_D 78.2 (dev)", "same",
         f"[benchmarks]({DOCS}#what-one-epoch-measures)"],
        ["OpenBookQA", "accuracy, mpnet reader: no facts / iterative / CGR, 1 epoch; gold fact only",
         " / ".join(cell(accuracies(MPNET, r, (1, 2))) for r in ("reader", "iterative", "cgr"))
         + f"; {cell(oracle_mpnet)}",
         "82.4 (CGR, test)", f"mpnet-base 110M / {paper_bb}", f"[benchmarks]({DOCS}#a-stronger-reader-mpnet-at-full-budget)"],
        ["ARC-Challenge", "accuracy: iterative retrieval / CGR, 1 epoch",
         " / ".join(cell(accuracies(ARC, r, dataset="arc_challenge")) for r in ("iterative", "cgr")),
         "69.2 (CGR, test)", f"{minilm} / {paper_bb}", f"[benchmarks]({DOCS}#arc-challenge)"],
        ["ARC-Challenge", "accuracy: iterative retrieval / CGR, 2 epochs (CGR's epoch 2 on its "
         "trained encoder's evidence)",
         " / ".join(cell(accuracies(ARC_E2, r, (1,), "arc_challenge")) for r in ("iterative", "cgr")),
         "69.2 (CGR, test)", f"{minilm} / {paper_bb}", f"[benchmarks]({DOCS}#arc-challenge)"],
        ["OpenBookQA / ARC", "chains against human explanations (dev): gold fact on the chain "
         "shown first; gold in Ê vs in the pool's equally many most similar facts", chain_row(),
         "—", "embedded AMR parser / AMR-gs", f"[benchmarks]({DOCS}#chain-quality-against-human-explanations)"],
        ["HotpotQA / 2Wiki / MuSiQue", "IRCoT paragraph recall / answer F1 (n = 100)",
         ircot_row("ircot"), "—", "SmolLM2-135M / Flan-T5, GPT3", f"[benchmarks]({MULTIHOP}#ircot)"],
        ["HotpotQA / 2Wiki / MuSiQue", "chain-guided IRCoT recall / F1 (n = 100)",
         ircot_row("ircot_chains"), "—", "same", f"[benchmarks]({MULTIHOP}#ircot)"],
        ["HotpotQA / 2Wiki / MuSiQue", "paragraph recall at 4 paragraphs, chain-guided hops, no LM (n = 100)",
         multihop_row(), "—", "MiniLM + AMR concepts",
         f"[benchmarks]({MULTIHOP}#multi-hop-paragraph-retrieval-open-qa-no-lm)"],
        ["HotpotQA", "RICHES gold-paragraph hits (n = 100)",
         f"{riches['hits']:.3f}" if riches else "not run", "—", "SmolLM2-135M / PaLM2", "[RICHES](docs/riches.md)"],
        ["QASPER", "D3 evidence F1 (QASPER's scorer) / answer F1 (n = 200)",
         f"{100 * d3['evidence_f1_official']:.1f} / {100 * d3['answer_f1']:.1f}" if d3 else "not run",
         "49.9 / 47.5", "SmolLM2-135M / gpt-3.5-turbo", "[long documents](docs/longdoc.md)"],
    ]  # fmt: skip
    return table


def evidence_runs(setting: str, epochs: int) -> list[float]:
    found = [load_result(f"evidence-obqa-{setting}-q0-e{epochs}-l128-s{s}") for s in (1, 2, 3)]
    return [r["accuracy"] for r in found if r]


def status_rows() -> list[list[str]]:
    """OBQA dev by budget: the rows docs/status.md reads (MiniLM reader and retriever, all train
    questions, max length 128, lr 1e-4)."""
    table = []
    for epochs, of in ((1, OBQA_E1), (2, OBQA_E2)):
        table.append([f"{epochs} epoch{'s' * (epochs > 1)}",
                      *(cell(accuracies(of, r), short=True) for r in ("reader", "iterative", "chains", "cgr", "no_chain_losses")),
                      *(cell(evidence_runs(s, epochs), short=True) for s in ("dense_lr1e-4", "gold_lr1e-4"))])  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", action="store_true", help="print the table (the only mode)")
    parser.add_argument("--status", action="store_true", help="the OBQA rows by budget instead")
    args = parser.parse_args()
    if args.status:
        print("OpenBookQA dev accuracy (%), mean ± std (seeds); MiniLM reader and retriever, all "
              "4,957 train questions, max length 128, lr 1e-4")  # fmt: skip
        print_table(["budget", "no facts", "iterative retrieval + reader", "Ê, frozen retriever",
                     "CGR", "CGR w/o L_D", "dense, one step", "oracle: gold fact only"],
                    status_rows())  # fmt: skip
        return
    print_table(["dataset", "metric", "ours (dev unless said)", "paper", "backbone (ours / paper)",
                 "where"], rows())  # fmt: skip


if __name__ == "__main__":
    main()
